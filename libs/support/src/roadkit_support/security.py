"""Security headers on every answer of a roadkit app: the routing services, the admin API, the
client backend and its browser app, the development IAM."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

# The ASGI callables, spelled as Starlette spells them (this library does not need Starlette).
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "X-Permitted-Cross-Domain-Policies": "none",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
}


class SecurityHeaders:
    """Adds security headers to every response that lacks them (HSTS over HTTPS, optional no-store).

    A response that sets its own header (e.g. the OpenAPI viewer's Content-Security-Policy) keeps it.
    """

    def __init__(self, app: ASGIApp, headers: Mapping[str, str] | None = None, *, hsts: bool = False, no_store: bool = False) -> None:
        self.app = app
        extra = dict(DEFAULT_SECURITY_HEADERS if headers is None else headers)
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
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                message["headers"] = headers + [(name, value) for name, value in self.headers if name not in present]
            await send(message)

        await self.app(scope, receive, send_with_headers)
