"""The simple API 1.0.0: getcapabilities, route, isochrone, nearest and matrix, in GET and POST."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from roadkit import hookimpl
from roadkit.apis.simple import operations
from roadkit.apis.simple.capabilities import build_capabilities, with_base_url
from roadkit.apis.simple.inputs import query_parameters, read_parameters
from roadkit.errors import OperationNotPermitted, RoadkitError
from roadkit.web.api import Api, JSONResponse, QueryRoute, base_url, error_answer, error_response, fallback_route
from roadkit.web.docs import docs_routes

if TYPE_CHECKING:
    from roadkit.web.view import ServiceView

PREFIX = "/simple/1.0.0"
Handler = Callable[["ServiceView", dict[str, Any]], Awaitable[dict[str, Any]]]


def operation_names(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Path names of the operations (``ROUTE_ROUTE``, ``ISOCHRONE_ROUTE``, ``NEAREST_ROUTE``, ``MATRIX_ROUTE``)."""
    env = os.environ if environ is None else environ
    return {op: (env.get(f"{op.upper()}_ROUTE") or op).strip("/") for op in ("route", "isochrone", "nearest", "matrix")}


def build_routes(service: ServiceView) -> list[BaseRoute]:
    """The simple API's routes for one service."""
    names = operation_names()
    capabilities: dict[str, Any] | None = None
    limit = service.config.limits.max_body_bytes

    async def index(request: Request) -> Response:
        base = base_url(request) + PREFIX
        return JSONResponse(
            {
                "api": {"name": "simple", "version": "1.0.0"},
                "description": "roadkit via l'API simple 1.0.0",  # Road2's root text, naming roadkit
                "links": [
                    {"rel": "service-desc", "type": "application/vnd.oai.openapi+json;version=3.1", "href": f"{base}/openapi.json"},
                    {"rel": "service-doc", "type": "text/html", "href": f"{base}/openapi"},
                    {"rel": "capabilities", "type": "application/json", "href": f"{base}/getcapabilities"},
                ],
            }
        )

    built_for: tuple[Any, ...] = ()

    async def getcapabilities(request: Request) -> Response:
        nonlocal capabilities, built_for
        # Built again only when the resources changed (a source reconnecting, a publication): a
        # rebuilt resource is a new object.
        current = tuple(service.resources.values())
        if capabilities is None or len(current) != len(built_for) or any(a is not b for a, b in zip(current, built_for, strict=True)):
            capabilities, built_for = build_capabilities(service, names), current
        return JSONResponse(with_base_url(capabilities, base_url(request) + PREFIX))

    def operation(op: str, handler: Handler) -> QueryRoute:
        def check() -> None:
            if service.state != "ready":
                raise RoadkitError("The service is starting", code="starting", status=503)
            if not any(op in r.operations for r in service.resources.values()):
                raise OperationNotPermitted(f"Operation '{op}' is not permitted on this service")

        async def run(request: Request) -> Response:
            try:
                check()
                params = await read_parameters(request, limit)
                request.scope["roadkit.resource"] = params.get("resource")  # the metrics' label of a POST
                return JSONResponse(await handler(service, params))
            except Exception as exc:
                return error_response(exc)

        async def answer(query: bytes) -> tuple[int, Any]:
            # A GET straight from the ASGI scope (roadkit.serving.app's fast path): what ``run`` answers to it.
            try:
                check()
                return 200, await handler(service, query_parameters(query, limit))
            except Exception as exc:
                return error_answer(exc)

        return QueryRoute(f"/{names[op]}", run, answer=answer, methods=["GET", "POST"])

    handlers: dict[str, Handler] = {
        "route": operations.route,
        "isochrone": operations.isochrone,
        "nearest": operations.nearest,
        "matrix": operations.matrix,
    }
    routes: list[BaseRoute] = [
        Route("/", index, methods=["GET"]),
        Route("/getcapabilities", getcapabilities, methods=["GET", "POST"]),
        *[operation(op, handler) for op, handler in handlers.items()],
        *docs_routes("roadkit simple API 1.0.0", lambda request: simple_openapi(service, base_url(request) + PREFIX), PREFIX),
    ]
    routes.append(fallback_route(routes))
    return routes


def simple_openapi(service: ServiceView, base: str) -> dict[str, Any]:
    from roadkit.apis.simple.openapi import openapi_document

    return openapi_document(service, base, operation_names())


@hookimpl(trylast=True)
def roadkit_apis() -> Sequence[Api]:
    """Core's simple API (this module is one of core's default plugins)."""
    return [SIMPLE_API]


SIMPLE_API = Api(
    "simple",
    "1.0.0",
    routes=build_routes,
    openapi=simple_openapi,
)
