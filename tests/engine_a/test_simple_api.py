"""The simple API 1.0.0 on the Monaco OSRM resource: what depends on the engine.

Core's parsing, validation, units, formats and error shapes are tested on the ``straight`` kind of
roadkit.testing, with exact numbers (``tests/core/test_simple_api_straight.py``); here remain the
answers an engine shapes: its steps, its own polyline, profiles, constraints, no path, snapping.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from roadkit.routing.geometry import decode_polyline

ROUTE = "/simple/1.0.0/route"
NEAREST = "/simple/1.0.0/nearest"
BASE = {"resource": "monaco-osrm", "start": "7.41337,43.72956", "end": "7.41983,43.73115"}


def get(client: TestClient, path: str, **params: Any) -> Any:
    return client.get(path, params=params)


def post(client: TestClient, path: str, body: Any) -> Any:
    return client.post(path, json=body)


def error_of(response: Any, status: int = 400) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"errorType", "message"}
    return str(body["error"]["message"])


def test_route_response_carries_the_engines_route(client: TestClient) -> None:
    # The fields and their order are core's (tests/core/test_simple_api_straight.py); here, what OSRM fills in.
    body = get(client, ROUTE, **BASE).json()
    assert body["resource"] == "monaco-osrm" and body["resourceVersion"] == "2016-03-05"
    assert (body["profile"], body["optimization"], body["crs"]) == ("car", "fastest", "EPSG:4326")
    assert body["geometry"]["type"] == "LineString"
    assert (body["distanceUnit"], body["timeUnit"]) == ("meter", "minute")
    portion = body["portions"][0]
    assert portion["steps"][0]["instruction"]["type"] == "depart"
    assert portion["steps"][-1]["instruction"]["type"] == "arrive"
    assert "name" in portion["steps"][0]["attributes"]
    xmin, ymin, xmax, ymax = body["bbox"]
    assert xmin < xmax and ymin < ymax


def test_intermediates_make_portions_in_order(client: TestClient) -> None:
    via = ["7.4246,43.7383", "7.4200,43.7350"]
    by_get = get(client, ROUTE, **BASE, intermediates="|".join(via)).json()
    by_post = post(client, ROUTE, {**BASE, "intermediates": via}).json()
    assert by_get == by_post
    portions = by_get["portions"]
    assert len(portions) == 3
    assert portions[0]["end"] == portions[1]["start"] and portions[1]["end"] == portions[2]["start"]
    assert sum(p["distance"] for p in portions) == pytest.approx(by_get["distance"])
    for portion in portions:
        assert len(portion["bbox"]) == 4


@pytest.mark.parametrize("crs", ["EPSG:4326", "EPSG:2154"])
def test_a_polyline_without_steps_or_bbox_is_the_engines_own(client: TestClient, crs: str) -> None:
    """No coordinate needed: OSRM writes the polyline (its rounding of 1e-6 fixed point), same line as the GeoJSON one."""
    from pyproj import Transformer

    options = {"getSteps": "false", "getBbox": "false", "crs": crs}
    if crs != "EPSG:4326":
        to_crs = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
        start, end = to_crs.transform(7.41337, 43.72956), to_crs.transform(7.41983, 43.73115)
        options |= {"start": f"{start[0]:.2f},{start[1]:.2f}", "end": f"{end[0]:.2f},{end[1]:.2f}"}
    polyline = get(client, ROUTE, **{**BASE, **options, "geometryFormat": "polyline"}).json()
    reference = get(client, ROUTE, **{**BASE, **options}).json()
    decoded = decode_polyline(polyline["geometry"])
    coords = [tuple(c) for c in reference["geometry"]["coordinates"]]
    tolerance = 1e-5 if crs == "EPSG:4326" else 0.01  # precision 5 of lon/lat, or the same numbers written from meters
    assert len(decoded) == len(coords) > 2
    assert all(abs(x - cx) <= tolerance and abs(y - cy) <= tolerance for (x, y), (cx, cy) in zip(decoded, coords, strict=True))
    assert {k: v for k, v in polyline.items() if k != "geometry"} == {k: v for k, v in reference.items() if k != "geometry"}


def test_shortest_and_pedestrian_profiles_use_their_sources(client: TestClient) -> None:
    fastest = get(client, ROUTE, **BASE).json()
    shortest = get(client, ROUTE, **BASE, optimization="shortest").json()
    walking = get(client, ROUTE, **BASE, profile="pedestrian").json()
    assert shortest["distance"] <= fastest["distance"]
    assert walking["duration"] > fastest["duration"]


def test_constraints_ban_a_way_type(client: TestClient) -> None:
    start, end = "7.37612,43.75813", "7.45165,43.73148"
    ban = {"constraintType": "banned", "key": "wayType", "operator": "=", "value": "autoroute"}
    free = get(client, ROUTE, resource="monaco-osrm", start=start, end=end).json()
    banned = get(client, ROUTE, resource="monaco-osrm", start=start, end=end, constraints=json.dumps(ban)).json()
    posted = post(client, ROUTE, {"resource": "monaco-osrm", "start": start, "end": end, "constraints": [ban]}).json()
    assert banned == posted
    assert banned["constraints"] == [{"type": "banned", "key": "waytype", "operator": "=", "value": "autoroute"}]
    assert banned["geometry"] != free["geometry"]


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("not json", "invalid JSON"),
        ('{"constraintType":"banned","key":"nope","operator":"=","value":"autoroute"}', "key: expected one of waytype"),
        ('{"constraintType":"prefer","key":"wayType","operator":"=","value":"autoroute"}', "constraintType: expected one of banned"),
        ('{"constraintType":"banned","key":"wayType","operator":">","value":"autoroute"}', "operator: expected one of ="),
        (
            '{"constraintType":"banned","key":"wayType","operator":"=","value":"viaduc"}',
            "value: expected one of autoroute, peage, bac, tunnel, pont",
        ),
    ],
)
def test_invalid_constraints_are_rejected(client: TestClient, constraint: str, expected: str) -> None:
    message = error_of(get(client, ROUTE, **BASE, constraints=constraint))
    assert message.startswith("Parameter 'constraints' is invalid") and expected in message


def test_a_route_made_impossible_is_a_404(client: TestClient) -> None:
    ban = '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}'
    response = get(client, ROUTE, resource="monaco-osrm", start="7.38076,43.74470", end="7.44436,43.75035", constraints=ban)
    assert error_of(response, 404) == "No path found"


def test_nearest_returns_points_in_the_request_crs(client: TestClient) -> None:
    body = get(client, NEAREST, resource="monaco-osrm", coordinates="7.41337,43.72956", nbPoints="3").json()
    assert list(body) == ["resource", "resourceVersion", "coordinates", "crs", "points"]
    assert [p["id"] for p in body["points"]] == ["0", "1", "2"]
    assert all(p["distance"] >= 0 for p in body["points"])
    posted = post(client, NEAREST, {"resource": "monaco-osrm", "coordinates": "7.41337,43.72956", "nbPoints": 3}).json()
    assert posted == body
    projected = get(client, NEAREST, resource="monaco-osrm", coordinates="825252.6,5423685.9", crs="EPSG:3857").json()
    assert projected["points"][0]["geometry"][0] > 1000


def test_isochrone_is_not_offered_by_an_osrm_service(client: TestClient) -> None:
    message = error_of(
        get(client, "/simple/1.0.0/isochrone", resource="monaco-osrm", point="7.41337,43.72956", costType="time", costValue="300")
    )
    assert "isochrone" in message and "not permitted" in message


def test_cors_preflight_is_answered_at_service_level(client: TestClient) -> None:
    response = client.options(
        ROUTE,
        headers={
            "origin": "https://app.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] in ("*", "https://app.example")
    assert get(client, ROUTE, **BASE).status_code == 200
    assert client.get(ROUTE, params=BASE, headers={"origin": "https://app.example"}).headers["access-control-allow-origin"] == "*"


def test_no_path_and_bad_input_are_logged_at_debug_level_only(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    ban = '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}'
    with caplog.at_level(logging.DEBUG, logger="roadkit"):
        get(client, ROUTE, resource="monaco-osrm", start="7.38076,43.74470", end="7.44436,43.75035", constraints=ban)
        get(client, ROUTE, **BASE, profile="bike")
    records = [r for r in caplog.records if r.name.startswith("roadkit")]
    # Written while the request is served, in process: the message starts with its id (roadkit.requestid).
    messages = {r.getMessage().partition(": ")[2] for r in records if r.getMessage().startswith("request=")}
    assert messages >= {
        "no_path: No path found",
        "parameter_invalid: Parameter 'profile' is invalid: expected one of car, pedestrian, got 'bike'",
    }
    assert all(r.levelno == logging.DEBUG for r in records)
