"""The simple API's isochrone operation on the Monaco Valhalla resource: every parameter and error, GET and POST."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyproj import Geod, Transformer
from shapely.geometry import Point, Polygon, shape
from starlette.testclient import TestClient

from roadkit.routing.geometry import decode_polyline
from tests.engine_b.conftest import client_of

ISOCHRONE = "/simple/1.0.0/isochrone"
BASE = {"resource": "monaco-valhalla", "point": "7.41337,43.72956", "costType": "time", "costValue": "300"}
GEOD = Geod(ellps="WGS84")


def get(client: TestClient, **params: Any) -> Any:
    return client.get(ISOCHRONE, params={**BASE, **params})


def error_of(response: Any, status: int = 400) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"errorType", "message"}
    return str(body["error"]["message"])


def area(geometry: dict[str, Any]) -> float:
    return abs(GEOD.geometry_area_perimeter(shape(geometry))[0])


def test_get_and_post_give_the_same_answer(client: TestClient) -> None:
    by_get = client.get(ISOCHRONE, params=BASE)
    by_post = client.post(ISOCHRONE, json=BASE)
    by_post_numbers = client.post(ISOCHRONE, json={**BASE, "costValue": 300})
    assert by_get.status_code == by_post.status_code == by_post_numbers.status_code == 200
    assert by_get.json() == by_post.json()
    assert by_post_numbers.json()["geometry"] == by_get.json()["geometry"]


def test_response_has_road2_fields_in_order_and_a_valid_polygon(client: TestClient) -> None:
    body = get(client).json()
    assert list(body) == [
        "point",
        "resource",
        "resourceVersion",
        "costType",
        "costValue",
        "timeUnit",
        "profile",
        "direction",
        "crs",
        "geometry",
        "constraints",
        "reachable",
    ]
    assert body["point"] == BASE["point"] and body["resourceVersion"] == "2016-03-05"
    assert (body["costType"], body["costValue"], body["timeUnit"]) == ("time", 300.0, "second")
    assert (body["profile"], body["direction"], body["crs"]) == ("car", "departure", "EPSG:4326")
    assert body["reachable"] is True and body["constraints"] == []
    polygon = shape(body["geometry"])
    assert body["geometry"]["type"] == "Polygon" and polygon.is_valid and polygon.area > 0
    assert polygon.buffer(0.001).contains(Point(7.41337, 43.72956))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"point": None}, "Parameter 'point' not found"),
        ({"point": "7.41337;43.72956"}, "Parameter 'point' is invalid: expected a point"),
        ({"point": "8.5,43.72956"}, "Parameter 'point' is invalid: x = 8.5 is not in the bbox"),
        ({"point": "7.41337,44.5"}, "Parameter 'point' is invalid: y = 44.5 is not in the bbox"),
        ({"costType": "money"}, "Parameter 'costType' is invalid: expected one of time, distance"),
        ({"costValue": None}, "Parameter 'costValue' not found"),
        ({"costValue": "abc"}, "Parameter 'costValue' is invalid: expected a number"),
        ({"costValue": "0.5"}, "Parameter 'costValue' is invalid: 0.5 is below the minimum 1"),
        ({"costValue": "50001"}, "Parameter 'costValue' is invalid: 50001 is above the maximum 50000"),
        ({"costValue": "60|120|180|240|300|360"}, "Parameter 'costValue' is invalid: expected between 1 and 5 values"),
        ({"profile": "bicycle"}, "Parameter 'profile' is invalid: expected one of car, pedestrian, multimodal"),
        (
            {"profile": "multimodal", "costType": "distance"},
            "Parameters 'profile' and 'costType' are not compatible: profile 'multimodal' with costType 'distance' is not offered",
        ),
        ({"direction": "both"}, "Parameter 'direction' is invalid: expected one of departure, arrival"),
        ({"geometryFormat": "kml"}, "Parameter 'geometryFormat' is invalid: expected one of geojson, polyline, wkt"),
        ({"crs": "EPSG:27700"}, "Parameter 'crs' is invalid: expected one of EPSG:4326, EPSG:3857, EPSG:2154"),
        ({"timeUnit": "day"}, "Parameter 'timeUnit' is invalid: expected one of hour, minute, second"),
        ({"costType": "distance", "distanceUnit": "mile"}, "Parameter 'distanceUnit' is invalid: expected one of meter, kilometer"),
        ({"date_time": "2026-06-15 08:00"}, "Parameter 'date_time' is invalid: expected format YYYY-MM-DDTHH:mm"),
        ({"date_time": "2026-02-30T08:00"}, "Parameter 'date_time' is invalid: '2026-02-30T08:00' is not a valid date"),
        (
            {"constraints": '{"constraintType":"banned","key":"colour","operator":"=","value":"red"}'},
            "Parameter 'constraints' is invalid: key",
        ),
        (
            {"constraints": '{"constraintType":"avoid","key":"wayType","operator":"=","value":"tunnel"}'},
            "Parameter 'constraints' is invalid: constraintType",
        ),
        (
            {"constraints": '{"constraintType":"banned","key":"wayType","operator":"!=","value":"tunnel"}'},
            "Parameter 'constraints' is invalid: operator",
        ),
        (
            {"constraints": '{"constraintType":"banned","key":"wayType","operator":"=","value":"bus"}'},
            "Parameter 'constraints' is invalid: value",
        ),
        ({"resource": "nowhere"}, "Parameter 'resource' is invalid: it does not exist on this service (got 'nowhere')"),
        ({"resource": None}, "Parameter 'resource' not found"),
        # Found by schemathesis: the unit of the other cost type was not checked (a 200), and a
        # costValue or a year the engine refuses was the engine's error, against the document.
        ({"costType": "time", "distanceUnit": "-58800"}, "Parameter 'distanceUnit' is invalid"),
        ({"costType": "distance", "timeUnit": "week"}, "Parameter 'timeUnit' is invalid"),
        (
            {"costValue": "11", "timeUnit": "hour"},
            "Parameter 'costValue' is invalid: expected at most 10 (hour): the engine computes no larger time isochrone",
        ),
        ({"costValue": "36001"}, "Parameter 'costValue' is invalid: expected at most 36000 (second)"),
        (
            {"costType": "distance", "costValue": "1001", "distanceUnit": "kilometer"},
            "Parameter 'costValue' is invalid: expected at most 1000 (kilometer)",
        ),
        (
            {"date_time": "1900-12-31T23:59"},
            "Parameter 'date_time' is invalid: expected a year from 1901 to 9999 (what the engine reads), got 1900",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_parameter(client: TestClient, params: dict[str, Any], message: str) -> None:
    query = {k: v for k, v in {**BASE, **params}.items() if v is not None}
    assert message in error_of(client.get(ISOCHRONE, params=query))
    post_query = {k: v for k, v in query.items()}
    if "constraints" in post_query:
        post_query["constraints"] = [json.loads(post_query["constraints"])]
    assert message in error_of(client.post(ISOCHRONE, json=post_query))


def test_cost_type_defaults_to_the_resource_default(client: TestClient) -> None:
    params = {k: v for k, v in BASE.items() if k != "costType"}
    assert client.get(ISOCHRONE, params=params).json()["costType"] == "time"


def test_cost_value_is_read_in_the_request_unit(client: TestClient) -> None:
    seconds = get(client, costValue="300").json()
    minutes = get(client, costValue="5", timeUnit="minute").json()
    assert minutes["costValue"] == 5.0 and minutes["timeUnit"] == "minute"
    assert area(minutes["geometry"]) == pytest.approx(area(seconds["geometry"]), rel=0.01)
    meters = get(client, costType="distance", costValue="1500").json()
    kilometers = get(client, costType="distance", costValue="1.5", distanceUnit="kilometer").json()
    assert "timeUnit" not in meters and meters["distanceUnit"] == "meter"
    assert area(kilometers["geometry"]) == pytest.approx(area(meters["geometry"]), rel=0.01)


def test_a_cost_value_given_twice_is_one_contour_answered_twice(client: TestClient) -> None:
    # Was a 400 ("expected distinct values") that the document could not describe (found by schemathesis).
    body = get(client, costValue="60|120|60").json()
    values = [c["costValue"] for c in body["contours"]]
    assert values == [60, 120, 60]
    assert body["contours"][0]["geometry"] == body["contours"][2]["geometry"] != body["contours"][1]["geometry"]
    assert client.post(ISOCHRONE, json={**BASE, "costValue": [1.0, 1.0, 1.0, 1.0]}).status_code == 200


def test_larger_cost_values_reach_larger_areas(client: TestClient) -> None:
    small, large = (area(get(client, costValue=v, profile="pedestrian").json()["geometry"]) for v in ("300", "900"))
    assert large > small * 2


def test_several_cost_values_give_nested_contours(client: TestClient) -> None:
    body = get(client, costValue="600|120|300", profile="pedestrian").json()
    assert body["costValue"] == [600.0, 120.0, 300.0]
    contours = body["contours"]
    assert [c["costValue"] for c in contours] == [600.0, 120.0, 300.0]
    assert all(c["reachable"] for c in contours) and body["geometry"] == contours[0]["geometry"]
    largest, smallest, middle = (shape(c["geometry"]) for c in contours)
    assert largest.buffer(1e-4).contains(middle) and middle.buffer(1e-4).contains(smallest)


def test_a_cost_too_small_for_a_polygon_answers_the_start_point(client: TestClient) -> None:
    body = get(client, costValue="1").json()
    assert body["reachable"] is False and body["geometry"] == {"type": "Point", "coordinates": [7.41337, 43.72956]}
    assert get(client, costValue="1", geometryFormat="wkt").json()["geometry"] == "POINT(7.41337 43.72956)"
    assert decode_polyline(get(client, costValue="1", geometryFormat="polyline").json()["geometry"]) == [(7.41337, 43.72956)]
    mixed = get(client, costValue="1|300").json()
    assert [c["reachable"] for c in mixed["contours"]] == [False, True] and mixed["reachable"] is False


def test_arrival_differs_from_departure(client: TestClient) -> None:
    departure = get(client, point="7.4167,43.7284", costValue="120").json()
    arrival = get(client, point="7.4167,43.7284", costValue="120", direction="arrival").json()
    assert arrival["direction"] == "arrival"
    assert area(arrival["geometry"]) != pytest.approx(area(departure["geometry"]), rel=0.01)


def test_geometry_formats(client: TestClient) -> None:
    geojson = get(client).json()["geometry"]
    wkt = get(client, geometryFormat="wkt").json()["geometry"]
    polyline = get(client, geometryFormat="polyline").json()["geometry"]
    assert re.fullmatch(r"POLYGON\(\(.+\)\)", wkt)
    ring = decode_polyline(polyline)
    assert Polygon(ring).area == pytest.approx(Polygon(geojson["coordinates"][0]).area, rel=0.01)


@pytest.mark.parametrize("crs", ["EPSG:3857", "EPSG:2154"])
def test_point_and_geometry_in_a_projected_crs(client: TestClient, crs: str) -> None:
    to_crs = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    x, y = to_crs.transform(7.41337, 43.72956)
    body = get(client, point=f"{x:.2f},{y:.2f}", crs=crs).json()
    assert body["crs"] == crs
    reference = shape(get(client).json()["geometry"])
    projected = shape(body["geometry"])
    assert projected.contains(Point(x, y)) or projected.distance(Point(x, y)) < 100
    back = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    cx, cy = back.transform(projected.centroid.x, projected.centroid.y)
    assert (cx, cy) == pytest.approx((reference.centroid.x, reference.centroid.y), abs=1e-3)


def test_date_time_is_accepted(client: TestClient) -> None:
    response = get(client, date_time="2026-06-15T08:00", profile="multimodal", costValue="600")
    assert response.status_code == 200 and response.json()["reachable"] is True


def test_banned_constraint_shrinks_the_area(client: TestClient) -> None:
    free = get(client, point="7.4167,43.7284", costValue="180").json()
    banned = get(
        client,
        point="7.4167,43.7284",
        costValue="180",
        constraints='{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}',
    ).json()
    assert banned["constraints"] == [{"type": "banned", "key": "waytype", "operator": "=", "value": "tunnel"}]
    assert area(banned["geometry"]) < area(free["geometry"]) * 0.95


def test_capabilities_describe_the_valhalla_resource(client: TestClient) -> None:
    capabilities = client.get("/simple/1.0.0/getcapabilities").json()
    (resource,) = [r for r in capabilities["resources"] if r["id"] == "monaco-valhalla"]
    operations = {op["id"]: {p["id"]: p for p in op["availableParameters"]} for op in resource["availableOperations"]}
    assert set(operations) == {"route", "isochrone", "nearest", "matrix"}
    assert operations["isochrone"]["costValue"]["values"] == {"min": 1, "max": 50000}
    assert "multimodal" in operations["route"]["profile"]["values"]
    assert operations["isochrone"]["geometryFormat"]["values"] == ["geojson", "polyline", "wkt"]
    keys = operations["isochrone"]["constraints"]["values"]["keys"]
    assert keys[0]["key"] == "waytype" and keys[0]["availableConstraintType"] == ["banned"]
    isochrone = next(op for op in capabilities["operations"] if op["id"] == "isochrone")
    cost_value = next(p for p in isochrone["parameters"] if p["name"] == "costValue")
    assert "nested polygons" in cost_value["description"]


def test_the_document_gives_the_largest_cost_value_in_each_unit(client: TestClient) -> None:
    # Valhalla's service limits (valhalla.json: 600 minutes, 1000 km) in the unit asked, below the resource's max (50000).
    document = client.get("/simple/1.0.0/openapi.json").json()
    schemas = document["components"]["schemas"]

    def resolve(schema: dict[str, Any]) -> dict[str, Any]:
        return schemas[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema

    def const(schema: dict[str, Any]) -> Any:
        return schema["const"] if "const" in schema else schema["anyOf"][0]["const"]  # fixed, or fixed and optional

    body = resolve(document["paths"]["/isochrone"]["post"]["requestBody"]["content"]["application/json"]["schema"])
    largest: dict[tuple[str, str], set[float]] = {}
    for variant in body["anyOf"]:
        properties = variant["properties"]
        cost_type = const(properties["costType"])
        unit = const(properties["timeUnit" if cost_type == "time" else "distanceUnit"])
        value = resolve(properties["costValue"])
        numbers = [s.get("items", s) for s in value["anyOf"] if s.get("type") in ("number", "integer", "array")]
        largest.setdefault((cost_type, unit), set()).update(n["maximum"] for n in numbers)
    assert largest == {
        ("time", "hour"): {10},
        ("time", "minute"): {600},
        ("time", "second"): {36000},
        ("distance", "meter"): {50000},
        ("distance", "kilometer"): {1000},
    }
    route = json.dumps(document["paths"]["/route"]) + json.dumps(schemas)
    assert "190[1-9]" in route, "date_time: the years Valhalla reads (1901 to 9999)"


def test_isochrone_nearest_and_matrix_routes_rename_their_paths(valhalla_example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ISOCHRONE_ROUTE", "isochrones")
    monkeypatch.setenv("NEAREST_ROUTE", "/plus-proche/")  # Road2's values may carry slashes
    monkeypatch.setenv("MATRIX_ROUTE", "matrice")
    with client_of(valhalla_example) as renamed:
        caps = renamed.get("/simple/1.0.0/getcapabilities").json()
        urls = [op["url"].rsplit("/", 1)[1] for op in caps["operations"]]
        assert urls == ["route?", "isochrones?", "plus-proche?", "matrice?"]
        assert renamed.get("/simple/1.0.0/isochrones", params=BASE).json()["costValue"] == 300
        assert renamed.post("/simple/1.0.0/isochrones", json=BASE).status_code == 200
        nearest = renamed.get("/simple/1.0.0/plus-proche", params={"resource": "monaco-valhalla", "coordinates": BASE["point"]})
        assert nearest.status_code == 200 and len(nearest.json()["points"]) == 1
        matrix = renamed.get("/simple/1.0.0/matrice", params={"resource": "monaco-valhalla", "sources": BASE["point"] + "|7.4246,43.7383"})
        assert matrix.status_code == 200, matrix.text
        for old in ("isochrone", "nearest", "matrix"):
            assert renamed.get(f"/simple/1.0.0/{old}", params=BASE).status_code == 404
        assert (
            renamed.get(
                "/simple/1.0.0/route", params={"resource": "monaco-valhalla", "start": BASE["point"], "end": "7.4246,43.7383"}
            ).status_code
            == 200
        )
        paths = renamed.get("/simple/1.0.0/openapi.json").json()["paths"]
        assert {"/isochrones", "/plus-proche", "/matrice"} <= set(paths)
        assert not {"/isochrone", "/nearest", "/matrix"} & set(paths)
