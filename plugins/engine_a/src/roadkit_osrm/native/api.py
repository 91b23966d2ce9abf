"""The native OSRM API v1 (``osrm/1.0.0``): osrm-routed's URLs and answers, one resource at a time.

Two URL shapes under ``/osrm/1.0.0/{resource}/``:

* OSRM's own, ``{service}/v1/{profile}/{coordinates}[.json][?options]``, the profile naming a cost of
  the resource (or an alias from its ``[apis.osrm.profiles]``);
* Road2's, ``{profile}/{optimization}/{service}/v1/_/{coordinates}[?options]``.

Everything after the resource is read by a parser that answers as osrm-routed does (same codes,
messages and statuses), then handed to the source's ``native`` method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from roadkit.contract.apis import Api, JSONResponse, RoadkitError, ScopeRoute, base_url, docs_routes
from roadkit.contract.native_osrm import JSON_TYPE, NativeAnswer, NativeRequest, NativeSource
from roadkit_osrm.native.body import POST_SERVICES, BodyError, parse_body
from roadkit_osrm.native.openapi import native_openapi
from roadkit_osrm.native.query import SERVICES, QueryError, parse_query
from roadkit_osrm.native.render import error_body
from roadkit_osrm.native.settings import NativeSettings, read_settings
from roadkit_osrm.native.settings import of as native_settings
from roadkit_osrm.native.table import answers, by_matrix, native_services, table, table_limits
from roadkit_osrm.native.url import UrlError, parse_post_url, parse_url, uri_decode

if TYPE_CHECKING:
    from roadkit.contract.apis import Resource, ServiceView

PREFIX = "/osrm/1.0.0"


class _AnyText(Convertor[str]):
    """Any text, line breaks too: Starlette's ``path`` (``.*``) stops at a decoded ``%0A``, and the
    request would leave the native API for the core's 404 (osrm-routed reads such a URL, and refuses it)."""

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("osrm_any", _AnyText())


def _error(status: int, code: str, message: str) -> Response:
    # A 503 (a starting service, a busy or reconnecting engine) is worth retrying in a second.
    headers = {"Retry-After": "1"} if status == 503 else None
    return Response(error_body(code, message), status_code=status, headers=headers, media_type=JSON_TYPE)


def _not_allowed(method: str, allow: str) -> Response:
    return Response(error_body("MethodNotAllowed", f"Method {method} not allowed (allowed: {allow})"), 405, {"Allow": allow}, JSON_TYPE)


def url_methods(rest: list[bytes]) -> str:
    """The methods a URL under a resource takes (its ``Allow``), from the path segments after the resource.

    A URL with something after the profile (coordinates) is a GET; one that ends at the profile is a
    POST for the services osrm-routed answers by POST. Other URLs are osrm-routed's 400 (InvalidUrl).
    """
    road2 = len(rest) >= 5 and rest[4] == b"_"
    head = 5 if road2 else 3
    if len(rest) < head:
        return "GET, HEAD, POST"
    if any(rest[head:]):
        return "GET, HEAD"
    return "POST" if uri_decode(rest[2 if road2 else 0]) in POST_SERVICES else "GET, HEAD, POST"


#: The header naming the data version that computed a native answer (a versioned source only).
DATA_VERSION_HEADER = "X-Roadkit-Data-Version"


def _answer(answer: NativeAnswer, version: str | None = None) -> Response:
    headers = {"content-type": answer.content_type}
    if version is not None:
        headers[DATA_VERSION_HEADER] = version
    return Response(answer.body, status_code=answer.status, headers=headers)


def _road2_refusal(settings: NativeSettings, resource: Resource, profile: str, optimization: str) -> Response | None:
    """Road2's 400 for a profile or optimization of its URL that the resource does not offer, else None."""
    if settings.choose(resource, profile, optimization) is not None:
        return None
    profiles = settings.profile_names(resource)
    if profile not in profiles:
        names = ", ".join(profiles)
        return _error(400, "InvalidProfile", f"Parameter 'profileId' is invalid: it does not exist on this resource (known: {names})")
    optimizations = {cost.optimization for source in resource.sources for cost in source.costs() if cost.optimization}
    if optimization not in optimizations:
        names = ", ".join(sorted(optimizations))
        return _error(400, "InvalidProfile", f"Parameter 'optimizationId' is invalid: it does not exist on this resource (known: {names})")
    return _error(
        400,
        "InvalidProfile",
        f"Parameters 'profile' and 'optimization' are not compatible: profile {profile} with optimization {optimization} "
        f"is not offered by resource {resource.id}",
    )


def _parses_as_get(text: str) -> bool:
    """Whether ``text`` is a GET URL osrm-routed reads (service, version, profile, coordinates and options)."""
    try:
        url = parse_url(text)
        if url.service in SERVICES:
            parse_query(url.service, url.query)
            return True
    except (UrlError, QueryError):
        pass
    return False


class NativeHandler:
    """Answers native requests for one service; resources' settings are read once, when first used."""

    def __init__(self, service: ServiceView) -> None:
        self.service = service

    async def handle(self, request: Request) -> Response:
        """A request through Starlette (any method)."""
        return await self.respond(request.scope, request)

    async def answer(self, scope: Scope) -> Response:
        """A GET or HEAD straight from the ASGI scope (``roadkit.serving.app.ServiceApp``): what :meth:`handle` answers."""
        return await self.respond(scope, None)

    async def respond(self, scope: Scope, request: Request | None) -> Response:
        """The answer to the request of ``scope``; ``request`` (its headers and body) is needed for a POST only."""
        if self.service.state != "ready":
            return _error(503, "ServiceUnavailable", "The service is starting")
        method: str = scope["method"]
        raw: bytes = scope.get("raw_path") or scope["path"].encode()
        limit = self.service.config.limits.max_body_bytes
        if len(raw) + len(scope.get("query_string", b"")) > limit:  # a URL is bounded as a body is
            return _error(414, "InvalidUrl", f"URL too long: at most {limit} bytes")
        parts = raw.split(b"/")  # b"", b"osrm", b"1.0.0", resource, rest...
        resource_id = uri_decode(parts[3]) if len(parts) > 3 else ""
        rest = parts[4:]
        # Road2's URL shape: {resource}/{profile}/{optimization}/route/v1/_/{coordinates}.
        road2 = len(rest) >= 5 and rest[4] == b"_"
        resource = self.service.resources.get(resource_id)
        if resource is None:
            if road2:  # Road2's status and message
                return _error(400, "InvalidResource", "Parameter 'resourceId' is invalid: it does not exist on this service")
            return _error(404, "InvalidResource", f"Resource '{resource_id}' does not exist on this service")
        settings = native_settings(resource)
        optimization: str | None = None
        if road2:
            road2_profile, optimization = uri_decode(rest[0]), uri_decode(rest[1])
            rest = rest[2:]
            refused = _road2_refusal(settings, resource, road2_profile, optimization)
            if refused is not None:
                return refused
        target = b"/" + b"/".join(rest)
        query_string = scope.get("query_string", b"")
        if query_string:
            target += b"?" + query_string
        text = uri_decode(target)
        post = request is not None and method == "POST"
        allow = url_methods(parts[4:])
        if not post and allow == "POST":
            return _not_allowed(method, allow)
        if post and allow == "GET, HEAD" and _parses_as_get(text):
            # osrm-routed answers such a POST with InvalidUrl; roadkit says which method the URL takes
            return _not_allowed(method, allow)
        if request is not None and post and not request.headers.get("content-type", "").strip().lower().startswith("application/json"):
            return _error(415, "InvalidContentType", "POST requests require a Content-Type of application/json.")
        try:
            url = parse_post_url(text) if post else parse_url(text)
        except UrlError as exc:
            return _error(400, "InvalidUrl", exc.message)
        if url.service not in SERVICES:
            return _error(400, "InvalidService", f"Service {url.service} not found!")
        if url.version != 1:
            return _error(400, "InvalidVersion", f"Service {url.service} not found!")
        if post and url.service not in POST_SERVICES:
            return _error(400, "NotImplemented", "This service does not support POST requests with a JSON body.")
        profile = road2_profile if road2 else url.profile
        chosen = settings.choose(resource, profile, optimization)
        if chosen is None:
            known = ", ".join(settings.profile_names(resource))
            wanted = f"{profile}/{optimization}" if optimization else profile
            return _error(400, "InvalidProfile", f"Profile {wanted} not found on resource {resource.id} (known: {known})")
        source, cost = chosen
        if not answers(source, cost, resource, url.service):
            return _error(400, "InvalidService", f"Service {url.service} is not available on resource {resource.id} (engine {source.kind})")
        body: bytes | None = None
        try:
            if request is not None and post:
                body = await self.read_body(request)
                params = parse_body(url.service, body)
            else:
                params = parse_query(url.service, url.query)
        except QueryError as exc:
            return _error(400, "InvalidQuery", f"Query string malformed close to position {url.prefix_length + exc.pos}")
        except BodyError as exc:
            return _error(400, "InvalidQuery", exc.message)
        except RoadkitError as exc:
            return _error(exc.status, "InvalidQuery", exc.message)
        matrix = url.service == "table" and by_matrix(source, resource)
        limits = settings.limits_for([source])
        native = NativeRequest(
            url.service, url.version, profile, url.query, params, cost, table_limits(limits, resource) if matrix else limits, body
        )
        try:
            if matrix:
                return _answer(await table(source, resource, native, self.service.projections.transform), source.data_version)
            assert isinstance(source, NativeSource)
            return _answer(await source.native(native), source.data_version)
        except RoadkitError as exc:
            return _error(exc.status, "ServiceUnavailable" if exc.status == 503 else "EngineError", exc.message)

    async def read_body(self, request: Request) -> bytes:
        """The POST body, at most the service's ``limits.max_body_bytes`` (413 beyond)."""
        limit = self.service.config.limits.max_body_bytes
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise RoadkitError(f"Request body too large: at most {limit} bytes", status=413)
        return bytes(body)

    def resources(self) -> list[dict[str, Any]]:
        listed = []
        for resource in self.service.resources.values():
            settings = native_settings(resource)
            services: list[str] = []
            for source in resource.sources:
                for name in native_services(source, resource):
                    if name not in services:
                        services.append(name)
            if not services:
                continue
            limits = settings.limits_for(resource.sources)
            if any(by_matrix(source, resource) for source in resource.sources):
                limits = table_limits(limits, resource)
            listed.append(
                {
                    "id": resource.id,
                    "description": resource.config.description,
                    "profiles": settings.profiles(resource),
                    "services": services,
                    "limits": attrs.asdict(limits),
                }
            )
        return listed


def build_routes(service: ServiceView) -> list[BaseRoute]:
    """The native API's routes for one service."""
    handler = NativeHandler(service)

    async def index(request: Request) -> Response:
        base = base_url(request) + PREFIX
        return JSONResponse(
            {
                "api": {"name": "osrm", "version": "1.0.0"},
                "description": "roadkit via OSRM API 1.0.0",  # Road2's root text, naming roadkit
                "resources": f"{PREFIX}/resources",
                "links": [
                    {"rel": "service-desc", "type": "application/vnd.oai.openapi+json;version=3.1", "href": f"{base}/openapi.json"},
                    {"rel": "service-doc", "type": "text/html", "href": f"{base}/openapi"},
                ],
            }
        )

    async def resources(request: Request) -> Response:
        if service.state != "ready":
            return _error(503, "ServiceUnavailable", "The service is starting")
        return JSONResponse(handler.resources())

    routes: list[BaseRoute] = [
        Route("/", index, methods=["GET"]),
        Route("/resources", resources, methods=["GET"]),
        *docs_routes("roadkit native OSRM API 1.0.0", lambda request: native_openapi(service, base_url(request) + PREFIX), PREFIX),
        ScopeRoute("/{resource}/{rest:osrm_any}", handler.handle, answer=handler.answer, methods=["GET", "POST"], operations=SERVICES),
    ]

    async def not_found(request: Request) -> Response:
        # A wrong method on a path served above is a 405 listing the methods it takes (RFC 9110 §15.5.6).
        raw: bytes = request.scope.get("raw_path") or request.url.path.encode()
        parts = raw.split(b"/")  # b"", b"osrm", b"1.0.0", resource, rest...
        if len(parts) > 4 and parts[3] not in (b"", b"resources", b"openapi"):
            return _not_allowed(request.method, url_methods(parts[4:]))
        allowed: set[str] = set()
        for route in routes:
            methods = getattr(route, "methods", None) or set()
            if methods and route.matches({**request.scope, "method": next(iter(methods))})[0] == Match.FULL:
                allowed |= methods
        if allowed:
            return _not_allowed(request.method, ", ".join(sorted(allowed)))
        return _error(404, "InvalidUrl", f"Not found: {request.url.path}")

    return [*routes, Route("/{path:osrm_any}", not_found, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"])]


def openapi(service: ServiceView, base: str) -> dict[str, Any]:
    """The native API's OpenAPI document for ``service`` (its resources, profiles, services and limits)."""
    return native_openapi(service, base)


NATIVE_API = Api("osrm", "1.0.0", routes=build_routes, openapi=openapi, settings_class=NativeSettings, parse_settings=read_settings)
