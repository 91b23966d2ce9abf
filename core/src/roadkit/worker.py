"""A worker process of a managed service (``python -m roadkit.worker SPEC``), started by the administrator.

SPEC is a JSON object: ``service`` (id), ``configuration`` (the service file), ``cors``,
``channel`` (the descriptor of its end of the private channel), ``listeners`` (``{"host:port":
descriptor}``: sockets the administrator bound and listens on), ``parent`` (the administrator's
pid), ``worker`` (its index), ``access_log``, ``log_level``, ``log_file``, ``graceful_timeout``.

It dies with the administrator: ``PR_SET_PDEATHSIG`` (SIGKILL) when the administrator dies, even by
SIGKILL, and the end of the channel as a second signal (a graceful stop). It loads the service,
connects its sources, serves on the inherited sockets, says ``ready`` on the channel, answers the
administrator's requests, and on ``stop`` (or SIGTERM) drains its HTTP server, disconnects its
sources and exits 0. A start that fails says ``failed`` with the reason and exits 3.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
from collections.abc import Callable

#: Exit status of a worker whose service could not start (the reason went over the channel).
START_FAILED = 3
#: Exit status when the administrator was already gone at start.
ORPHAN = 4

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when the parent dies; exit now if it is already gone."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the channel's end still stops the worker
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(ORPHAN)


def main(argv: list[str] | None = None) -> int:
    """Entry point: the spec is the only argument."""
    import orjson

    args = sys.argv[1:] if argv is None else argv
    spec = orjson.loads(args[0])
    die_with_parent(int(spec["parent"]))
    import asyncio

    from roadkit.worker_main import Worker, configure_logging

    configure_logging(spec)
    return asyncio.run(Worker(spec).run(), loop_factory=event_loop_factory())


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop for a worker when installed (a dependency on Linux): less CPU per request
    in the HTTP server and the loop itself (bench/README.md); asyncio's own otherwise."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


if __name__ == "__main__":
    sys.exit(main())
