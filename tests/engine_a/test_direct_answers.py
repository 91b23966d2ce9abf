"""The service app answers a GET of a simple-API operation itself (``roadkit.serving.app.ServiceApp``): the
same messages, byte for byte, as Starlette's routing and middleware give, on the Monaco OSRM service."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from roadkit.serving.app import query_routes
from roadkit.testing.asgi import http_scope

A, B, VIA = "7.41337,43.72956", "7.41983,43.73115", "7.4246,43.7383"
ROUTE = "/simple/1.0.0/route"

#: (path, query) of GETs answered directly: successes and every kind of error the operations give.
DIRECT = [
    (ROUTE, f"resource=monaco-osrm&start={A}&end={B}"),
    (ROUTE, f"resource=monaco-osrm&start={A}&end={B}&geometryFormat=polyline&getSteps=false&getBbox=false"),
    (ROUTE, f"resource=monaco-osrm&start={A}&end={B}&intermediates={VIA}&geometryFormat=wkt&timeUnit=second&crs=EPSG:3857"),
    (ROUTE, f"resource=monaco-osrm&start={A}&end={B}&waysAttributes=name&profile=pedestrian&distanceUnit=kilometer"),
    (ROUTE, f"resource=monaco-osrm&start={A}&end={B}&crs=EPSG:2154&getBbox="),  # the empty value is absent
    (ROUTE, f"resource=monaco-osrm&start={A}&end={B}&end={B}"),  # a repeated key
    (ROUTE, f"start={A}&end={B}"),  # no resource
    (ROUTE, f"resource=nowhere&start={A}&end={B}"),
    (ROUTE, "resource=monaco-osrm&start=7.4,91&end=a,b"),
    (ROUTE, "resource=monaco-osrm&start=%zz&end=%ff%fe"),  # bad percent-encoding, bytes that are no UTF-8
    (ROUTE, f"resource=monaco-osrm&start={A}&end={B}&getSteps=yes"),
    (ROUTE, f"resource=monaco-osrm&start={A}&end={B}&constraints=" + "{not json"),
    (ROUTE, ""),
    ("/simple/1.0.0/nearest", f"resource=monaco-osrm&coordinates={A}&nbPoints=3"),
    ("/simple/1.0.0/isochrone", f"resource=monaco-osrm&point={A}&costValue=300"),  # not an operation of the resource
]


def _scope(path: str, query: str, method: str = "GET", headers: list[tuple[bytes, bytes]] | None = None, root_path: str = "") -> Any:
    return http_scope(path, query, method=method, headers=headers or [], root_path=root_path)


def _messages(client: TestClient, scope: Any, *, through_starlette: bool) -> tuple[list[Any], bool]:
    """The messages the app sends, and whether Starlette handled the request (it marks the scope with the app)."""
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    async def call() -> None:
        if through_starlette:
            await Starlette.__call__(client.app, scope, receive, send)  # type: ignore[arg-type]
        else:
            await client.app(scope, receive, send)

    assert client.portal is not None
    client.portal.call(call)
    return sent, "app" in scope


def _same_answer(client: TestClient, scope: Any, *, direct: bool) -> list[Any]:
    starlette, _ = _messages(client, dict(scope), through_starlette=True)
    app, handled_by_starlette = _messages(client, dict(scope), through_starlette=False)
    assert handled_by_starlette is not direct
    # The service app puts the request id on every answer, direct or not (Starlette's own __call__ does not).
    assert [name for name, _ in app[0]["headers"]].count(b"x-request-id") == 1
    app = [{**m, "headers": [h for h in m["headers"] if h[0] != b"x-request-id"]} if "headers" in m else m for m in app]
    assert app == starlette
    return app


def test_the_operations_are_answered_directly(client: TestClient) -> None:
    assert set(query_routes(client.app.routes)) == {f"/simple/1.0.0/{op}" for op in ("route", "isochrone", "nearest", "matrix")}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("path", "query"), DIRECT)
def test_a_direct_answer_is_starlettes(client: TestClient, path: str, query: str) -> None:
    start, body = _same_answer(client, _scope(path, query), direct=True)
    assert [name for name, _ in start["headers"]][:2] == [b"content-length", b"content-type"]
    assert (b"x-content-type-options", b"nosniff") in start["headers"]
    assert body["body"]


def test_head_is_answered_directly(client: TestClient) -> None:
    messages = _same_answer(client, _scope(ROUTE, f"resource=monaco-osrm&start={A}&end={B}", "HEAD"), direct=True)
    assert messages[0]["status"] == 200


@pytest.mark.parametrize(
    ("scope", "status"),
    [
        # A CORS request: the middleware adds its headers.
        (_scope(ROUTE, f"resource=monaco-osrm&start={A}&end={B}", headers=[(b"origin", b"https://app.example")]), 200),
        # Other methods, other paths (a trailing slash or line break: Starlette's own answer).
        (_scope(ROUTE, "", "PUT"), 405),
        (_scope(ROUTE + "/", f"resource=monaco-osrm&start={A}&end={B}"), 404),
        (_scope(ROUTE + "\n", f"resource=monaco-osrm&start={A}&end={B}"), 200),
        (_scope("/simple/1.0.0/getcapabilities", ""), 200),
        # An app mounted under a prefix.
        (_scope("/under" + ROUTE, f"resource=monaco-osrm&start={A}&end={B}", root_path="/under"), 200),
    ],
)
def test_other_requests_go_through_starlette(client: TestClient, scope: Any, status: int) -> None:
    messages = _same_answer(client, scope, direct=False)
    assert messages[0]["status"] == status


NATIVE = "/osrm/1.0.0/monaco-osrm"
#: Native OSRM API URLs (raw path, query) that Starlette routes to the API's ScopeRoute: answered directly.
NATIVE_DIRECT = [
    (f"{NATIVE}/route/v1/car/{A};{B}", ""),
    (f"{NATIVE}/route/v1/driving/{A};{B}.json", "overview=full&steps=true&geometries=geojson&annotations=true"),
    (f"{NATIVE}/route/v1/car/polyline(ofp_Ik_vpAilAyu@te@g`E)", "overview=false"),
    (f"{NATIVE}/car/shortest/route/v1/_/{A};{B}", "alternatives=2"),  # Road2's URL
    (f"{NATIVE}/nearest/v1/foot/{A}", "number=3"),
    (f"{NATIVE}/table/v1/car/{A};{B};{VIA}", "sources=0&annotations=duration,distance"),
    (f"{NATIVE}/trip/v1/car/{A};{B};{VIA}", ""),
    (f"{NATIVE}/match/v1/car/{A};{B}", "timestamps=1;2"),
    (f"{NATIVE}/tile/v1/car/tile(4264,2987,13).mvt", ""),
    (f"{NATIVE}/route/v1/car/{A};{B}", "alternatives=x"),  # InvalidQuery
    (f"{NATIVE}/route/v1/car/{A}", ""),  # InvalidOptions: one coordinate
    (f"{NATIVE}/route/v1/bike/{A};{B}", ""),  # InvalidProfile
    (f"{NATIVE}/route/v1/car", ""),  # 405, Allow: POST
    (f"{NATIVE}/route/v2/car/{A};{B}", ""),  # InvalidVersion
    (f"{NATIVE}/route/v1/car/{A};{B}%0A", ""),  # a line break in the path
    ("/osrm/1.0.0/nowhere/route/v1/car/" + f"{A};{B}", ""),  # InvalidResource
    ("/osrm/1.0.0/resources/route/v1/car/" + f"{A};{B}", ""),  # a resource named like a route of the API
]


def _raw_scope(raw: str, query: str, method: str = "GET") -> Any:
    from urllib.parse import unquote

    return {**_scope(unquote(raw), query, method), "raw_path": raw.encode()}


@pytest.mark.parametrize(("raw", "query"), NATIVE_DIRECT)
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_native_answer_is_starlettes(client: TestClient, raw: str, query: str, method: str) -> None:
    """The native OSRM API's URLs are answered from the scope too: the same status, headers and body."""
    start, body = _same_answer(client, _raw_scope(raw, query, method), direct=True)
    assert (b"x-content-type-options", b"nosniff") in start["headers"]
    assert body["body"] or start["status"] == 405


@pytest.mark.parametrize(
    "raw", ["/osrm/1.0.0/resources", "/osrm/1.0.0/openapi.json", "/osrm/1.0.0/", "/osrm/1.0.0/openapi", "/osrm/1.0.0/monaco-osrm"]
)
def test_the_native_apis_other_paths_go_through_starlette(client: TestClient, raw: str) -> None:
    messages = _same_answer(client, _raw_scope(raw, ""), direct=False)
    assert messages[0]["status"] in (200, 404, 405)


def test_a_native_post_goes_through_starlette(client: TestClient) -> None:
    headers = [(b"host", b"testserver"), (b"content-type", b"application/json")]
    scope = {**_raw_scope(f"{NATIVE}/route/v1/car", "", "POST"), "headers": headers}
    messages = _same_answer(client, scope, direct=False)
    assert messages[0]["status"] == 400  # the receive() of _messages sends an empty body


def test_a_cors_answer_keeps_its_headers(client: TestClient) -> None:
    response = client.get(ROUTE, params={"resource": "monaco-osrm", "start": A, "end": B}, headers={"Origin": "https://app.example"})
    assert response.status_code == 200 and "access-control-allow-origin" in response.headers
    assert response.headers["x-frame-options"] == "DENY"


def test_without_cors_the_answer_is_starlettes_too(osrm_example: Any) -> None:
    from roadkit.config import load_service
    from roadkit.plugins import Plugins
    from roadkit.serving.app import create_app

    with TestClient(create_app(load_service(osrm_example / "service.toml"), Plugins.create())) as plain:
        for path, query in DIRECT[:2] + DIRECT[-4:]:
            start, _ = _same_answer(plain, _scope(path, query), direct=True)
            assert b"vary" not in dict(start["headers"])


def test_a_middleware_added_later_is_not_bypassed(osrm_example: Any) -> None:
    from starlette.middleware.base import BaseHTTPMiddleware

    from roadkit.config import load_service
    from roadkit.plugins import Plugins
    from roadkit.serving.app import create_app

    app = create_app(load_service(osrm_example / "service.toml"), Plugins.create())

    async def mark(request: Any, call_next: Any) -> Any:
        response = await call_next(request)
        response.headers["x-added"] = "yes"
        return response

    app.add_middleware(BaseHTTPMiddleware, dispatch=mark)
    with TestClient(app) as later:
        response = later.get(ROUTE, params={"resource": "monaco-osrm", "start": A, "end": B})
    assert response.status_code == 200 and response.headers["x-added"] == "yes"


def test_a_route_added_later_is_not_bypassed(osrm_example: Any) -> None:
    """An app that embeds the service and puts its own route in front of an operation gets that route."""
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from roadkit.config import load_service
    from roadkit.plugins import Plugins
    from roadkit.serving.app import create_app

    app = create_app(load_service(osrm_example / "service.toml"), Plugins.create())

    async def own(request: Any) -> Any:
        return PlainTextResponse("the embedding app's own route")

    with TestClient(app) as later:
        query = {"resource": "monaco-osrm", "start": A, "end": B}
        assert later.get(ROUTE, params=query).headers["content-type"] == "application/json"
        app.router.routes.insert(0, Route(ROUTE, own))
        response = later.get(ROUTE, params=query)
        assert response.text == "the embedding app's own route"
        del app.router.routes[0]
        assert later.get(ROUTE, params=query).headers["content-type"] == "application/json"
