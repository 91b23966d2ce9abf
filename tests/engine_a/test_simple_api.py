"""The simple API 1.0.0 on the Monaco OSRM resource: every parameter and every error, GET and POST."""

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


def test_route_get_and_post_give_the_same_answer(client: TestClient) -> None:
    by_get = get(client, ROUTE, **BASE)
    by_post = post(client, ROUTE, BASE)
    assert by_get.status_code == by_post.status_code == 200
    assert by_get.json() == by_post.json()


def test_route_response_has_road2_fields_in_order(client: TestClient) -> None:
    body = get(client, ROUTE, **BASE).json()
    assert list(body) == [
        "resource",
        "resourceVersion",
        "start",
        "end",
        "profile",
        "optimization",
        "geometry",
        "crs",
        "distanceUnit",
        "timeUnit",
        "bbox",
        "distance",
        "duration",
        "constraints",
        "portions",
    ]
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


def test_post_accepts_strings_and_native_json_scalars(client: TestClient) -> None:
    as_strings = post(client, ROUTE, {**BASE, "getSteps": "false", "getBbox": "false"}).json()
    as_native = post(client, ROUTE, {**BASE, "getSteps": False, "getBbox": False}).json()
    assert as_strings == as_native
    assert as_native["portions"][0]["steps"] == [] and "bbox" not in as_native


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


def test_too_many_intermediates_is_rejected(client: TestClient) -> None:
    message = error_of(get(client, ROUTE, **BASE, intermediates="|".join(["7.42,43.735"] * 11)))
    assert "intermediates" in message and "between 0 and 10" in message


@pytest.mark.parametrize("fmt", ["geojson", "polyline", "wkt"])
def test_geometry_formats_describe_the_same_line(client: TestClient, fmt: str) -> None:
    reference = get(client, ROUTE, **BASE)
    body = get(client, ROUTE, **BASE, geometryFormat=fmt).json()
    coords = [tuple(c) for c in reference.json()["geometry"]["coordinates"]]
    geometry = body["geometry"]
    if fmt == "geojson":
        assert geometry["type"] == "LineString"
    elif fmt == "polyline":
        assert isinstance(geometry, str)
        decoded = decode_polyline(geometry)
        assert len(decoded) == len(coords)
        assert all(abs(x - cx) < 1e-5 and abs(y - cy) < 1e-5 for (x, y), (cx, cy) in zip(decoded, coords, strict=True))
        assert isinstance(body["portions"][0]["steps"][0]["geometry"], str)
    else:
        assert geometry.startswith("LINESTRING(") and geometry.count(",") == len(coords) - 1


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


@pytest.mark.parametrize("crs", ["EPSG:3857", "EPSG:2154"])
def test_crs_applies_to_input_points_and_output(client: TestClient, crs: str) -> None:
    from pyproj import Transformer

    to_crs = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    start = to_crs.transform(7.41337, 43.72956)
    end = to_crs.transform(7.41983, 43.73115)
    body = get(
        client, ROUTE, resource="monaco-osrm", crs=crs, start=f"{start[0]:.3f},{start[1]:.3f}", end=f"{end[0]:.3f},{end[1]:.3f}"
    ).json()
    reference = get(client, ROUTE, **BASE).json()
    assert body["crs"] == crs
    assert body["distance"] == pytest.approx(reference["distance"], rel=1e-3)
    x, y = body["geometry"]["coordinates"][0]
    rx, ry = to_crs.transform(*reference["geometry"]["coordinates"][0])
    assert (x, y) == pytest.approx((rx, ry), abs=1.0)
    sx, sy = map(float, body["start"].split(","))
    assert (sx, sy) == pytest.approx((rx, ry), abs=1.0)
    assert body["bbox"][0] > 1000  # meters, not degrees


def test_units_convert_distance_and_duration(client: TestClient) -> None:
    meters = get(client, ROUTE, **BASE, timeUnit="second").json()
    km = get(client, ROUTE, **BASE, distanceUnit="kilometer", timeUnit="hour").json()
    standard = get(client, ROUTE, **BASE, timeUnit="standard").json()
    assert km["distance"] == pytest.approx(meters["distance"] / 1000)
    assert km["duration"] == pytest.approx(meters["duration"] / 3600)
    hours, minutes, seconds = standard["duration"].split(":")
    assert int(hours) * 3600 + int(minutes) * 60 + float(seconds) == pytest.approx(meters["duration"], abs=0.06)


def test_shortest_and_pedestrian_profiles_use_their_sources(client: TestClient) -> None:
    fastest = get(client, ROUTE, **BASE).json()
    shortest = get(client, ROUTE, **BASE, optimization="shortest").json()
    walking = get(client, ROUTE, **BASE, profile="pedestrian").json()
    assert shortest["distance"] <= fastest["distance"]
    assert walking["duration"] > fastest["duration"]


def test_profile_and_optimization_must_be_compatible(client: TestClient) -> None:
    message = error_of(get(client, ROUTE, **BASE, profile="pedestrian", optimization="shortest"))
    assert "not compatible" in message


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
        ('{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}', "value: expected one of autoroute, peage, bac"),
    ],
)
def test_invalid_constraints_are_rejected(client: TestClient, constraint: str, expected: str) -> None:
    message = error_of(get(client, ROUTE, **BASE, constraints=constraint))
    assert message.startswith("Parameter 'constraints' is invalid") and expected in message


def test_a_route_made_impossible_is_a_404(client: TestClient) -> None:
    ban = '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}'
    response = get(client, ROUTE, resource="monaco-osrm", start="7.38076,43.74470", end="7.44436,43.75035", constraints=ban)
    assert error_of(response, 404) == "No path found"


def test_date_time_is_validated(client: TestClient) -> None:
    assert get(client, ROUTE, **BASE, date_time="2026-11-22T08:30").status_code == 200
    assert "YYYY-MM-DDTHH:mm" in error_of(get(client, ROUTE, **BASE, date_time="2026-11-22 08:30"))
    assert "not a valid date" in error_of(get(client, ROUTE, **BASE, date_time="2026-13-40T08:30"))


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"start": None}, "Parameter 'start' not found"),
        ({"end": None}, "Parameter 'end' not found"),
        ({"resource": None}, "Parameter 'resource' not found"),
        ({"resource": "nowhere"}, "Parameter 'resource' is invalid: 'nowhere' does not exist"),
        ({"start": "7.41;43.72"}, "Parameter 'start' is invalid: expected a point 'x,y'"),
        ({"start": "1e3,43.72"}, "Parameter 'start' is invalid"),
        ({"start": "2.35,48.85"}, "x = 2.35 is not in the bbox"),
        ({"end": "7.42,-43.7"}, "y = -43.7 is not in the bbox"),
        ({"profile": "bike"}, "Parameter 'profile' is invalid: expected one of car, pedestrian"),
        ({"optimization": "greenest"}, "Parameter 'optimization' is invalid"),
        ({"getSteps": "yes"}, "Parameter 'getSteps' is invalid: expected 'true' or 'false'"),
        ({"getBbox": "1"}, "Parameter 'getBbox' is invalid"),
        ({"waysAttributes": "speed"}, "Parameter 'waysAttributes' is invalid: expected one of name"),
        ({"geometryFormat": "kml"}, "Parameter 'geometryFormat' is invalid"),
        ({"crs": "EPSG:27700"}, "Parameter 'crs' is invalid"),
        ({"timeUnit": "day"}, "Parameter 'timeUnit' is invalid"),
        ({"distanceUnit": "mile"}, "Parameter 'distanceUnit' is invalid"),
        ({"intermediates": "7.42,43.73|oops"}, "Parameter 'intermediates' is invalid"),
    ],
)
def test_every_invalid_route_parameter_is_a_400_naming_it(client: TestClient, params: dict[str, Any], expected: str) -> None:
    query = {k: v for k, v in {**BASE, **params}.items() if v is not None}
    assert expected in error_of(get(client, ROUTE, **query))
    assert expected in error_of(post(client, ROUTE, query))


def test_a_repeated_query_key_is_rejected(client: TestClient) -> None:
    response = client.get(ROUTE + "?resource=monaco-osrm&start=7.41337,43.72956&start=7.41,43.72&end=7.41983,43.73115")
    assert "Parameter 'start' is invalid: given more than once" in error_of(response)


def test_unknown_parameters_and_empty_values_are_ignored(client: TestClient) -> None:
    assert get(client, ROUTE, **BASE, test="1", ressource="x", profile="").status_code == 200


@pytest.mark.parametrize(
    ("content", "headers", "expected"),
    [
        (b"{not json", {"content-type": "application/json"}, "Invalid request body"),
        (b'{"resource": "monaco-osrm"}', {"content-type": "text/plain"}, "Wrong Content-Type"),
        (b"[1, 2]", {"content-type": "application/json"}, "expected a JSON object"),
    ],
)
def test_bad_post_bodies_are_400(client: TestClient, content: bytes, headers: dict[str, str], expected: str) -> None:
    assert expected in error_of(client.post(ROUTE, content=content, headers=headers))


def test_json_with_a_charset_is_accepted(client: TestClient) -> None:
    response = client.post(ROUTE, content=json.dumps(BASE).encode(), headers={"content-type": "application/json; charset=utf-8"})
    assert response.status_code == 200


def test_post_multi_valued_must_be_arrays_or_strings(client: TestClient) -> None:
    assert "empty array" in error_of(post(client, ROUTE, {**BASE, "intermediates": []}))
    assert "Parameter 'intermediates' is invalid" in error_of(post(client, ROUTE, {**BASE, "intermediates": {"x": 1}}))
    assert "Parameter 'start' is invalid" in error_of(post(client, ROUTE, {**BASE, "start": 7.4}))


def test_oversized_body_is_413(client: TestClient) -> None:
    response = client.post(ROUTE, content=b"{" + b" " * 2_000_000 + b"}", headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_nearest_returns_points_in_the_request_crs(client: TestClient) -> None:
    body = get(client, NEAREST, resource="monaco-osrm", coordinates="7.41337,43.72956", nbPoints="3").json()
    assert list(body) == ["resource", "resourceVersion", "coordinates", "crs", "points"]
    assert [p["id"] for p in body["points"]] == ["0", "1", "2"]
    assert all(p["distance"] >= 0 for p in body["points"])
    posted = post(client, NEAREST, {"resource": "monaco-osrm", "coordinates": "7.41337,43.72956", "nbPoints": 3}).json()
    assert posted == body
    projected = get(client, NEAREST, resource="monaco-osrm", coordinates="825252.6,5423685.9", crs="EPSG:3857").json()
    assert projected["points"][0]["geometry"][0] > 1000


@pytest.mark.parametrize(
    ("value", "expected"),
    [("50000", "above the maximum 10"), ("0", "below the minimum 1"), ("test", "expected an integer"), ("5abc", "expected an integer")],
)
def test_nearest_nb_points_is_checked(client: TestClient, value: str, expected: str) -> None:
    message = error_of(get(client, NEAREST, resource="monaco-osrm", coordinates="7.41337,43.72956", nbPoints=value))
    assert message.startswith("Parameter 'nbPoints' is invalid") and expected in message


def test_isochrone_is_not_offered_by_an_osrm_service(client: TestClient) -> None:
    message = error_of(
        get(client, "/simple/1.0.0/isochrone", resource="monaco-osrm", point="7.41337,43.72956", costType="time", costValue="300")
    )
    assert "isochrone" in message and "not permitted" in message


def test_unknown_paths_are_404_in_the_error_shape(client: TestClient) -> None:
    assert error_of(client.get("/simple/1.0.0/itinerary"), 404).startswith("Not found")
    assert error_of(client.get("/nowhere"), 404).startswith("Not found")


def test_responses_carry_security_headers(client: TestClient) -> None:
    response = get(client, ROUTE, **BASE)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert "content-security-policy" in response.headers


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
    assert {r.getMessage() for r in records} >= {
        "no_path: No path found",
        "parameter_invalid: Parameter 'profile' is invalid: expected one of car, pedestrian, got 'bike'",
    }
    assert all(r.levelno == logging.DEBUG for r in records)
