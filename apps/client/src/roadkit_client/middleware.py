"""ASGI middleware of the backend and the static app: security headers and a body size limit."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from roadkit.web.security import SecurityHeaders

__all__ = ["API_SECURITY_HEADERS", "BodyLimit", "SecurityHeaders"]

API_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Cross-Origin-Resource-Policy": "same-site",
}


class BodyLimit:
    """Refuse requests whose Content-Length exceeds ``max_bytes`` with 413 before reading them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {"error": {"errorType": "payload_too_large", "message": f"request body larger than {self.max_bytes} bytes"}}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = dict(scope.get("headers", []))
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._refuse(send)
            return
        # Streamed bodies without Content-Length are counted by the handlers (read_body).
        await self.app(scope, receive, send)


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of an absolute URL."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}" if rest else url
