"""The Starlette app factory of a service: its APIs, CORS and security headers, its lifespan."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roadkit.api import http_exception_handler, server_error_handler
from roadkit.config.models import ServiceConfig
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.service import Service

log = logging.getLogger(__name__)

_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"x-permitted-cross-domain-policies", b"none"),
]


class SecurityHeaders:
    """Adds security headers to every response (a strict CSP unless the response set its own)."""

    def __init__(self, app: ASGIApp, *, hsts: bool = False) -> None:
        self.app = app
        self.extra = [(b"strict-transport-security", b"max-age=31536000")] if hsts else []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name for name, _ in headers}
                headers.extend(h for h in _SECURITY_HEADERS + self.extra if h[0] not in names)
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def service_routes(service: Service) -> list[BaseRoute]:
    """The routes of every API the service's configuration lists (plugins contribute APIs)."""
    available = service.plugins.apis()
    routes: list[BaseRoute] = []
    problems = []
    for ref in service.config.apis:
        api = available.get((ref.name, ref.version))
        if api is None:
            known = ", ".join(f"{n}/{v}" for n, v in sorted(available)) or "none"
            problems.append(f"{service.config.path}: apis: no installed plugin serves {ref.name}/{ref.version} (available: {known})")
            continue
        routes.append(Mount(api.prefix, routes=api.routes(service)))
    if problems:
        raise ConfigurationError(problems)
    return routes


def create_app(
    config: ServiceConfig | Service,
    plugins: Plugins | None = None,
    *,
    service_id: str = "main",
    manage_lifecycle: bool = True,
) -> Starlette:
    """A service's ASGI app. With ``manage_lifecycle`` its lifespan starts and stops the service.

    Embedding apps call ``create_app(load_service(path), Plugins.create())`` and mount the result.
    """
    service = config if isinstance(config, Service) else Service(config, plugins or Plugins.create(), id=service_id)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        if manage_lifecycle and service.state == "init":
            await service.start()
        try:
            yield {"service": service}
        finally:
            if manage_lifecycle:
                await service.stop()

    async def root(request: Request) -> Response:
        return PlainTextResponse(f"roadkit service {service.id}")

    middleware = []
    if service.config.cors:
        middleware.append(Middleware(CORSMiddleware, **service.config.cors))
    middleware.append(Middleware(SecurityHeaders, hsts=any(listener.https for listener in service.config.listeners)))
    app = Starlette(
        routes=[Route("/", root), *service_routes(service)],
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: http_exception_handler, Exception: server_error_handler},
    )
    app.state.service = service
    return app
