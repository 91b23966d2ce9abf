"""The Starlette app factory of a service: its APIs, CORS and security headers, its lifespan."""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roadkit.config.models import Probes, ServiceConfig
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.requestid import REQUEST_ID, request_id, tag_messages
from roadkit.routing.source import SourceState
from roadkit.serving.access import AccessControl, Checks
from roadkit.serving.accesslog import AccessLog
from roadkit.serving.metrics import RequestMetrics
from roadkit.serving.quotas import QuotaTable
from roadkit.serving.service import Service
from roadkit.web.api import (
    QueryAnswer,
    QueryRoute,
    ScopeRoute,
    error_answer,
    error_response,
    http_exception_handler,
    render_json,
    server_error_handler,
)
from roadkit.web.forwarded import parse_networks
from roadkit.web.security import SecurityHeaders

log = logging.getLogger(__name__)


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
    quotas: QuotaTable | None = None,
    access_log: bool = False,
) -> ServiceApp:
    """A service's ASGI app. With ``manage_lifecycle`` its lifespan starts and stops the service.

    ``quotas``: the quota counters the service's workers share (``[access]``); the app makes its own
    when none is given. ``access_log``: write the JSON access log even when the service file does not
    ask for it (the administrator's ``[administrator.logging] access_log``), to stderr unless the file
    names one. Embedding applications use :mod:`roadkit.asgi`, which builds this app from a service file.
    """
    service = config if isinstance(config, Service) else Service(config, plugins or Plugins.create(), id=service_id)
    tag_messages()  # the request id in roadkit's log lines, whatever logging the host process set up
    access = service.config.access
    checks = Checks(access) if access is not None else None
    own_quotas = quotas is None and access is not None
    if access is not None and quotas is None:
        quotas = QuotaTable.create(access.tracked_clients)
    logged = service.config.access_log
    requests_log = AccessLog(logged.file, parse_networks(service.config.http.trusted_proxies)) if logged.enabled or access_log else None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        if manage_lifecycle and service.state == "init":
            await service.start()
        try:
            yield {"service": service}
        finally:
            if manage_lifecycle:
                await service.stop()
            if checks is not None:
                await checks.close()
            if own_quotas and quotas is not None:
                quotas.close()
            if requests_log is not None:
                requests_log.close()

    async def root(request: Request) -> Response:
        return PlainTextResponse(f"roadkit service {service.id}")

    middleware = []
    if service.config.cors:
        middleware.append(Middleware(CORSMiddleware, **service.config.cors))
    middleware.append(Middleware(SecurityHeaders, hsts=any(listener.https for listener in service.config.listeners)))
    routes: list[BaseRoute] = [Route("/", root), *service_routes(service)]
    if checks is not None and quotas is not None:
        # Inside CORS (a preflight is answered before any key is asked for) and the security headers (a 401 has them too).
        prefixes = tuple(route.path for route in routes if isinstance(route, Mount))
        proxies = parse_networks(service.config.http.trusted_proxies)
        middleware.append(Middleware(AccessControl, checks=checks, quotas=quotas, prefixes=prefixes, proxies=proxies))
    apis = {api.prefix: api.name for api in service.plugins.apis().values()}
    app = ServiceApp(
        routes,
        metrics=RequestMetrics(service, routes, apis),
        cors=bool(service.config.cors),
        direct=access is None,
        probes=service.config.probes,
        access_log=requests_log,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: http_exception_handler, Exception: server_error_handler},
    )
    app.state.service = service
    app.state.trusted_proxies = parse_networks(service.config.http.trusted_proxies)  # whose X-Forwarded-* base_url believes
    return app


_GET_HEAD = frozenset(("GET", "HEAD"))
_JSON_HEADERS = [(b"content-length", b"0"), (b"content-type", b"application/json")]


class ServiceApp(Starlette):
    """A service's Starlette app that answers a GET of a :class:`~roadkit.web.api.QueryRoute` itself.

    Such a request (the simple API's operations) goes straight from the ASGI scope to the route's
    ``answer`` and back to the server as two messages, with the headers the middleware adds to
    such an answer (learnt once, by sending a response through it): no Request, Response, routing
    or middleware call. A GET of a :class:`~roadkit.web.api.ScopeRoute` (the native OSRM API's URLs) is
    answered the same way once Starlette's routing gives that route. The answer is
    the same as through Starlette; every other request, and one that a middleware would treat
    differently (a CORS request with an ``Origin``, an app mounted under a ``root_path``, a
    middleware added later), goes through Starlette. Routes changed after the app was made (an
    embedding app's own route in front of an operation) are seen: the direct paths are found again.

    In front of all that, outside every middleware: the probes (``[probes]``), the request id
    (:mod:`roadkit.requestid`) returned on every answer, and the access log when there is one.
    """

    def __init__(
        self,
        routes: list[BaseRoute],
        *,
        cors: bool,
        direct: bool = True,
        probes: Probes | None = None,
        access_log: AccessLog | None = None,
        metrics: RequestMetrics | None = None,
        **options: Any,
    ) -> None:
        """``options``: Starlette's; ``cors``: the middleware has a CORS middleware (a request with ``Origin`` goes through it);
        ``direct``: False when a middleware must see every request (access control), so none is answered directly;
        ``access_log``: where each answered request is written, if anywhere."""
        super().__init__(routes=routes, **options)
        probes = probes or Probes()
        self._probes = {probes.health: self._health, probes.ready: self._readiness}
        self.access_log = access_log
        self._metrics = metrics
        #: Set when the worker begins to stop: the readiness probe answers 503 while requests are still served.
        self.stopping = False
        self._answers_directly = direct
        self._direct = query_routes(routes)
        self._scoped = scope_routes(routes)
        self._routes = list(self.router.routes)  # those ``_direct`` and ``_scoped`` were found in
        self._added: list[tuple[bytes, bytes]] | None = None
        self._cors = cors
        self._middleware = len(self.user_middleware)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        metrics = self._metrics
        if metrics is None or scope["path"] in self._probes:  # a probe every few seconds is no request to count
            await self._identified(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # an answer that never started: the server answers a 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        metrics.in_flight(1.0)
        try:
            await self._identified(scope, receive, sending)
        finally:
            metrics.in_flight(-1.0)
            metrics.record(scope, status, time.perf_counter() - start)

    async def _identified(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer an HTTP request with its request id, and its access log line when there is a log."""
        rid = request_id(scope["headers"])
        token = REQUEST_ID.set(rid)
        try:
            if self.access_log is None:
                await self._answer(scope, receive, send, (b"x-request-id", rid.encode("ascii")))
            else:
                await self._answer_logged(scope, receive, send, rid)
        finally:
            REQUEST_ID.reset(token)

    async def _answer_logged(self, scope: Scope, receive: Receive, send: Send, rid: str) -> None:
        started = time.perf_counter()
        status, sent = 0, 0

        async def counted(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self._answer(scope, receive, counted, (b"x-request-id", rid.encode("ascii")))
        finally:
            if self.access_log is not None and scope["path"] not in self._probes:  # probes every few seconds are noise
                self.access_log.write(scope, rid, status or 500, sent, started)

    async def _answer(self, scope: Scope, receive: Receive, send: Send, request_header: tuple[bytes, bytes]) -> None:
        """Answer an HTTP request, with ``request_header`` (its ``X-Request-ID``) on the answer."""
        probe = self._probes.get(scope["path"])
        if probe is not None and scope["method"] in _GET_HEAD:
            status, content = probe()
            body = render_json(content)
            headers = [
                (b"content-length", str(len(body)).encode("latin-1")),
                (b"content-type", b"application/json"),
                (b"cache-control", b"no-store"),
                request_header,
            ]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if self.router.routes != self._routes:  # identity first: a few pointer comparisons a request
            self._routes = list(self.router.routes)
            self._direct = query_routes(self._routes)
            self._scoped = scope_routes(self._routes)
        if (
            self._answers_directly
            and scope["method"] in _GET_HEAD
            and not scope.get("root_path")
            and len(self.user_middleware) == self._middleware
            and not (self._cors and any(name == b"origin" for name, _ in scope["headers"]))
        ):
            answer = self._direct.get(scope["path"])
            if answer is not None:
                added = self._added if self._added is not None else await self._learn_added_headers()
                if added is not None:
                    try:
                        status, content = await answer(scope["query_string"])
                    except Exception as exc:  # as Starlette's handler would answer it, with the headers
                        status, content = error_answer(exc)
                    body = render_json(content)
                    headers = [
                        (b"content-length", str(len(body)).encode("latin-1")),
                        (b"content-type", b"application/json"),
                        *added,
                        request_header,
                    ]
                    if status == 503:  # as web.api.error_response answers it
                        headers.append((b"retry-after", b"1"))
                    await send({"type": "http.response.start", "status": status, "headers": headers})
                    await send({"type": "http.response.body", "body": body})
                    return
            elif self._scoped and (route := self._scope_route(scope["path"])) is not None:
                added = self._added if self._added is not None else await self._learn_added_headers()
                if added is not None:
                    try:
                        response = await route.answer(scope)
                    except Exception as exc:
                        response = error_response(exc)
                    own = response.raw_headers
                    present = {name for name, _ in own}
                    headers = [*own, *(header for header in added if header[0] not in present), request_header]
                    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
                    await send({"type": "http.response.body", "body": response.body})
                    return
        if scope.get("root_path") and "roadkit.root_path" not in scope:
            # Mounted in a host app: the APIs' own links start with the host's prefix (web.api.base_url).
            scope["roadkit.root_path"] = scope["root_path"]

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), request_header]}
            await send(message)

        await super().__call__(scope, receive, send_with_id)

    def _health(self) -> tuple[int, dict[str, Any]]:
        """The liveness probe: 200 while this worker answers at all."""
        return 200, {"status": "alive", "service": self.state.service.id}

    def _readiness(self) -> tuple[int, dict[str, Any]]:
        """The readiness probe: 200 when the service runs and every source is green; 503 naming what is not."""
        service = self.state.service
        if self.stopping:
            return 503, {"status": "stopping", "service": service.id, "message": "This worker is stopping"}
        red = {sid: str(source.state) for sid, source in service.sources.items() if source.state is not SourceState.GREEN}
        if service.state == "ready" and not red:
            return 200, {"status": "ready", "service": service.id}
        message = f"Source(s) not green: {', '.join(sorted(red))}" if red else f"The service is {service.state}"
        return 503, {"status": "not ready", "service": service.id, "message": message, "sources": red}

    def _scope_route(self, path: str) -> ScopeRoute | None:
        """The :class:`~roadkit.web.api.ScopeRoute` Starlette's routing gives a GET of ``path``, if any."""
        for prefix, route in self._scoped:
            if path.startswith(prefix):
                routed = _routed(self._routes, {"type": "http", "path": path, "root_path": "", "method": "GET"})
                return route if routed is route else None
        return None

    async def _learn_added_headers(self) -> list[tuple[bytes, bytes]] | None:
        """The headers the app's middleware adds to a JSON answer of a GET without ``Origin`` (the security
        headers; CORS's ``Vary``). None, and no more direct answers, if it changes the answer's own headers."""
        started: list[Message] = []

        async def answer(scope: Scope, receive: Receive, send: Send) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": list(_JSON_HEADERS)})

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def capture(message: Message) -> None:
            started.append(message)

        app: ASGIApp = answer
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        probe = {"type": "http", "method": "GET", "path": "/", "root_path": "", "query_string": b"", "headers": []}
        await app(probe, receive, capture)
        headers = [(bytes(name), bytes(value)) for name, value in started[0]["headers"]] if started else []
        if headers[:2] != _JSON_HEADERS:
            self._direct, self._scoped = {}, []
            return None
        self._added = headers[2:]
        return self._added


def query_routes(routes: list[BaseRoute]) -> dict[str, QueryAnswer]:
    """The exact paths whose GET Starlette routes to a :class:`~roadkit.web.api.QueryRoute` of a mounted API, with its answer."""
    found: dict[str, QueryAnswer] = {}
    for mount in routes:
        if not isinstance(mount, Mount):
            continue
        for route in mount.routes:
            if isinstance(route, QueryRoute):
                path = mount.path + route.path
                if _routed(routes, {"type": "http", "path": path, "root_path": "", "method": "GET"}) is route:
                    found[path] = route.answer
    return found


def scope_routes(routes: list[BaseRoute]) -> list[tuple[str, ScopeRoute]]:
    """The :class:`~roadkit.web.api.ScopeRoute` of each mounted API, with the path prefix of its mount."""
    found: list[tuple[str, ScopeRoute]] = []
    for mount in routes:
        if isinstance(mount, Mount):
            found += [(mount.path + "/", route) for route in mount.routes if isinstance(route, ScopeRoute)]
    return found


def _routed(routes: list[BaseRoute], scope: Scope) -> BaseRoute | None:
    """The route Starlette's router gives a GET (the first full match; a mount answers for its whole prefix)."""
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.FULL:
            return _routed(route.routes, {**scope, **child}) if isinstance(route, Mount) else route
    return None
