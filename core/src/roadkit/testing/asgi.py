"""A request handed to an ASGI app as a server hands it: the path and query string as they are.

An HTTP client encodes a URL and refuses one past its length limit (httpx: 64 kB); a test of what a
hostile query does, or a benchmark of the app without an HTTP server, builds the request itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.types import ASGIApp, Message


def http_scope(
    path: str,
    query: str | bytes = b"",
    *,
    method: str = "GET",
    headers: Sequence[tuple[bytes, bytes]] = (),
    root_path: str = "",
    host: str = "testserver",
) -> dict[str, Any]:
    """The ASGI scope of an HTTP/1.1 request of ``path?query``; a query given as text is sent as its Latin-1 bytes.

    ``host`` is the ``Host`` header and the server's name; ``headers`` come after it.
    """
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode("latin-1") if isinstance(query, str) else query,
        "root_path": root_path,
        "headers": [(b"host", host.encode("latin-1")), *headers],
        "client": ("127.0.0.1", 50000),
        "server": (host, 80),
    }


async def asgi_messages(app: ASGIApp, scope: dict[str, Any], body: bytes = b"") -> list[Message]:
    """The messages ``app`` sends for one request of ``scope`` with ``body``: the start of the answer, then its body."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent
