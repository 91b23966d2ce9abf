"""The Starlette app factory of a service: its APIs, CORS and security headers, its lifespan."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Mapping
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


def _mount(prefix: str, routes: list[BaseRoute]) -> Mount:
    """An API's routes under its prefix, for any path below it: Starlette's ``.*`` stops at a decoded
    line break (``%0A``), and such a request would miss the API's own answers (its 404 shape, a parser's 400)."""
    mount = Mount(prefix, routes=routes)
    mount.path_regex = re.compile(mount.path_regex.pattern, re.DOTALL)
    return mount


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
        routes.append(_mount(api.prefix, api.routes(service)))
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
