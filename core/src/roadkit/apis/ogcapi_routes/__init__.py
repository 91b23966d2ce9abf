"""OGC API – Routes (Part 1: Core, 1.0.0-draft.1): one API per resource that computes routes, at ``/ogcapi-routes/1.0/{resource}``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from roadkit import hookimpl
from roadkit.apis.ogcapi_routes.callbacks import notify
from roadkit.apis.ogcapi_routes.compute import compute
from roadkit.apis.ogcapi_routes.definition import Definition, read_definition
from roadkit.apis.ogcapi_routes.offer import Offer, Settings, offer_of, parse_settings
from roadkit.apis.ogcapi_routes.store import RouteStore
from roadkit.errors import NotFound, RoadkitError
from roadkit.web.api import Api, JSONResponse, base_url, error_answer, error_response, fallback_route, read_json_body

if TYPE_CHECKING:
    from roadkit.web.view import ServiceView

PREFIX = "/ogcapi-routes/1.0"
GEOJSON = "application/geo+json"
OPENAPI = "application/vnd.oai.openapi+json;version=3.0"
ROUTES_REL = "http://www.opengis.net/def/rel/ogc/1.0/routes"
CONFORMANCE_REL = "http://www.opengis.net/def/rel/ogc/1.0/conformance"


def offers(service: ServiceView) -> dict[str, Offer]:
    """The resources served through the OGC API, by id."""
    return {rid: offer for rid, resource in service.resources.items() if (offer := offer_of(resource)) is not None}


def build_routes(service: ServiceView) -> list[BaseRoute]:
    """The OGC APIs of one service's resources."""
    settings = service.config.ogcapi_routes
    store = RouteStore(settings.store, settings.keep, settings.max_routes)
    limit = service.config.limits.max_body_bytes
    #: The asynchronous computations of this worker by route id (kept referenced until done, cancelled by a DELETE).
    running: dict[str, asyncio.Task[None]] = {}

    def offer(request: Request) -> Offer:
        if service.state != "ready":
            raise RoadkitError("The service is starting", code="starting", status=503)
        rid = request.path_params["resource"]
        found = offers(service).get(rid)
        if found is None:
            raise NotFound(f"No OGC API – Routes for resource '{rid[:100]}' on this service", code="not_found")
        return found

    def api_uri(request: Request, rid: str) -> str:
        return f"{base_url(request)}{PREFIX}/{rid}"

    def guarded(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                response: Response = await handler(request)
                return response
            except Exception as exc:
                return error_response(exc)

        return endpoint

    @guarded
    async def apis(request: Request) -> Response:
        base = base_url(request) + PREFIX
        links = [{"href": f"{base}/", "rel": "self", "type": "application/json", "title": "The OGC APIs – Routes of this service"}]
        for rid, found in offers(service).items():
            links.append({"href": f"{base}/{rid}/", "rel": "item", "type": "application/json", "title": found.title})
        return JSONResponse({"links": links})

    @guarded
    async def landing(request: Request) -> Response:
        found = offer(request)
        uri = api_uri(request, found.id)
        return JSONResponse(
            {
                "title": found.title,
                "links": [
                    {"href": f"{uri}/", "rel": "self", "type": "application/json", "title": "This document"},
                    {"href": f"{uri}/api", "rel": "service-desc", "type": OPENAPI, "title": "The API definition in OpenAPI JSON"},
                    {"href": f"{uri}/conformance", "rel": CONFORMANCE_REL, "type": "application/json", "title": "The conformance classes"},
                    {"href": f"{uri}/routes", "rel": ROUTES_REL, "type": "application/json", "title": "Compute routes"},
                ],
            }
        )

    @guarded
    async def conformance(request: Request) -> Response:
        return JSONResponse(offer(request).conformance())

    @guarded
    async def api(request: Request) -> Response:
        from roadkit.apis.ogcapi_routes.openapi import openapi_document

        found = offer(request)
        return JSONResponse(openapi_document(found, api_uri(request, found.id), service.config.access), media_type=OPENAPI)

    @guarded
    async def routes(request: Request) -> Response:
        found = offer(request)
        uri = api_uri(request, found.id)
        if request.method == "GET":
            links = [{"href": f"{uri}/routes", "rel": "self", "type": "application/json", "title": "This document"}]
            for route_id, name in store.list(found.id):
                link = {"href": f"{uri}/routes/{route_id}", "rel": "item", "type": GEOJSON}
                if name is not None:
                    link["title"] = name
                links.append(link)
            return JSONResponse({"links": links})
        body = await read_json_body(request, limit)
        definition = read_definition(body, found)
        posted: bytes = request.scope["roadkit.body"]
        if "respond-async" in request.headers.get("prefer", "").lower():
            if len(running) >= settings.max_async:
                raise RoadkitError("Too many asynchronous routes in progress: try again later", code="busy", status=503)
            route_id = store.add(found.id, definition.name, posted, "accepted")
            task = asyncio.create_task(background(found, definition, route_id))
            running[route_id] = task
            task.add_done_callback(lambda _: running.pop(route_id, None))
            location = f"{uri}/routes/{route_id}"
            return JSONResponse(status_document("accepted", location), status_code=201, headers={"Location": location})
        answer = orjson.dumps(await compute(service, found, definition))
        route_id = store.add(found.id, definition.name, posted, "successful", answer)
        return Response(answer, media_type=GEOJSON, headers={"Location": f"{uri}/routes/{route_id}"})

    async def background(found: Offer, definition: Definition, route_id: str) -> None:
        store.update(found.id, route_id, "running")
        try:
            answer = orjson.dumps(await compute(service, found, definition))
        except Exception as exc:
            status, content = error_answer(exc)
            failure = orjson.dumps({"status": status, **content})
            store.update(found.id, route_id, "failed", failure)
            if "failedUri" in definition.subscriber:
                await notify(definition.subscriber["failedUri"], failure, "application/json", settings.private_callbacks)
            return
        store.update(found.id, route_id, "successful", answer)
        if "successUri" in definition.subscriber:
            await notify(definition.subscriber["successUri"], answer, GEOJSON, settings.private_callbacks)

    def status_document(status: str, location: str) -> dict[str, Any]:
        return {
            "status": status,
            "links": [{"href": location, "rel": "monitor", "type": "application/json", "title": "The route's status"}],
        }

    def stored(request: Request, found: Offer) -> Any:
        item = store.get(found.id, request.path_params["routeId"])
        if item is None:
            raise NotFound(f"No route '{request.path_params['routeId'][:100]}' on this API", code="not_found")
        return item

    @guarded
    async def route(request: Request) -> Response:
        found = offer(request)
        if request.method == "DELETE":
            if (task := running.get(request.path_params["routeId"])) is not None:
                task.cancel()  # a route still computing in this worker: the standard cancels it
            if not store.delete(found.id, request.path_params["routeId"]):
                raise NotFound(f"No route '{request.path_params['routeId'][:100]}' on this API", code="not_found")
            return Response(status_code=204)
        item = stored(request, found)
        if item.status == "successful":
            return Response(item.answer, media_type=GEOJSON)
        location = f"{api_uri(request, found.id)}/routes/{item.id}"
        if item.status == "failed":
            error = orjson.loads(item.answer)
            return JSONResponse({"status": "failed", "error": error["error"]}, status_code=error["status"])
        return JSONResponse(status_document(item.status, location), status_code=202)

    @guarded
    async def definition(request: Request) -> Response:
        item = stored(request, offer(request))
        return Response(item.definition, media_type="application/json")

    table: list[BaseRoute] = [
        Route("/", apis, methods=["GET"]),
        Route("/{resource}/", landing, methods=["GET"]),
        # The standard's abstract tests ask {apiURI} itself for the landing page, without the slash.
        Route("/{resource}", landing, methods=["GET"]),
        Route("/{resource}/conformance", conformance, methods=["GET"]),
        Route("/{resource}/api", api, methods=["GET"]),
        Route("/{resource}/routes", routes, methods=["GET", "POST"]),
        Route("/{resource}/routes/{routeId}", route, methods=["GET", "DELETE"]),
        Route("/{resource}/routes/{routeId}/definition", definition, methods=["GET"]),
    ]
    table.append(fallback_route(table))
    return table


@hookimpl
def roadkit_capabilities(service: ServiceView, capabilities: dict[str, Any]) -> None:
    """The simple API's capabilities list the OGC APIs the service serves (paths from the host's root)."""
    if any(api.name == OGCAPI_ROUTES.name and api.version == OGCAPI_ROUTES.version for api in service.config.apis):
        capabilities["ogcApis"] = [
            {"resource": rid, "api": "ogcapi-routes/1.0", "path": f"{PREFIX}/{rid}/", "title": found.title}
            for rid, found in offers(service).items()
        ]


def describe(service: ServiceView) -> dict[str, Any]:
    """The admin API's ``ogcApis`` of a running service: one OGC API per resource, with its URL on each listener."""
    listeners = service.config.listeners
    return {
        "ogcApis": [
            {
                "resource": rid,
                "api": "ogcapi-routes/1.0",
                "title": found.title,
                "path": f"{PREFIX}/{rid}/",
                "urls": [f"{'https' if listener.https else 'http'}://{listener.bind}{PREFIX}/{rid}/" for listener in listeners],
            }
            for rid, found in offers(service).items()
        ]
    }


@hookimpl(trylast=True)
def roadkit_apis() -> Sequence[Api]:
    """Core's OGC API – Routes (this module is one of core's default plugins)."""
    return [OGCAPI_ROUTES]


OGCAPI_ROUTES = Api("ogcapi-routes", "1.0", routes=build_routes, settings_class=Settings, parse_settings=parse_settings, describe=describe)
