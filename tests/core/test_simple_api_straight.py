"""The simple API 1.0.0 on the ``straight`` test kind of roadkit.testing: core's behaviour with exact numbers.

Every parameter's parsing, validation, conversion and output format is core's, whatever the engine:
here the engine answers in straight lines (``roadkit.testing.straight``), so the numbers are
computable. The tests that need a real engine (its polyline, profiles, constraints, no path) stay
on OSRM in ``tests/engine_a/test_simple_api.py``. Most tests share one module client; the
``roadkit_*`` fixtures of roadkit's pytest plugin serve the tests that need their own service.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from pyproj import Transformer
from starlette.testclient import TestClient

from roadkit.plugins import Plugins
from roadkit.routing.geometry import decode_polyline, encode_polyline
from roadkit.routing.source import Source
from roadkit.testing import (
    SourceContract,
    StraightSource,
    great_circle,
    service_client,
    straight_plugins,
    straight_resource,
    straight_source,
    write_service,
)
from roadkit.testing.plugin import ClientFactory, ServiceFiles

ROUTE = "/simple/1.0.0/route"
NEAREST = "/simple/1.0.0/nearest"
ISOCHRONE = "/simple/1.0.0/isochrone"
MONACO = "7.349,43.71,7.491,43.77"
START, END = (7.41337, 43.72956), (7.41983, 43.73115)
VIA = [(7.4246, 43.7383), (7.4200, 43.7350)]
BASE = {"resource": "lines", "start": "7.41337,43.72956", "end": "7.41983,43.73115"}
CAR = 10.0  # m/s: 36 km/h
TO_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """A client of a service with resource ``lines``: the default straight source, within Monaco's bbox."""
    service = write_service(
        tmp_path_factory.mktemp("straight"), {"straight": straight_source()}, {"lines": straight_resource("lines", bbox=MONACO)}
    )
    with service_client(service, straight_plugins()) as test_client:
        yield test_client


def get(client: TestClient, path: str, **params: Any) -> Any:
    return client.get(path, params=params)


def post(client: TestClient, path: str, body: Any) -> Any:
    return client.post(path, json=body)


def error_of(response: Any, status: int = 400) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"errorType", "message"}
    return str(body["error"]["message"])


# -- the fixtures of roadkit's pytest plugin ---------------------------------------------------------------


def test_the_pytest_plugin_is_an_installed_entry_point() -> None:
    (plugin,) = [ep for ep in entry_points(group="pytest11") if ep.name == "roadkit"]
    assert plugin.value == "roadkit.testing.plugin"
    assert plugin.load().__name__ == "roadkit.testing.plugin"


def test_production_plugins_offer_no_straight_kind(roadkit_plugins: Plugins) -> None:
    assert "straight" not in Plugins.create().source_kinds()
    assert roadkit_plugins.source_kinds()["straight"] is StraightSource


def test_the_plugin_module_imports_no_roadkit_module_but_the_package() -> None:
    import subprocess
    import sys

    code = "import sys, roadkit.testing.plugin; print(sorted(m for m in sys.modules if m.startswith('roadkit')))"
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert json.loads(loaded.replace("'", '"')) == ["roadkit", "roadkit.testing", "roadkit.testing.plugin"]


def test_the_default_service_offers_every_operation(roadkit_client: ClientFactory) -> None:
    with roadkit_client() as test_client:
        capabilities = test_client.get("/simple/1.0.0/getcapabilities").json()
        route = get(test_client, ROUTE, resource="straight", start="0,0", end="1,0", timeUnit="second").json()
    assert [r["id"] for r in capabilities["resources"]] == ["straight"]
    assert [o["id"] for o in capabilities["resources"][0]["availableOperations"]] == ["route", "isochrone", "nearest", "matrix"]
    assert route["distance"] == pytest.approx(math.radians(1) * 6_371_008.8)
    assert route["duration"] == pytest.approx(route["distance"] / CAR)


def test_service_files_are_written_from_documents(roadkit_service_files: ServiceFiles, roadkit_client: ClientFactory) -> None:
    sources = {"slow": straight_source("slow", car=18), "fast": straight_source("fast", car=72)}
    resources = {"slow": straight_resource("slow", sources=["slow"]), "fast": straight_resource("fast", sources=["fast"])}
    service = roadkit_service_files(sources, resources)
    assert sorted(p.name for p in (service.parent / "sources").iterdir()) == ["fast.source", "slow.source"]
    assert roadkit_service_files() != service  # each call its own folder
    with roadkit_client(service) as test_client:
        slow = get(test_client, ROUTE, resource="slow", start="0,0", end="0,1", timeUnit="second").json()
        fast = get(test_client, ROUTE, resource="fast", start="0,0", end="0,1", timeUnit="second").json()
    assert slow["duration"] == pytest.approx(4 * fast["duration"])


def test_a_service_without_resources_starts(roadkit_service_files: ServiceFiles, roadkit_client: ClientFactory) -> None:
    with roadkit_client(roadkit_service_files(resources={})) as test_client:
        assert test_client.get("/simple/1.0.0/getcapabilities").json()["resources"] == []


def test_a_straight_source_refuses_bad_options(roadkit_service_files: ServiceFiles, roadkit_client: ClientFactory) -> None:
    from roadkit.config.loader import read_source
    from roadkit.errors import ConfigurationError

    bad = straight_source("bad").replace("speed = 3.6", "speed = 0.0").replace('"EPSG:4326"', '"EPSG:3857"')
    bad += '\n[[costs]]\nprofile = "car"\ncost_type = "time"\n'
    bad += "\n[limits]\nisochrone_distance = -1.0\n"
    path = roadkit_service_files({"bad": bad}, {}).parent / "sources" / "bad.source"
    with pytest.raises(ConfigurationError) as raised:
        StraightSource.from_config(read_source(path))
    problems = "\n".join(raised.value.problems)
    assert "costs[2].speed: expected km/h above 0" in problems and "projection: the straight kind" in problems
    assert "costs[3]: profile 'car' with cost_type time is declared twice" in problems
    assert "limits.isochrone_distance: expected a positive number" in problems


class TestStraightContract(SourceContract):
    """The core's source contract holds for the straight kind."""

    contract_step_instructions = True

    @pytest.fixture
    async def contract_source(self, roadkit_service_files: ServiceFiles) -> Source:
        from roadkit.config.loader import read_source

        path = roadkit_service_files().parent / "sources" / "straight.source"
        source = StraightSource.from_config(read_source(path))
        await source.connect()
        return source

    @pytest.fixture
    def contract_points(self) -> list[tuple[float, float]]:
        return [START, END]


# -- getcapabilities -----------------------------------------------------------------------------------------


def test_capabilities_list_the_resource_operations_and_their_urls(client: TestClient) -> None:
    body = client.get("/simple/1.0.0/getcapabilities").json()
    assert list(body) == ["info", "provider", "api", "operations", "resources"]
    assert body["api"] == {"name": "simple", "version": "1.0.0"}
    assert body["info"]["url"] == "http://testserver/simple/1.0.0/"
    assert [(o["id"], o["url"], o["methods"]) for o in body["operations"]] == [
        (op, f"http://testserver/simple/1.0.0/{op}?", ["GET", "POST"]) for op in ("route", "isochrone", "nearest", "matrix")
    ]
    (resource,) = body["resources"]
    assert resource["id"] == "lines"
    operations = {o["id"]: {p["id"]: p for p in o["availableParameters"]} for o in resource["availableOperations"]}
    assert list(operations) == ["route", "isochrone", "nearest", "matrix"]
    route = operations["route"]
    assert route["start"]["values"] == {"bbox": MONACO, "projection": "EPSG:4326"}
    assert route["profile"] == {"id": "profile", "values": ["car", "pedestrian"], "defaultValue": "car"}
    assert route["crs"]["values"] == ["EPSG:4326", "EPSG:3857"]
    assert operations["nearest"]["nbPoints"]["values"] == {"min": 1, "max": 10}
    assert operations["isochrone"]["costType"]["values"] == ["time", "distance"]
    # Road2's shapes: the isochrone's crs also as projection (Road2's name), required/default as strings.
    isochrone = [p["id"] for p in resource["availableOperations"][1]["availableParameters"]]
    assert isochrone.index("projection") + 1 == isochrone.index("crs")
    assert operations["isochrone"]["projection"]["values"] == operations["isochrone"]["crs"]["values"]
    start = next(p for p in body["operations"][0]["parameters"] if p["name"] == "start")
    assert (start["required"], start["default"]) == ("true", "false")
    assert body["info"]["keywords"] == {}


# -- route ------------------------------------------------------------------------------------------------


def test_route_get_and_post_give_the_same_answer(client: TestClient) -> None:
    by_get = get(client, ROUTE, **BASE)
    by_post = post(client, ROUTE, BASE)
    assert by_get.status_code == by_post.status_code == 200
    assert by_get.json() == by_post.json()


def test_route_response_has_road2_fields_in_order_and_exact_numbers(client: TestClient) -> None:
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
    assert (body["resource"], body["resourceVersion"]) == ("lines", "1.0")
    assert (body["start"], body["end"]) == (BASE["start"], BASE["end"])
    assert (body["profile"], body["optimization"], body["crs"]) == ("car", "fastest", "EPSG:4326")
    assert body["geometry"] == {"type": "LineString", "coordinates": [list(START), list(END)]}
    assert (body["distanceUnit"], body["timeUnit"]) == ("meter", "minute")
    assert body["bbox"] == [START[0], START[1], END[0], END[1]]
    meters = great_circle(START, END)
    assert body["distance"] == pytest.approx(meters)
    assert body["duration"] == pytest.approx(meters / CAR / 60)
    assert body["constraints"] == []
    (portion,) = body["portions"]
    assert (portion["start"], portion["end"]) == (BASE["start"], BASE["end"])
    assert [s["instruction"] for s in portion["steps"]] == [{"type": "depart"}, {"type": "arrive"}]
    assert portion["steps"][0]["distance"] == pytest.approx(meters)
    assert portion["steps"][0]["attributes"] == {"name": ""}


def test_pedestrian_and_shortest_use_their_costs(client: TestClient) -> None:
    car = get(client, ROUTE, **BASE, timeUnit="second").json()
    walking = get(client, ROUTE, **BASE, profile="pedestrian", timeUnit="second").json()
    shortest = get(client, ROUTE, **BASE, optimization="shortest", timeUnit="second").json()
    assert walking["distance"] == car["distance"] == shortest["distance"]
    assert walking["duration"] == pytest.approx(10 * car["duration"])
    assert shortest["duration"] == pytest.approx(car["duration"])


def test_post_accepts_strings_and_native_json_scalars(client: TestClient) -> None:
    as_strings = post(client, ROUTE, {**BASE, "getSteps": "false", "getBbox": "false"}).json()
    as_native = post(client, ROUTE, {**BASE, "getSteps": False, "getBbox": False}).json()
    assert as_strings == as_native
    assert as_native["portions"][0]["steps"] == [] and "bbox" not in as_native
    assert "bbox" not in as_native["portions"][0]


def test_intermediates_make_portions_in_order(client: TestClient) -> None:
    via = [f"{x},{y}" for x, y in VIA]
    by_get = get(client, ROUTE, **BASE, intermediates="|".join(via), timeUnit="second").json()
    by_post = post(client, ROUTE, {**BASE, "intermediates": via, "timeUnit": "second"}).json()
    assert by_get == by_post
    points = [START, *VIA, END]
    assert by_get["geometry"]["coordinates"] == [list(p) for p in points]
    portions = by_get["portions"]
    assert [(p["start"], p["end"]) for p in portions] == [(BASE["start"], via[0]), (via[0], via[1]), (via[1], BASE["end"])]
    for portion, a, b in zip(portions, points, points[1:], strict=False):
        assert portion["distance"] == pytest.approx(great_circle(a, b))
        assert portion["duration"] == pytest.approx(great_circle(a, b) / CAR)
        assert portion["bbox"] == [min(a[0], b[0]), min(a[1], b[1]), max(a[0], b[0]), max(a[1], b[1])]
    assert sum(p["distance"] for p in portions) == pytest.approx(by_get["distance"])


def test_too_many_intermediates_is_rejected(client: TestClient) -> None:
    message = error_of(get(client, ROUTE, **BASE, intermediates="|".join(["7.42,43.735"] * 11)))
    assert "intermediates" in message and "between 0 and 10" in message


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("fmt", ["geojson", "polyline", "wkt"])
def test_geometry_formats_write_the_line(client: TestClient, fmt: str, method: str) -> None:
    query = {**BASE, "geometryFormat": fmt}
    body = (get(client, ROUTE, **query) if method == "get" else post(client, ROUTE, query)).json()
    geometry, step = body["geometry"], body["portions"][0]["steps"][0]["geometry"]
    if fmt == "geojson":
        assert geometry == step == {"type": "LineString", "coordinates": [list(START), list(END)]}
    elif fmt == "polyline":
        assert geometry == step == encode_polyline([START, END])
        assert decode_polyline(geometry) == [START, END]
    else:
        assert geometry == step == "LINESTRING(7.41337 43.72956,7.41983 43.73115)"


def test_a_polyline_without_coordinates_needed_is_the_same_line(client: TestClient) -> None:
    body = get(client, ROUTE, **BASE, geometryFormat="polyline", getSteps="false", getBbox="false").json()
    assert body["geometry"] == encode_polyline([START, END])


def test_units_convert_distance_and_duration(client: TestClient) -> None:
    meters = great_circle(START, END)
    seconds = get(client, ROUTE, **BASE, timeUnit="second").json()
    km = get(client, ROUTE, **BASE, distanceUnit="kilometer", timeUnit="hour").json()
    standard = get(client, ROUTE, **BASE, timeUnit="standard").json()
    assert (seconds["distance"], seconds["duration"]) == pytest.approx((meters, meters / CAR))
    assert (km["distance"], km["duration"]) == pytest.approx((meters / 1000, meters / CAR / 3600))
    assert (km["distanceUnit"], km["timeUnit"]) == ("kilometer", "hour")
    assert km["portions"][0]["distance"] == pytest.approx(meters / 1000)
    assert km["portions"][0]["steps"][0]["duration"] == pytest.approx(meters / CAR / 3600)
    hours, minutes, secs = standard["duration"].split(":")
    assert int(hours) * 3600 + int(minutes) * 60 + float(secs) == pytest.approx(meters / CAR, abs=0.06)


def test_crs_applies_to_input_points_and_output(client: TestClient) -> None:
    start, end = TO_3857.transform(*START), TO_3857.transform(*END)
    query = {**BASE, "crs": "EPSG:3857", "start": f"{start[0]:.2f},{start[1]:.2f}", "end": f"{end[0]:.2f},{end[1]:.2f}"}
    body = get(client, ROUTE, **query).json()
    assert body["crs"] == "EPSG:3857"
    assert (body["start"], body["end"]) == (query["start"], query["end"])
    assert body["distance"] == pytest.approx(great_circle(START, END), abs=0.05)  # the points given to the centimetre
    (x0, y0), (x1, y1) = body["geometry"]["coordinates"]
    assert (x0, y0, x1, y1) == pytest.approx((*start, *end), abs=0.01)
    assert body["bbox"] == pytest.approx([start[0], start[1], end[0], end[1]], abs=0.01)
    assert body["portions"][0]["steps"][0]["geometry"]["coordinates"] == body["geometry"]["coordinates"]


def test_points_outside_the_bbox_are_400s_naming_the_parameter(client: TestClient) -> None:
    assert "x = 2.35 is not in the bbox" in error_of(get(client, ROUTE, **{**BASE, "start": "2.35,48.85"}))
    assert error_of(get(client, ROUTE, **{**BASE, "end": "7.42,-43.7"})).startswith("Parameter 'end' is invalid")
    message = error_of(get(client, ROUTE, **BASE, intermediates="7.42,43.735|7.5,43.735"))
    assert message.startswith("Parameter 'intermediates' is invalid") and "x = 7.5 is not in the bbox" in message
    outside = TO_3857.transform(2.35, 48.85)
    end = TO_3857.transform(*END)
    query = {**BASE, "crs": "EPSG:3857", "start": f"{outside[0]:.2f},{outside[1]:.2f}", "end": f"{end[0]:.2f},{end[1]:.2f}"}
    message = error_of(get(client, ROUTE, **query))
    assert message.startswith("Parameter 'start' is invalid") and "not in the bbox" in message


def test_profile_and_optimization_must_be_compatible(client: TestClient) -> None:
    message = error_of(get(client, ROUTE, **BASE, profile="pedestrian", optimization="shortest"))
    assert message.startswith("Parameters 'profile' and 'optimization' are not compatible")  # Road2's wording
    assert "profile 'pedestrian' with optimization 'shortest' is not offered by this resource" in message


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
        ({"resource": "nowhere"}, "Parameter 'resource' is invalid: it does not exist on this service (got 'nowhere')"),
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


def test_spaces_around_pipes_are_accepted_as_road2_does(client: TestClient) -> None:
    spaced = get(client, ROUTE, **BASE, waysAttributes="name | name", intermediates="7.42,43.73 | 7.416,43.732")
    plain = get(client, ROUTE, **BASE, waysAttributes="name|name", intermediates="7.42,43.73|7.416,43.732")
    assert spaced.status_code == 200, spaced.text
    assert spaced.json() == plain.json()
    assert "Parameter 'waysAttributes' is invalid" in error_of(get(client, ROUTE, **BASE, waysAttributes="name | speed"))


def test_a_repeated_query_key_is_rejected(client: TestClient) -> None:
    response = client.get(ROUTE + "?resource=lines&start=7.41337,43.72956&start=7.41,43.72&end=7.41983,43.73115")
    assert "Parameter 'start' is invalid: given more than once" in error_of(response)


def test_unknown_parameters_and_empty_values_are_ignored(client: TestClient) -> None:
    assert get(client, ROUTE, **BASE, test="1", ressource="x", profile="").status_code == 200


@pytest.mark.parametrize(
    ("content", "headers", "expected"),
    [
        (b"{not json", {"content-type": "application/json"}, "Invalid request body"),
        (b'{"resource": "lines"}', {"content-type": "text/plain"}, "Wrong Content-Type"),
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


def test_unknown_paths_are_404_in_the_error_shape(client: TestClient) -> None:
    assert error_of(client.get("/simple/1.0.0/itinerary"), 404).startswith("Not found")
    assert error_of(client.get("/nowhere"), 404).startswith("Not found")


def test_responses_carry_security_headers(client: TestClient) -> None:
    response = get(client, ROUTE, **BASE)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert "content-security-policy" in response.headers


# -- nearest ----------------------------------------------------------------------------------------------


def test_nearest_returns_the_point_as_many_times_as_asked(client: TestClient) -> None:
    body = get(client, NEAREST, resource="lines", coordinates="7.41337,43.72956", nbPoints="3").json()
    assert body == {
        "resource": "lines",
        "resourceVersion": "1.0",
        "coordinates": "7.41337,43.72956",
        "crs": "EPSG:4326",
        "points": [{"id": str(i), "geometry": list(START), "distance": 0.0} for i in range(3)],
    }
    posted = post(client, NEAREST, {"resource": "lines", "coordinates": "7.41337,43.72956", "nbPoints": 3}).json()
    assert posted == body
    assert len(get(client, NEAREST, resource="lines", coordinates="7.41337,43.72956").json()["points"]) == 1


def test_nearest_in_another_crs(client: TestClient) -> None:
    x, y = TO_3857.transform(*START)
    body = get(client, NEAREST, resource="lines", coordinates=f"{x:.2f},{y:.2f}", crs="EPSG:3857").json()
    assert body["crs"] == "EPSG:3857"
    assert body["points"][0]["geometry"] == pytest.approx([x, y], abs=0.01)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("50000", "above the maximum 10"), ("0", "below the minimum 1"), ("test", "expected an integer"), ("5abc", "expected an integer")],
)
def test_nearest_nb_points_is_checked(client: TestClient, value: str, expected: str) -> None:
    message = error_of(get(client, NEAREST, resource="lines", coordinates="7.41337,43.72956", nbPoints=value))
    assert message.startswith("Parameter 'nbPoints' is invalid") and expected in message


def test_nearest_errors_name_their_parameter(client: TestClient) -> None:
    assert error_of(get(client, NEAREST, resource="nowhere", coordinates="7.41337,43.72956")).startswith("Parameter 'resource' is invalid")
    assert error_of(get(client, NEAREST, resource="lines", coordinates="2.35,48.85")).startswith("Parameter 'coordinates' is invalid")
    assert "Parameter 'coordinates' not found" in error_of(get(client, NEAREST, resource="lines"))


# -- isochrone --------------------------------------------------------------------------------------------


def radii(ring: list[list[float]], center: tuple[float, float]) -> list[float]:
    return [great_circle(center, (x, y)) for x, y in ring]


def test_a_time_isochrone_is_a_circle_of_speed_times_time(client: TestClient) -> None:
    body = get(client, ISOCHRONE, resource="lines", point="7.41337,43.72956", costValue="60").json()
    assert (body["costType"], body["costValue"], body["timeUnit"], body["profile"], body["direction"]) == (
        "time",
        60.0,
        "second",
        "car",
        "departure",
    )
    assert body["reachable"] is True and body["constraints"] == []
    assert body["geometry"]["type"] == "Polygon"
    (ring,) = body["geometry"]["coordinates"]
    assert ring[0] == ring[-1] and len(ring) == 65
    assert radii(ring, START) == pytest.approx([600.0] * 65, rel=1e-9)
    posted = post(client, ISOCHRONE, {"resource": "lines", "point": "7.41337,43.72956", "costValue": 60}).json()
    assert posted == body


def test_isochrone_units_and_contours(client: TestClient) -> None:
    minutes = get(client, ISOCHRONE, resource="lines", point="7.41337,43.72956", costValue="1|2", timeUnit="minute").json()
    assert minutes["costValue"] == [1.0, 2.0]
    assert [c["costValue"] for c in minutes["contours"]] == [1.0, 2.0]
    for contour, meters in zip(minutes["contours"], (600.0, 1200.0), strict=True):
        assert contour["reachable"] is True
        assert radii(contour["geometry"]["coordinates"][0], START) == pytest.approx([meters] * 65, rel=1e-9)
    km = get(
        client, ISOCHRONE, resource="lines", point="7.41337,43.72956", costType="distance", costValue="1.5", distanceUnit="kilometer"
    ).json()
    assert (km["costType"], km["distanceUnit"]) == ("distance", "kilometer") and "timeUnit" not in km
    assert radii(km["geometry"]["coordinates"][0], START) == pytest.approx([1500.0] * 65, rel=1e-9)


def test_isochrone_formats_and_crs(client: TestClient) -> None:
    query = {"resource": "lines", "point": "7.41337,43.72956", "costValue": "60"}
    geojson = get(client, ISOCHRONE, **query).json()["geometry"]
    wkt = get(client, ISOCHRONE, **query, geometryFormat="wkt").json()["geometry"]
    polyline = get(client, ISOCHRONE, **query, geometryFormat="polyline").json()["geometry"]
    assert wkt.startswith("POLYGON((") and wkt.count(",") == 64
    decoded = [c for xy in decode_polyline(polyline) for c in xy]
    assert decoded == pytest.approx([c for xy in geojson["coordinates"][0] for c in xy], abs=0.6e-5)
    x, y = TO_3857.transform(*START)
    projected = get(client, ISOCHRONE, resource="lines", point=f"{x:.3f},{y:.3f}", costValue="60", crs="EPSG:3857").json()
    ring = projected["geometry"]["coordinates"][0]
    expected = [TO_3857.transform(*xy) for xy in geojson["coordinates"][0]]
    assert [c for xy in ring for c in xy] == pytest.approx([c for xy in expected for c in xy], abs=0.01)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"point": None}, "Parameter 'point' not found"),
        ({"point": "2.35,48.85"}, "Parameter 'point' is invalid"),
        ({"resource": "nowhere"}, "Parameter 'resource' is invalid: it does not exist on this service (got 'nowhere')"),
        ({"profile": "pedestrian"}, "Parameter 'profile' is invalid"),
        ({"costType": "money"}, "Parameter 'costType' is invalid"),
        ({"costValue": "0"}, "Parameter 'costValue' is invalid"),
        ({"costValue": "x"}, "Parameter 'costValue' is invalid"),
        ({"direction": "sideways"}, "Parameter 'direction' is invalid"),
        ({"timeUnit": "standard"}, "Parameter 'timeUnit' is invalid"),
        ({"distanceUnit": "mile"}, "Parameter 'distanceUnit' is invalid"),
        ({"crs": "EPSG:2154"}, "Parameter 'crs' is invalid"),
    ],
)
def test_every_invalid_isochrone_parameter_is_a_400_naming_it(client: TestClient, params: dict[str, Any], expected: str) -> None:
    query = {k: v for k, v in {"resource": "lines", "point": "7.41337,43.72956", "costValue": "60", **params}.items() if v is not None}
    assert expected in error_of(get(client, ISOCHRONE, **query))
    assert expected in error_of(post(client, ISOCHRONE, query))


def test_an_isochrone_above_the_sources_limit_is_a_400(roadkit_service_files: ServiceFiles, roadkit_client: ClientFactory) -> None:
    limited = straight_source() + "\n[limits]\nisochrone_time = 120.0\n"
    with roadkit_client(roadkit_service_files({"straight": limited})) as test_client:
        assert get(test_client, ISOCHRONE, resource="straight", point="0,0", costValue="120").status_code == 200
        message = error_of(get(test_client, ISOCHRONE, resource="straight", point="0,0", costValue="3", timeUnit="minute"))
    assert message.startswith("Parameter 'costValue' is invalid") and "expected at most 2 (minute)" in message


def test_fixture_files_are_in_tmp_path(roadkit_service_files: ServiceFiles, tmp_path: Path) -> None:
    assert roadkit_service_files().is_relative_to(tmp_path)


def test_an_unexpected_error_is_a_json_500_with_the_security_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug must not answer a bare text 500 without the headers, on the direct GET path or through Starlette."""
    from roadkit.config import load_service
    from roadkit.serving.app import create_app

    async def broken(self: StraightSource, request: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(StraightSource, "route", broken)
    service = write_service(tmp_path, {"straight": straight_source()}, {"lines": straight_resource("lines", bbox=MONACO)})
    with TestClient(create_app(load_service(service), straight_plugins()), raise_server_exceptions=False) as broken_client:
        for response in (broken_client.get(ROUTE, params=BASE), broken_client.post(ROUTE, json=BASE)):
            assert response.status_code == 500
            assert response.json() == {"error": {"errorType": "internal", "message": "Internal Server Error"}}
            assert response.headers["x-content-type-options"] == "nosniff"
            assert "content-security-policy" in response.headers
