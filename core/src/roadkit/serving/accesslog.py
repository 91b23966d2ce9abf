"""A service's access log: one JSON object per answered request, one line each (``[access_log]``).

Each line is written with one ``write`` on a descriptor opened for appending, so the lines of a
service's workers, all appending to the same file, never interleave.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from urllib.parse import unquote_plus

import orjson
from starlette.types import Scope

from roadkit.serving.access import client_address
from roadkit.web.forwarded import Network

#: Longest path or resource written (a longer one is cut and ends with "...").
MAX_FIELD = 256


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[:MAX_FIELD] + "..."


def resource_of(scope: Scope) -> str | None:
    """The resource a request names: the route's (``roadkit.resource`` in the scope) or its ``resource`` parameter."""
    found: object = scope.get("roadkit.resource")
    if isinstance(found, str):
        return found
    query: bytes = scope.get("query_string") or b""
    if b"resource=" not in query:
        return None
    for part in query.split(b"&"):
        if part.startswith(b"resource="):
            return unquote_plus(part[9:].decode("latin-1"))
    return None


class AccessLog:
    """Appends a JSON line per request to a file, or to stderr when ``path`` is None."""

    def __init__(self, path: Path | None, proxies: tuple[Network, ...] = ()) -> None:
        self.path = path
        self.proxies = proxies
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640) if path is not None else 2
        self._second = -1
        self._stamp = ""

    def _time(self) -> str:
        """Now, in UTC to the millisecond (the date and time part made once a second)."""
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._stamp}.{int((now - second) * 1000):03d}Z"

    def write(self, scope: Scope, request_id: str, status: int, sent: int, started: float) -> None:
        """The line of one answered request (``started``: its ``time.perf_counter()`` on arrival)."""
        duration = time.perf_counter() - started
        resource = resource_of(scope)
        entry = {
            "time": self._time(),
            "id": request_id,
            "method": scope.get("method", ""),
            "path": _bounded(scope.get("path", "")),
            "status": status,
            "resource": _bounded(resource) if resource is not None else None,
            "duration": round(duration, 6),
            "bytes": sent,
            "client": _bounded(client) if (client := client_address(scope, self.proxies)) is not None else None,
        }
        with contextlib.suppress(OSError):  # a full disk must not fail the request that was answered
            os.write(self._fd, orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE))

    def close(self) -> None:
        """Close the file (not stderr)."""
        if self.path is not None and self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
