"""The child process of :mod:`roadkit_osrm.engine_process`: one OSRM engine answering the native requests and
matrices (``TableQuery``) read on stdin."""

from __future__ import annotations

import os
import pickle
import sys
from typing import Any, BinaryIO

from roadkit.contract.sources import EngineError
from roadkit_osrm.engine_process import LENGTH


def _read(stream: BinaryIO) -> Any:
    head = stream.read(LENGTH.size)
    if len(head) < LENGTH.size:
        raise EOFError
    (size,) = LENGTH.unpack(head)
    return pickle.loads(stream.read(size))


def _write(stream: BinaryIO, ok: bool, value: Any) -> None:
    try:
        data = pickle.dumps((ok, value), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # an exception that does not pickle: its text still does
        data = pickle.dumps((False, EngineError(f"OSRM failed: {type(exc).__name__}: {exc}")))
    stream.write(LENGTH.pack(len(data)) + data)
    stream.flush()


def main() -> None:
    """The child: open the engine with the settings read first, then answer requests until stdin closes."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the engine prints goes to stderr, never into the answers
    requests = sys.stdin.buffer
    import osrm

    from roadkit_osrm.mapping import TableQuery, table
    from roadkit_osrm.native.engine import answer

    try:
        engine = osrm.OSRM(**_read(requests))
    except Exception as exc:
        _write(out, False, EngineError(f"cannot open the OSRM dataset: {exc}"))
        return
    _write(out, True, None)
    while True:
        try:
            request = _read(requests)
        except EOFError:
            return
        try:
            _write(out, True, table(engine, request) if isinstance(request, TableQuery) else answer(engine, request))
        except Exception as exc:
            _write(out, False, exc)


if __name__ == "__main__":
    main()
