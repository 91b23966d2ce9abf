"""ASGI middleware of the backend and the static app: security headers and a body size limit."""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

API_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Cross-Origin-Resource-Policy": "same-site",
}


class SecurityHeaders:
    """Add fixed security headers (and HSTS over https) to every response that lacks them."""

    def __init__(self, app: ASGIApp, headers: Mapping[str, str], *, hsts: bool = False, no_store: bool = False) -> None:
        self.app = app
        extra = dict(headers)
        if hsts:
            extra["Strict-Transport-Security"] = "max-age=31536000"
        if no_store:
            extra["Cache-Control"] = "no-store"
        self.headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in extra.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (name, value) for name, value in self.headers if name not in present
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)


class BodyLimit:
    """Refuse requests whose Content-Length exceeds ``max_bytes`` with 413 before reading them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"error": {"errorType": "payload_too_large",
                                     "message": f"request body larger than {self.max_bytes} bytes"}}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
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


