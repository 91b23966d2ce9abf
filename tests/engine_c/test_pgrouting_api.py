"""The simple API on the monaco-pgrouting resource: routes, isochrones, nearest, constraints, hostile input."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from pyproj import Geod
from shapely.geometry import Point, shape
from starlette.testclient import TestClient

from roadkit.testing import service_client
from tests.engine_c.conftest import END, FAR_END, FAR_START, START

ROUTE, ISOCHRONE, NEAREST = "/simple/1.0.0/route", "/simple/1.0.0/isochrone", "/simple/1.0.0/nearest"
RESOURCE = "monaco-pgrouting"
GEOD = Geod(ellps="WGS84")
FLAT_REACH = "7.489052758229215,43.7632662554018"  # at the data's east edge: 2.2 s of car reach a few aligned pieces
TUNNEL_START, TUNNEL_END = (7.41983, 43.73115), (7.4226, 43.7352)  # the shortest car route takes a tunnel to the port


def xy(point: tuple[float, float]) -> str:
    return f"{point[0]},{point[1]}"


@pytest.fixture(scope="module")
def client(pg_example: Path) -> Iterator[TestClient]:
    with service_client(pg_example / "service.toml") as test_client:
        yield test_client


def route(client: TestClient, **params: Any) -> Any:
    return client.get(ROUTE, params={"resource": RESOURCE, "start": xy(START), "end": xy(END), **params})


def isochrone(client: TestClient, **params: Any) -> Any:
    return client.get(ISOCHRONE, params={"resource": RESOURCE, "point": xy(START), "costType": "time", "costValue": "120", **params})


def constraint(ctype: str, key: str, operator: str, value: Any, **extra: Any) -> str:
    return json.dumps({"constraintType": ctype, "key": key, "operator": operator, "value": value, **extra})


def area(geometry: dict[str, Any]) -> float:
    return abs(GEOD.geometry_area_perimeter(shape(geometry))[0])


def test_route_answers_road2_shape_with_empty_instructions(client: TestClient) -> None:
    response = route(client, waysAttributes="highway")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["resource"] == RESOURCE and body["profile"] == "car" and body["optimization"] == "fastest"
    assert body["geometry"]["type"] == "LineString" and body["distance"] > 0
    steps = body["portions"][0]["steps"]
    assert steps and all(s["instruction"] == {} for s in steps)
    assert all(set(s["attributes"]) == {"name", "highway"} for s in steps)


def test_route_in_other_crs_and_formats(client: TestClient) -> None:
    response = route(client, geometryFormat="wkt")
    assert response.status_code == 200, response.text
    wkt = response.json()
    assert wkt["geometry"].startswith("LINESTRING(")
    assert isinstance(route(client, geometryFormat="polyline").json()["geometry"], str)


def test_nearest_through_the_api(client: TestClient) -> None:
    body = client.get(NEAREST, params={"resource": RESOURCE, "coordinates": xy(START), "nbPoints": "3"}).json()
    assert len(body["points"]) == 3


def test_isochrone_polygon_is_valid_and_contains_the_start(client: TestClient) -> None:
    body = isochrone(client, costValue="300").json()
    polygon = shape(body["geometry"])
    assert body["reachable"] is True and polygon.is_valid
    assert polygon.buffer(0.001).contains(Point(START))
    ring = body["geometry"]["coordinates"][0] if body["geometry"]["type"] == "Polygon" else body["geometry"]["coordinates"][0][0]
    signed = sum(a[0] * b[1] - b[0] * a[1] for a, b in itertools.pairwise(ring))
    assert signed > 0, "exterior rings are counter-clockwise (RFC 7946)"


def test_an_isochrone_from_the_sea_is_a_404_no_isochrone_found(client: TestClient) -> None:
    response = isochrone(client, point="7.49,43.71")  # in the sea, kilometres from the coast
    assert response.status_code == 404, response.text
    assert response.json()["error"]["message"].startswith("No isochrone found: no road within")
    assert response.json()["error"]["errorType"] == "no_isochrone"


def test_an_isochrone_of_a_few_nearly_aligned_pieces_of_road_does_not_crash_the_database(client: TestClient, pg_dsn: str) -> None:
    # Found by schemathesis (fuzzing): a point at the edge of the data, a cost of 2.2 s: the reached pieces of
    # road are almost flat, and ST_ConcaveHull on GEOS < 3.12.1 (Debian 12: 3.11.1) crashed the PostgreSQL backend
    # (libgeos/geos#946, GH-953): every connection of the cluster reset, the request a 503. The hull is the worker's.
    import asyncio

    async def run() -> None:
        held = await asyncpg.connect(pg_dsn)  # a backend crash ends every connection: this one too
        try:
            single = isochrone(client, point=FLAT_REACH, profile="car", costValue="2.2")
            assert single.status_code == 200, single.text
            assert single.json()["geometry"] == {"type": "Point", "coordinates": [7.489052758229215, 43.7632662554018]}
            several = isochrone(client, point=FLAT_REACH, profile="car", costValue="2.2|1257")
            assert several.status_code == 200, several.text
            shapes = {c["costValue"]: c["geometry"]["type"] for c in several.json()["contours"]}
            assert shapes == {2.2: "Point", 1257.0: "Polygon"}, shapes
            assert await held.fetchval("SELECT 1") == 1, "no backend crashed"
        finally:
            await held.close()

    asyncio.run(run())


def test_a_number_written_with_a_trailing_point_is_read_as_the_document_describes(client: TestClient) -> None:
    # Found by schemathesis (fuzzing): the document's costValue pattern takes "300." (as points take "7.41,43.73."),
    # the parameter refused it: a schema-valid request answered 400.
    import re

    document = client.get("/simple/1.0.0/openapi.json").json()
    pattern = next(schema["pattern"] for name, schema in document["components"]["schemas"].items() if name.startswith("get-costValue"))
    assert re.search(pattern, "300.") and re.search(pattern, "60.|300")
    assert isochrone(client, costValue="300.").json() == isochrone(client, costValue="300").json()
    assert isochrone(client, costValue="60.|300").status_code == 200
    for refused in (".5", "300..", "3e2"):
        assert not re.search(pattern, refused)
        answer = isochrone(client, costValue=refused)
        assert answer.status_code == 400 and "Parameter 'costValue' is invalid: expected a number" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("profile", "cost_type", "values"),
    [
        ("pedestrian", "time", "600|120|300"),
        ("car", "time", "60|180|30"),
        ("car", "distance", "500|2000|1000"),
    ],
)
def test_several_values_give_nested_contours_that_grow(client: TestClient, profile: str, cost_type: str, values: str) -> None:
    body = isochrone(client, profile=profile, costType=cost_type, costValue=values).json()
    contours = {c["costValue"]: shape(c["geometry"]) for c in body["contours"]}
    ordered = [contours[v] for v in sorted(contours)]
    assert all(c.is_valid for c in ordered)
    for small, large in itertools.pairwise(ordered):
        assert large.buffer(1e-7).contains(small)
        assert large.area > small.area
    assert ordered[0].buffer(0.001).contains(Point(START))


def test_arrival_differs_from_departure(client: TestClient) -> None:
    departure = isochrone(client, costValue="120").json()["geometry"]
    arrival = isochrone(client, costValue="120", direction="arrival").json()["geometry"]
    assert departure != arrival


def test_too_small_value_answers_the_start_point_as_valhalla_does(client: TestClient) -> None:
    body = isochrone(client, costValue="1").json()
    assert body["reachable"] is False and body["geometry"] == {"type": "Point", "coordinates": list(START)}
    mixed = isochrone(client, costValue="1|300").json()
    assert [c["reachable"] for c in mixed["contours"]] == [False, True]


def test_banned_motorway_avoids_it(client: TestClient) -> None:
    params = {"start": xy(FAR_START), "end": xy(FAR_END), "waysAttributes": "highway"}
    free = route(client, **params).json()
    banned = route(client, **params, constraints=constraint("banned", "wayType", "=", "autoroute")).json()
    highways = {s["attributes"]["highway"] for p in free["portions"] for s in p["steps"]}
    assert any(h.startswith("motorway") for h in highways), "the free route takes the A8"
    assert not any(s["attributes"]["highway"].startswith("motorway") for p in banned["portions"] for s in p["steps"])
    assert banned["duration"] > free["duration"]
    assert banned["constraints"]


def test_banned_with_not_equal_keeps_only_matching_edges(client: TestClient) -> None:
    # Road2: operator '!=' keeps only the edges where the condition holds (here: no motorway-only route exists).
    response = route(client, constraints=constraint("banned", "wayType", "!=", "autoroute"))
    assert response.status_code == 404


def test_avoid_tunnels_and_prefer_them(client: TestClient) -> None:
    params = {"start": xy(TUNNEL_START), "end": xy(TUNNEL_END), "waysAttributes": "tunnel", "optimization": "shortest"}

    def tunnel_length(body: dict[str, Any]) -> float:
        return sum(s["distance"] for p in body["portions"] for s in p["steps"] if s["attributes"]["tunnel"] == "true")

    free = route(client, **params).json()
    avoided = route(client, **params, constraints=constraint("avoid", "wayType", "=", "tunnel", costRatio=50)).json()
    banned = route(client, **params, constraints=constraint("banned", "wayType", "=", "tunnel")).json()
    assert tunnel_length(free) > 0
    assert tunnel_length(avoided) < tunnel_length(free)
    assert tunnel_length(banned) == 0
    preferred = route(client, **params, constraints=constraint("prefer", "wayType", "=", "tunnel", costRatio=0.1)).json()
    assert tunnel_length(preferred) >= tunnel_length(free)


def test_numerical_constraint_bans_fast_roads(client: TestClient) -> None:
    params = {"start": xy(FAR_START), "end": xy(FAR_END), "waysAttributes": "maxspeed"}

    def speeds(body: dict[str, Any]) -> list[float]:
        return [float(s["attributes"]["maxspeed"]) for p in body["portions"] for s in p["steps"]]

    free = route(client, **params).json()
    slow = route(client, **params, constraints=constraint("banned", "vitesse", ">", 65)).json()
    assert max(speeds(free)) > 65
    assert speeds(slow) and max(speeds(slow)) <= 65
    assert slow["duration"] > free["duration"]
    # Banning every road faster than 20 km/h leaves no way out: a 404, not a 500.
    assert route(client, **params, constraints=constraint("banned", "vitesse", ">=", 20)).status_code == 404
    assert route(client, **params, constraints=constraint("banned", "vitesse", ">", "60")).status_code == 400


def test_isochrone_with_banned_tunnels_is_smaller_or_equal(client: TestClient) -> None:
    free = isochrone(client, costValue="180").json()["geometry"]
    banned = isochrone(client, costValue="180", constraints=constraint("banned", "wayType", "=", "tunnel")).json()["geometry"]
    assert area(banned) <= area(free) * 1.01


PAYLOADS = [
    "'; DROP TABLE monaco.ways; --",
    "1) OR 1=1 --",
    "$rk$; DROP SCHEMA monaco CASCADE; $rk$",
    "\\'; SELECT pg_sleep(5); --",
    "7.41337,43.72956'; DELETE FROM monaco.ways; --",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_sql_injection_payloads_are_400_and_leave_the_database_intact(client: TestClient, pg_dsn: str, payload: str) -> None:
    attempts = [
        route(client, start=payload),
        route(client, end=payload),
        route(client, intermediates=payload),
        route(client, profile=payload),
        route(client, optimization=payload),
        route(client, waysAttributes=payload),
        route(client, constraints=constraint("banned", payload, "=", "autoroute")),
        route(client, constraints=constraint("banned", "wayType", payload, "autoroute")),
        route(client, constraints=constraint("banned", "wayType", "=", payload)),
        route(client, constraints=constraint("banned", "vitesse", ">", payload)),
        route(client, constraints=constraint(payload, "wayType", "=", "autoroute")),
        route(client, constraints=payload),
        route(client, resource=payload),
        route(client, crs=payload),
        isochrone(client, costValue=payload),
        isochrone(client, point=payload),
        isochrone(client, direction=payload),
        isochrone(client, costType=payload),
        isochrone(client, constraints=constraint("banned", "vitesse", payload, 3)),
        client.get(NEAREST, params={"resource": RESOURCE, "coordinates": payload}),
        client.get(NEAREST, params={"resource": RESOURCE, "coordinates": xy(START), "nbPoints": payload}),
    ]
    assert [a.status_code for a in attempts] == [400] * len(attempts), [a.text for a in attempts if a.status_code != 400]

    async def count() -> int:
        conn = await asyncpg.connect(pg_dsn)
        try:
            return int(await conn.fetchval("SELECT count(*) FROM monaco.ways"))
        finally:
            await conn.close()

    import asyncio

    assert asyncio.run(count()) > 5000
    assert route(client).status_code == 200
