"""What an API is (plugins contribute them), and the shared JSON/error rendering of every API."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from roadkit.config.convert import structure
from roadkit.errors import BadRequest, ParameterInvalid, RoadkitError
from roadkit.routing.json_input import JsonInputError, read_json
from roadkit.web.forwarded import public_url
from roadkit.web.security import DEFAULT_SECURITY_HEADERS

if TYPE_CHECKING:
    from roadkit.web.view import ServiceView

log = logging.getLogger("roadkit.web.api")


@attrs.frozen
class Api:
    """An API served under ``/{name}/{version}/`` by every service whose configuration lists it.

    ``routes(service)`` builds its Starlette routes; ``openapi(service, base_url)`` its OpenAPI
    document (None when it has none). An API with settings per resource (the ``[apis.<name>]`` table of
    a resource file) names their attrs class: the table is structured into it when the resource is built
    (at start-up or publication: a bad table names the file and key there), and the API reads the
    result as ``resource.api_settings[name]``.
    """

    name: str
    version: str
    routes: Callable[[ServiceView], list[BaseRoute]]
    openapi: Callable[[ServiceView, str], dict[str, Any]] | None = None
    #: The attrs class of a resource's ``[apis.<name>]`` table (None: the API reads no settings).
    settings_class: type | None = None
    #: How a table becomes a ``settings_class`` when strict structuring is not enough (as ``Source.parse_options``):
    #: ``(table, resource file) -> settings``, raising ConfigurationError naming the file and key.
    parse_settings: Callable[[Mapping[str, Any], Path], Any] | None = None
    #: What the API adds to the admin API's description of a running service (``ogcApis``: its OGC APIs), or None.
    describe: Callable[[ServiceView], dict[str, Any]] | None = None

    def read_settings(self, table: Mapping[str, Any], path: Path) -> Any:
        """A resource's settings of this API, from its ``[apis.<name>]`` table (None when the API takes none)."""
        if self.settings_class is None:
            return None
        if self.parse_settings is not None:
            return self.parse_settings(table, path)
        return structure(dict(table), self.settings_class, path, prefix=f"apis.{self.name}")

    @property
    def prefix(self) -> str:
        return f"/{self.name}/{self.version}"


def render_json(content: Any) -> bytes:
    """``content`` as compact JSON (the body of every JSON answer)."""
    try:
        return orjson.dumps(content)
    except TypeError:
        # An integer beyond 64 bits (a configuration file edited by hand shown by the admin API):
        # still a JSON answer, never a 500 for every later request that shows that file.
        return json.dumps(_orjson_like(content), ensure_ascii=False, separators=(",", ":")).encode()


class JSONResponse(Response):
    """A compact JSON response."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return render_json(content)


def _orjson_like(value: Any) -> Any:
    """``value`` with non-finite floats as null, as orjson writes them (json.dumps would write NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _orjson_like(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_orjson_like(v) for v in value]
    return value


def error_answer(exc: Exception) -> tuple[int, Any]:
    """The status and JSON content for any exception: identified errors with their status, others as a bare 500."""
    if isinstance(exc, RoadkitError):
        # Identified errors are expected outcomes (the specification: logged at debug, whatever their
        # status); an engine that breaks says so once, when its source turns red (Source.fail).
        log.debug("%s: %s", exc.code, exc.message)
        return exc.status, exc.body()
    if isinstance(exc, ClientDisconnect):
        # The client left, or its body's deadline passed (roadkit.process.bounds): nobody reads this answer.
        log.debug("the connection closed before the request's body arrived")
        return 400, {"error": {"errorType": "client_disconnected", "message": "The request's body did not arrive"}}
    log.error("unexpected error while handling a request", exc_info=exc)
    return 500, {"error": {"errorType": "internal", "message": "Internal Server Error"}}


def error_response(exc: Exception) -> JSONResponse:
    """The response for any exception (:func:`error_answer`)."""
    status, content = error_answer(exc)
    return JSONResponse(content, status_code=status, headers=retry_after(status))


def retry_after(status: int) -> dict[str, str] | None:
    """The ``Retry-After`` of an answer: a 503 (a busy or reconnecting engine, a starting service) is worth retrying in a second."""
    return {"Retry-After": "1"} if status == 503 else None


#: The answer to a GET of a :class:`QueryRoute`: the query string (bytes, as in the ASGI scope) to
#: the status and the JSON content.
QueryAnswer = Callable[[bytes], Awaitable[tuple[int, Any]]]


class QueryRoute(Route):
    """A route whose GET (and HEAD) answer is a JSON document that depends on the query string only.

    Starlette serves it as any route (its endpoint); the service app (``roadkit.serving.app``) may instead
    call ``answer`` straight from the ASGI scope, without a Request, a Response or Starlette's
    routing, for the same status and body. The endpoint must answer a GET as ``answer`` does.
    """

    def __init__(self, path: str, endpoint: Callable[[Request], Awaitable[Response]], *, answer: QueryAnswer, methods: list[str]) -> None:
        super().__init__(path, endpoint, methods=methods)
        self.answer = answer


#: The answer to a GET of a :class:`ScopeRoute`: the response, from the ASGI scope alone.
ScopeAnswer = Callable[[Scope], Awaitable[Response]]


class ScopeRoute(Route):
    """A route whose GET (and HEAD) answer depends on the ASGI scope only: its path and query string.

    For a path pattern (the native OSRM API's ``/{resource}/{rest}``) what :class:`QueryRoute` is for
    one path: the service app (``roadkit.serving.app``) may call ``answer(scope)`` without a Request or
    Starlette's middleware calls, once Starlette's routing gives this route, and sends the response's
    status, headers and body. ``answer`` must give a GET the response the endpoint gives (a
    :class:`~starlette.responses.Response` with its body, not a streaming one).
    """

    def __init__(
        self,
        path: str,
        endpoint: Callable[[Request], Awaitable[Response]],
        *,
        answer: ScopeAnswer,
        methods: list[str],
        operations: Collection[str] = (),
    ) -> None:
        super().__init__(path, endpoint, methods=methods)
        self.answer = answer
        #: The operation names that may follow ``/{resource}/`` in its paths (the metrics' ``operation`` label).
        self.operations = frozenset(operations)


async def read_json_body(request: Request, limit: int) -> Any:
    """The JSON body of a POST: content type ``application/json`` (any charset), at most ``limit`` bytes."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise BadRequest(f"Wrong Content-Type: expected 'application/json', got '{content_type}'", code="bad_content_type")
    declared = request.headers.get("content-length")
    # ASCII digits only ("²" is a digit to isdigit, not to int) and no int() of thousands of digits.
    if declared is not None and declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise BadRequest(f"Request body too large: at most {limit} bytes", code="body_too_large", status=413)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BadRequest(f"Request body too large: at most {limit} bytes", code="body_too_large", status=413)
    # Kept for an API that answers the request as posted (the OGC API – Routes' route definition).
    request.scope["roadkit.body"] = bytes(body)
    try:
        return read_json(bytes(body))
    except JsonInputError as exc:
        if exc.path:  # a number out of bounds: named as the parameter (or the document's key) it is the value of
            raise ParameterInvalid(exc.where, exc.detail) from None
        raise BadRequest(f"Invalid request body: {exc.detail}", code="invalid_body") from None


def base_url(request: Request) -> str:
    """The public base URL of a request's app and the path a host application mounted it under (``roadkit.asgi``).

    ``X-Forwarded-Proto``/``-Host`` and ``Forwarded`` count only from the app's trusted proxies
    (``roadkit.web.forwarded``); a ``Host`` that is not a host name or address is replaced by the listener's.
    """
    url = public_url(request)
    return f"{url.scheme}://{url.authority}{request.scope.get('roadkit.root_path', '')}"


async def http_exception_handler(request: Request, exc: Exception) -> Response:
    """Starlette's routing errors (404, 405...) in the API error shape."""
    from starlette.exceptions import HTTPException

    from roadkit.errors import NotFound

    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return error_response(NotFound(f"Not found: {request.url.path}"))
    detail = exc.detail if isinstance(exc, HTTPException) else "HTTP error"
    response = error_response(RoadkitError(detail or "HTTP error", code="http_error", status=status))
    if isinstance(exc, HTTPException) and exc.headers:
        # e.g. 405's Allow header (RFC 9110 §15.5.6: a 405 MUST list the methods the resource supports).
        response.headers.update(exc.headers)
    return response


async def server_error_handler(request: Request, exc: Exception) -> Response:
    """Any unexpected exception: a bare 500, details in the log only. Starlette calls this outside every
    middleware, so the answer carries the security headers itself."""
    response = error_response(exc)
    response.headers.update(DEFAULT_SECURITY_HEADERS)
    return response


def fallback_route(routes: list[BaseRoute]) -> BaseRoute:
    """The last route of an API: 405 with ``Allow`` when another route has this path (RFC 9110 §15.5.6),
    else 404, both in the API error shape. Keeps a catch-all from answering 404 to a wrong method."""
    from starlette.exceptions import HTTPException
    from starlette.routing import Match

    from roadkit.errors import NotFound

    known = list(routes)  # a copy: the caller appends this route to ``routes``

    async def fallback(request: Request) -> Response:
        scope = {**request.scope, "method": "GET"}
        allowed: set[str] = set()
        for route in known:
            methods = getattr(route, "methods", None)
            if not methods:
                continue
            match, _ = route.matches({**scope, "method": next(iter(methods))})
            if match == Match.FULL:
                allowed |= set(methods)
        if allowed and request.method not in allowed:
            raise HTTPException(405, headers={"Allow": ", ".join(sorted(allowed))})
        return error_response(NotFound(f"Not found: {request.url.path}"))

    return Route("/{path:path}", fallback, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"])
