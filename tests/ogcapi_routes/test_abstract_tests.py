"""The Abstract Test Suite of OGC API – Routes Part 1 (1.0.0-draft.1) and of its Route Exchange Model, one test each.

Each ``test_ats_<class>_<name>`` does what the abstract test's "Test method" says, on the three resources of the
Monaco demo (OSRM, Valhalla, pgRouting) served by one administrator. A class that a resource does not declare in
its conformance declaration is checked the other way round: not declared, and its members refused with a 400.
The height, weight and obstacles classes have their own tests (``test_ats_height_*`` ...) beside the engines'.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import numpy as np
import pytest
import shapely
from pyproj import Transformer
from shapely import LineString, Point

from tests import ogcapi_routes_support as ogc
from tests.road2.conftest import Demo

#: Every abstract test of the standard, read from opengeospatial/ogcapi-routes at commit 68f3cd4 (May 2025):
#: api/standard/annex-a.adoc (the API, 23 tests) and rem/standard/annex-a.adoc (the Route Exchange Model, 16).
API_TESTS = (
    "/conf/core/landing-page-link",
    "/conf/core/preferences",
    "/conf/core/compute-route-success",
    "/conf/core/compute-route-error-400",
    "/conf/core/compute-route-error-422",
    "/conf/core/compute-route-preference-success",
    "/conf/core/compute-route-preference-error-400",
    "/conf/intermediate-waypoints/compute-route-success",
    "/conf/mode/modes",
    "/conf/core/compute-route-mode",
    "/conf/height/compute-route-success",
    "/conf/weight/compute-route-success",
    "/conf/obstacles/compute-route-success",
    "/conf/time/compute-route-success-default",
    "/conf/time/compute-route-success",
    "/conf/time/compute-route-success-400-error",
    "/conf/manage-routes/routes-success-1",
    "/conf/manage-routes/routes-success-2",
    "/conf/manage-routes/get-routes-success",
    "/conf/manage-routes/get-route-success",
    "/conf/manage-routes/get-route-definition-success",
    "/conf/manage-routes/delete-route-success-1",
    "/conf/manage-routes/delete-route-success-2",
)
MODEL_TESTS = (
    "/conf/rem/validate-geojson",
    "/conf/rem/validate-coordinates",
    "/conf/rem/validate-bbox",
    "/conf/rem/validate-rem",
    "/conf/rem/features",
    "/conf/rem/segment-order",
    "/conf/rem/start-position",
    "/conf/rem/end-position",
    "/conf/rem/start-end-timestamp",
    "/conf/rem/overview-length",
    "/conf/rem/overview-length-computed",
    "/conf/rem/overview-duration",
    "/conf/rem/overview-height",
    "/conf/rem/overview-weight",
    "/conf/rem/processingTime",
    "/conf/rem/speedLimitUnit",
)

ENGINES = {"osrm": "monaco-osrm", "valhalla": "monaco-valhalla", "pgrouting": "monaco-pgrouting"}
SPEC = ogc.SPEC
#: The five positions of the tests ({pos1} to {pos5}): on Monaco's streets.
POSITIONS = ogc.FIVE
#: The largest distance, in metres, between a waypoint and the route's start, end or path (snapping to the street).
TOLERANCE_M = 60.0
#: Two positions that can't be waypoints ({posA}, {posB}): Paris, and the sea south of the resources' area.
UNUSABLE = ([2.35, 48.85], [7.42, 43.60])
#: https://geojson.org/schema/FeatureCollection.json (geojson/schema, MIT), the schema of /conf/rem/validate-geojson.
#: Both schemas are checked by jsonschema-rs (schemathesis's validator): thousands of routes in seconds.
GEOJSON = jsonschema_rs.Draft7Validator(json.loads((Path(__file__).parents[1] / "geojson-feature-collection.json").read_text()))
REM = jsonschema_rs.Draft201909Validator(ogc.REM_SCHEMA, validate_formats=True)
#: The schema of a stored route's definition (/conf/manage-routes/get-route-definition-success), as the abstract test writes it.
DEFINITION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["inputs"],
    "properties": {
        "inputs": {
            "type": "object",
            "required": ["waypoints"],
            "properties": {
                "name": {"type": "string"},
                "waypoints": {
                    "type": "object",
                    "required": ["value"],
                    "properties": {
                        "value": {
                            "type": "object",
                            "required": ["type", "coordinates"],
                            "properties": {
                                "type": {"type": "string", "enum": ["MultiPoint"]},
                                "coordinates": {
                                    "type": "array",
                                    "minItems": 2,
                                    "items": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "number"}},
                                },
                            },
                        }
                    },
                },
                "preference": {"type": "string"},
                "mode": {"type": "string"},
                "height": {"type": "number", "minimum": 0},
                "weight": {"type": "number", "minimum": 0},
                "obstacles": {
                    "type": "object",
                    "required": ["value"],
                    "properties": {
                        "value": {
                            "type": "object",
                            "required": ["type", "coordinates"],
                            "properties": {
                                "type": {"type": "string", "enum": ["MultiPolygon"]},
                                "coordinates": {
                                    "type": "array",
                                    "items": {
                                        "type": "array",
                                        "items": {
                                            "type": "array",
                                            "minItems": 4,
                                            "items": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "number"}},
                                        },
                                    },
                                },
                            },
                        }
                    },
                },
                "when": {
                    "type": "object",
                    "required": ["value"],
                    "properties": {
                        "value": {
                            "type": "object",
                            "required": ["timestamp"],
                            "properties": {
                                "timestamp": {"type": "string", "format": "date-time"},
                                "type": {"type": "string", "default": "departure", "enum": ["departure", "arrival"]},
                            },
                        }
                    },
                },
            },
        }
    },
}
DEFINITION = jsonschema_rs.Draft7Validator(DEFINITION_SCHEMA, validate_formats=True)
#: The schema of the list of routes (/req/manage-routes/get-routes-success B).
ROUTES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "links": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["rel", "href"],
                "properties": {
                    "href": {"type": "string"},
                    "rel": {"type": "string"},
                    "type": {"type": "string"},
                    "hreflang": {"type": "string"},
                    "title": {"type": "string"},
                },
            },
        }
    },
}
#: RFC 3339's date-time with the time offset "Z" (the model's timestamps and processing time).
UTC_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
#: Metres in UTM zone 32N, where Monaco is (the projected CRS of /conf/rem/overview-length-computed).
TO_METRES = Transformer.from_crs("EPSG:4326", "EPSG:32632", always_xy=True)


@dataclass(frozen=True)
class Api:
    """One resource's OGC API: ``uri`` is the standard's ``{apiURI}``."""

    http: httpx.Client
    rid: str
    uri: str

    def conformance(self) -> dict[str, Any]:
        answer = self.http.get(f"{self.uri}/conformance", headers={"Accept": "application/json"})
        assert answer.status_code == 200, answer.text
        document: dict[str, Any] = answer.json()
        return document

    def declares(self, name: str) -> bool:
        return SPEC + name in self.conformance()["conformsTo"]

    def post(self, body: Any) -> httpx.Response:
        headers = {"Content-Type": "application/json", "Accept": "application/geo+json"}
        return self.http.post(f"{self.uri}/routes", content=json.dumps(body).encode(), headers=headers)


@pytest.fixture(scope="module")
def http(road2_demo: Demo) -> Iterator[httpx.Client]:
    with httpx.Client(timeout=60) as client:
        yield client


@pytest.fixture(params=list(ENGINES))
def api(request: pytest.FixtureRequest, road2_demo: Demo, http: httpx.Client) -> Api:
    rid = ENGINES[request.param]
    return Api(http, rid, f"{road2_demo.service}/ogcapi-routes/1.0/{rid}")


def waypoints(*points: list[float]) -> dict[str, Any]:
    return {"waypoints": {"value": {"type": "MultiPoint", "coordinates": list(points)}}}


def metres(geometry: Any) -> Any:
    return shapely.transform(geometry, lambda xy: np.column_stack(TO_METRES.transform(xy[:, 0], xy[:, 1])))


def distance_m(a: list[float], b: list[float]) -> float:
    return float(metres(Point(a)).distance(metres(Point(b))))


def route_of(answer: httpx.Response, requested: datetime | None = None) -> dict[str, Any]:
    """The route of a successful answer, after every check of the Route Exchange Model."""
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/geo+json"
    route: dict[str, Any] = answer.json()
    for check in REM_CHECKS:
        check(route, requested)
    return route


def starts_and_ends(route: dict[str, Any], first: list[float], last: list[float]) -> None:
    line = feature(route, "overview")["geometry"]["coordinates"]
    assert distance_m(line[0], first) < TOLERANCE_M, (line[0], first)
    assert distance_m(line[-1], last) < TOLERANCE_M, (line[-1], last)


def feature(route: dict[str, Any], kind: str) -> dict[str, Any]:
    (found,) = [f for f in route["features"] if f["properties"]["featureType"] == kind]
    return found


def segments(route: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in route["features"] if f["properties"]["featureType"] == "segment"]


def timestamp(text: str) -> datetime:
    assert UTC_DATE_TIME.match(text), text
    return datetime.fromisoformat(text)


def refused(api: Api, body: Any, member: str) -> None:
    answer = api.post(body)
    assert answer.status_code == 400, answer.text
    assert member in answer.json()["error"]["message"], answer.text


def undeclared_time(api: Api) -> None:
    """A resource without the time class: not declared, and ``when`` refused (inside or beside ``inputs``)."""
    assert not api.declares("time")
    when = {"value": {"timestamp": "2026-06-01T08:00:00Z"}}
    refused(api, {"inputs": {**waypoints(*POSITIONS[:2]), "when": when}}, "inputs.when")
    refused(api, {"inputs": waypoints(*POSITIONS[:2]), "when": when}, "when")


# The checks of the Route Exchange Model's abstract tests, each on one route document.


def rem_validate_geojson(route: dict[str, Any], requested: datetime | None) -> None:
    GEOJSON.validate(route)


def positions(route: dict[str, Any]) -> list[list[float]]:
    found = []
    for item in route["features"]:
        geometry = item["geometry"]
        found += geometry["coordinates"] if geometry["type"] == "LineString" else [geometry["coordinates"]]
    return found


def rem_validate_coordinates(route: dict[str, Any], requested: datetime | None) -> None:
    every = positions(route)
    assert all(-180 <= p[0] <= 180 and -90 <= p[1] <= 90 for p in every)
    assert len({len(p) for p in every}) == 1 and len(every[0]) in (2, 3)


def rem_validate_bbox(route: dict[str, Any], requested: datetime | None) -> None:
    xmin, ymin, xmax, ymax = route["bbox"]  # roadkit gives one, so that this test has something to check
    assert all(xmin <= p[0] <= xmax and ymin <= p[1] <= ymax for p in positions(route))


def rem_validate_rem(route: dict[str, Any], requested: datetime | None) -> None:
    REM.validate(route)


def rem_features(route: dict[str, Any], requested: datetime | None) -> None:
    kinds = [f["properties"]["featureType"] for f in route["features"]]
    assert (kinds.count("overview"), kinds.count("start"), kinds.count("end")) == (1, 1, 1)
    assert kinds.count("segment") >= 1


def rem_segment_order(route: dict[str, Any], requested: datetime | None) -> None:
    line = feature(route, "overview")["geometry"]["coordinates"]
    cursor = 0
    for segment in segments(route):
        point = segment["geometry"]["coordinates"]
        assert point in line[cursor:], (point, cursor)
        cursor = line.index(point, cursor)


def rem_start_position(route: dict[str, Any], requested: datetime | None) -> None:
    assert feature(route, "start")["geometry"]["coordinates"] == feature(route, "overview")["geometry"]["coordinates"][0]


def rem_end_position(route: dict[str, Any], requested: datetime | None) -> None:
    assert feature(route, "end")["geometry"]["coordinates"] == feature(route, "overview")["geometry"]["coordinates"][-1]


def rem_start_end_timestamp(route: dict[str, Any], requested: datetime | None) -> None:
    departure, arrival = feature(route, "start")["properties"].get("timestamp"), feature(route, "end")["properties"].get("timestamp")
    if departure is not None and arrival is not None:
        assert timestamp(departure) < timestamp(arrival)
    for value in (departure, arrival):
        if value is not None:
            timestamp(value)


def rem_overview_length(route: dict[str, Any], requested: datetime | None) -> None:
    total = sum(s["properties"]["length_m"] for s in segments(route))
    assert abs(feature(route, "overview")["properties"]["length_m"] - total) < 1.0


#: Routes longer than this are not compared with their straight-segment length (the standard's "length limit").
LENGTH_LIMIT_M = 50_000.0


def rem_overview_length_computed(route: dict[str, Any], requested: datetime | None) -> None:
    overview = feature(route, "overview")
    length = overview["properties"]["length_m"]
    path = float(metres(LineString(overview["geometry"]["coordinates"])).length)
    # The engines measure on the sphere, the path in UTM (a scale of 0.9996 to 1.0004 here): 2 % and 5 m.
    assert length > LENGTH_LIMIT_M or abs(length - path) < 5.0 + 0.02 * path, (length, path)


def rem_overview_duration(route: dict[str, Any], requested: datetime | None) -> None:
    overview, parts = feature(route, "overview")["properties"], [s["properties"] for s in segments(route)]
    timed = ["duration_s" in p for p in [overview, *parts]]
    assert all(timed) or not any(timed)
    if all(timed):
        assert abs(overview["duration_s"] - sum(p["duration_s"] for p in parts)) < 1.0


def _restriction(route: dict[str, Any], key: str) -> None:
    overview = feature(route, "overview")["properties"]
    limits = [s["properties"][key] for s in segments(route) if key in s["properties"]]
    if limits:
        assert overview[key] == min(limits)


def rem_overview_height(route: dict[str, Any], requested: datetime | None) -> None:
    _restriction(route, "maxHeight_m")


def rem_overview_weight(route: dict[str, Any], requested: datetime | None) -> None:
    _restriction(route, "maxWeight_t")


def rem_processing_time(route: dict[str, Any], requested: datetime | None) -> None:
    value = feature(route, "overview")["properties"].get("processingTime")
    if value is None:
        return
    moment = timestamp(value)
    assert moment <= datetime.now(UTC)
    if requested is not None:
        assert moment >= requested.replace(microsecond=requested.microsecond // 1000 * 1000)  # written to the millisecond


def rem_speed_limit_unit(route: dict[str, Any], requested: datetime | None) -> None:
    for segment in segments(route):
        assert ("speedLimit" in segment["properties"]) == ("speedLimitUnit" in segment["properties"]), segment


REM_CHECKS = (
    rem_validate_geojson,
    rem_validate_coordinates,
    rem_validate_bbox,
    rem_validate_rem,
    rem_features,
    rem_segment_order,
    rem_start_position,
    rem_end_position,
    rem_start_end_timestamp,
    rem_overview_length,
    rem_overview_length_computed,
    rem_overview_duration,
    rem_overview_height,
    rem_overview_weight,
    rem_processing_time,
    rem_speed_limit_unit,
)


# Conformance class "Core".


def test_ats_core_landing_page_link(api: Api) -> None:
    """/conf/core/landing-page-link: check that the link to the Routes resource exists."""
    for path in (api.uri, f"{api.uri}/"):
        answer = api.http.get(path, headers={"Accept": "application/json"})
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/json", (path, answer.text)
        links = answer.json()["links"]
        assert {"rel": "http://www.opengis.net/def/rel/ogc/1.0/routes", "href": f"{api.uri}/routes"}.items() <= next(
            link for link in links if link["rel"] == "http://www.opengis.net/def/rel/ogc/1.0/routes"
        ).items()


def test_ats_core_preferences(api: Api) -> None:
    """/conf/core/preferences: check that the preference values are stated in the conformance declaration."""
    answer = api.http.get(f"{api.uri}/conformance", headers={"Accept": "application/json"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    preferences = answer.json()["properties"][SPEC + "core"]["preferences"]
    assert isinstance(preferences, list) and preferences and all(isinstance(p, str) for p in preferences)
    assert preferences[0] == "fastest"  # the first is the default: the resources' default optimization


def test_ats_core_compute_route_success(api: Api) -> None:
    """/conf/core/compute-route-success: check that routes can be computed (every ordered pair of five positions)."""
    for first, last in itertools.permutations(POSITIONS, 2):
        requested = datetime.now(UTC)
        route = route_of(api.post({"inputs": waypoints(first, last)}), requested)
        starts_and_ends(route, first, last)


def test_ats_core_compute_route_error_400(api: Api) -> None:
    """/conf/core/compute-route-error-400: check that invalid requests return a 400."""
    answer = api.post({"foo": "bar"})
    assert answer.status_code == 400 and "foo" in answer.json()["error"]["message"], answer.text


def test_ats_core_compute_route_error_422(api: Api) -> None:
    """/conf/core/compute-route-error-422: check that a valid request with positions that can't be waypoints returns a 422."""
    for usable, unusable in itertools.product(POSITIONS[:2], UNUSABLE):
        for pair in ((usable, unusable), (unusable, usable)):
            answer = api.post({"inputs": waypoints(*pair)})
            assert answer.status_code == 422, (pair, answer.text)


def test_ats_core_compute_route_preference_success(api: Api) -> None:
    """/conf/core/compute-route-preference-success: check that routes can be computed for all preference values."""
    preferences = api.conformance()["properties"][SPEC + "core"]["preferences"]
    for (first, last), preference in itertools.product(itertools.permutations(POSITIONS, 2), preferences):
        answer = api.post({"name": "foo bar", "inputs": {**waypoints(first, last), "preference": preference}})
        route = route_of(answer)
        assert route["name"] == "foo bar"
        starts_and_ends(route, first, last)


def test_ats_core_compute_route_preference_error_400(api: Api) -> None:
    """/conf/core/compute-route-preference-error-400: check that invalid preference values return a 400."""
    refused(api, {"inputs": {**waypoints(*POSITIONS[:2]), "preference": "foo___bar"}}, "inputs.preference")


# Conformance class "Intermediate waypoints".


def test_ats_intermediate_waypoints_compute_route_success(api: Api) -> None:
    """/conf/intermediate-waypoints/compute-route-success: check that routes with intermediate waypoints can be
    computed (the 120 orderings of five positions)."""
    assert api.declares("intermediate-waypoints")
    for order in itertools.permutations(POSITIONS):
        route = route_of(api.post({"inputs": waypoints(*order)}))
        starts_and_ends(route, order[0], order[-1])
        path = metres(LineString(feature(route, "overview")["geometry"]["coordinates"]))
        for via in order[1:-1]:
            assert path.distance(metres(Point(via))) < TOLERANCE_M, (via, order)


# Conformance class "Modes".


def test_ats_mode_modes(api: Api) -> None:
    """/conf/mode/modes: check that the mode values are stated in the conformance declaration."""
    answer = api.http.get(f"{api.uri}/conformance", headers={"Accept": "application/json"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    modes = answer.json()["properties"][SPEC + "mode"]["modes"]
    assert isinstance(modes, list) and modes and all(isinstance(m, str) for m in modes)
    assert modes[0] == "car" and "pedestrian" in modes  # the resources' profiles, their default first


def test_ats_mode_compute_route_mode(api: Api) -> None:
    """/conf/core/compute-route-mode: check that routes can be computed for all modes."""
    modes = api.conformance()["properties"][SPEC + "mode"]["modes"]
    for (first, last), mode in itertools.product(itertools.permutations(POSITIONS, 2), modes):
        route = route_of(api.post({"inputs": {**waypoints(first, last), "mode": mode}}))
        starts_and_ends(route, first, last)


# Conformance class "Temporal constraints": Valhalla's resource (its engine reads a departure time).

TIME_POSITIONS = POSITIONS[:3]


def _durations_match(route: dict[str, Any]) -> tuple[datetime, datetime]:
    start = timestamp(feature(route, "start")["properties"]["timestamp"])
    end = timestamp(feature(route, "end")["properties"]["timestamp"])
    assert abs((end - start).total_seconds() - feature(route, "overview")["properties"]["duration_s"]) <= 1.0
    assert all("duration_s" in s["properties"] for s in segments(route))
    return start, end


def test_ats_time_compute_route_success_default(api: Api) -> None:
    """/conf/time/compute-route-success-default: check that routes with the default time constraints (an
    immediate departure) can be computed."""
    if api.rid != "monaco-valhalla":
        undeclared_time(api)
        return
    assert api.declares("time")
    for first, last in itertools.permutations(TIME_POSITIONS, 2):
        submitted = datetime.now(UTC)
        route = route_of(api.post({"inputs": waypoints(first, last)}), submitted)
        starts_and_ends(route, first, last)
        start, _ = _durations_match(route)
        assert abs((start - submitted).total_seconds()) < 5.0


def test_ats_time_compute_route_success(api: Api) -> None:
    """/conf/time/compute-route-success: check that routes with time constraints (a departure, an arrival) can be computed."""
    if api.rid != "monaco-valhalla":
        undeclared_time(api)
        return
    assert api.declares("time")
    moment = (datetime.now(UTC) + timedelta(hours=24)).replace(microsecond=0)
    text = moment.isoformat().replace("+00:00", "Z")
    for (first, last), kind in itertools.product(itertools.permutations(TIME_POSITIONS, 2), ("departure", "arrival")):
        body = {"inputs": waypoints(first, last), "when": {"value": {"timestamp": text, "type": kind}}}
        route = route_of(api.post(body))
        starts_and_ends(route, first, last)
        start, end = _durations_match(route)
        assert (start if kind == "departure" else end) == moment, (kind, route["features"])


def test_ats_time_compute_route_success_400_error(api: Api) -> None:
    """/conf/time/compute-route-success-400-error: check that routes with invalid time constraints are rejected."""
    if api.rid != "monaco-valhalla":
        undeclared_time(api)
        return
    for invalid in ("2026-06-01T08:00:00", "2026-06-01T10:00:00+02:00", "2026-06-01"):
        body = {"inputs": waypoints(*POSITIONS[:2]), "when": {"value": {"timestamp": invalid}}}
        refused(api, body, "when.value.timestamp")


# Conformance class "Manage routes".


@dataclass(frozen=True)
class Stored:
    """What /conf/manage-routes/routes-success-1 leaves: the route's URI, the answer and the definition posted."""

    location: str
    answer: httpx.Response
    definition: bytes


def store(api: Api) -> Stored:
    body = json.dumps({"name": "foo bar", "inputs": waypoints(*POSITIONS[:2])}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/geo+json"}
    answer = api.http.post(f"{api.uri}/routes", content=body, headers=headers)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/geo+json", answer.text
    location = answer.headers["location"]
    assert re.fullmatch(re.escape(f"{api.uri}/routes/") + r"[^/?#]+", location), location
    return Stored(location, answer, body)


def items(api: Api) -> list[dict[str, Any]]:
    answer = api.http.get(f"{api.uri}/routes", headers={"Accept": "application/json"})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    listing = answer.json()
    jsonschema_rs.Draft7Validator(ROUTES_SCHEMA).validate(listing)
    return [link for link in listing["links"] if link["rel"] == "item"]


def test_ats_manage_routes_routes_success_1(api: Api) -> None:
    """/conf/manage-routes/routes-success-1: check that a link to the stored route is returned (part 1)."""
    assert api.declares("manage-routes")
    store(api)


def test_ats_manage_routes_routes_success_2(api: Api) -> None:
    """/conf/manage-routes/routes-success-2: check that a link to the stored route is returned (part 2)."""
    stored = store(api)
    fetched = api.http.get(stored.location, headers={"Accept": "application/geo+json"})
    route_of(fetched)
    assert fetched.content == stored.answer.content


def test_ats_manage_routes_get_routes_success(api: Api) -> None:
    """/conf/manage-routes/get-routes-success: check that routes can be fetched (the list of stored routes)."""
    stored = store(api)
    assert any(link["href"] == stored.location and "foo bar" in link["title"] for link in items(api))


def test_ats_manage_routes_get_route_success(api: Api) -> None:
    """/conf/manage-routes/get-route-success: check that routes can be fetched (each route of the list)."""
    store(api)
    listed = items(api)
    assert listed
    for link in listed:
        route_of(api.http.get(link["href"], headers={"Accept": "application/geo+json"}))


def test_ats_manage_routes_get_route_definition_success(api: Api) -> None:
    """/conf/manage-routes/get-route-definition-success: check that route definitions can be fetched."""
    stored = store(api)
    listed = items(api)
    assert stored.location in [link["href"] for link in listed]
    for link in listed:
        answer = api.http.get(f"{link['href']}/definition", headers={"Accept": "application/json"})
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
        if link["href"] == stored.location:
            assert answer.content == stored.definition
        DEFINITION.validate(answer.json())


def test_ats_manage_routes_delete_route_success_1(api: Api) -> None:
    """/conf/manage-routes/delete-route-success-1: check that a route can be deleted."""
    stored = store(api)
    assert api.http.delete(stored.location).status_code in (200, 202, 204)


def test_ats_manage_routes_delete_route_success_2(api: Api) -> None:
    """/conf/manage-routes/delete-route-success-2: check that a route has been deleted."""
    stored = store(api)
    assert stored.location in [link["href"] for link in items(api)]
    assert api.http.delete(stored.location).status_code in (200, 202, 204)
    assert stored.location not in [link["href"] for link in items(api)]


# Conformance class "Route Exchange Model": each check on a set of routes of each resource.


@dataclass(frozen=True)
class Sample:
    """A route of the resource, the moment it was asked and the definition posted."""

    requested: datetime
    definition: dict[str, Any]
    route: dict[str, Any]


_samples: dict[str, list[Sample]] = {}


def samples(api: Api) -> list[Sample]:
    """Routes of the resource, each with the moment it was asked: pairs, five waypoints, every mode and
    preference, a departure and an arrival time, a vehicle's height and weight, as the resource declares them."""
    if api.rid in _samples:
        return _samples[api.rid]
    conformance = api.conformance()
    bodies: list[dict[str, Any]] = [{"inputs": waypoints(*pair)} for pair in itertools.pairwise(POSITIONS)]
    bodies.append({"name": "five", "inputs": waypoints(*POSITIONS)})
    for mode, preference in itertools.product(
        conformance["properties"][SPEC + "mode"]["modes"], conformance["properties"][SPEC + "core"]["preferences"]
    ):
        bodies.append({"inputs": {**waypoints(*POSITIONS[:2]), "mode": mode, "preference": preference}})
    if SPEC + "time" in conformance["conformsTo"]:
        for kind in ("departure", "arrival"):
            bodies.append({"inputs": waypoints(*POSITIONS[:2]), "when": {"value": {"timestamp": "2026-06-01T08:00:00Z", "type": kind}}})
    for name, value in (("height", 3.0), ("weight", 5.0)):
        if SPEC + name in conformance["conformsTo"]:
            bodies.append({"inputs": waypoints(*POSITIONS[:2]), name: value})
    found = []
    for body in bodies:
        requested = datetime.now(UTC)
        answer = api.post(body)
        if answer.status_code == 422 and "mode" in body["inputs"]:
            continue  # a mode without this preference (pedestrians take no shortest way on OSRM)
        assert answer.status_code == 200, (body, answer.text)
        found.append(Sample(requested, body, answer.json()))
    _samples[api.rid] = found
    return found


def each_sample(api: Api, check: Any) -> None:
    routes = samples(api)
    assert len(routes) >= 7
    for sample in routes:
        check(sample.route, sample.requested)


def test_ats_rem_validate_geojson(api: Api) -> None:
    """/conf/rem/validate-geojson: validate the route against the GeoJSON schema."""
    each_sample(api, rem_validate_geojson)


def test_ats_rem_validate_coordinates(api: Api) -> None:
    """/conf/rem/validate-coordinates: validate the spatial positions in the route."""
    each_sample(api, rem_validate_coordinates)


def test_ats_rem_validate_bbox(api: Api) -> None:
    """/conf/rem/validate-bbox: validate the bounding box of the route, if provided (roadkit always provides it)."""
    each_sample(api, rem_validate_bbox)
    for route in (sample.route for sample in samples(api)):
        every = positions(route)
        assert route["bbox"] == [min(p[0] for p in every), min(p[1] for p in every), max(p[0] for p in every), max(p[1] for p in every)]


def test_ats_rem_validate_rem(api: Api) -> None:
    """/conf/rem/validate-rem: validate the route against the REM schema."""
    each_sample(api, rem_validate_rem)


def test_ats_rem_features(api: Api) -> None:
    """/conf/rem/features: verify the existence of the route components."""
    each_sample(api, rem_features)


def test_ats_rem_segment_order(api: Api) -> None:
    """/conf/rem/segment-order: verify the order of the route segments."""
    each_sample(api, rem_segment_order)


def test_ats_rem_start_position(api: Api) -> None:
    """/conf/rem/start-position: verify the start position."""
    each_sample(api, rem_start_position)


def test_ats_rem_end_position(api: Api) -> None:
    """/conf/rem/end-position: verify the end position."""
    each_sample(api, rem_end_position)


def test_ats_rem_start_end_timestamp(api: Api) -> None:
    """/conf/rem/start-end-timestamp: verify the start and end timestamps."""
    each_sample(api, rem_start_end_timestamp)
    timed = [s.route for s in samples(api) if "timestamp" in feature(s.route, "start")["properties"]]
    # The time class's resource times every route (an immediate departure by default), the others none.
    assert len(timed) == (len(samples(api)) if api.declares("time") else 0)


def test_ats_rem_overview_length(api: Api) -> None:
    """/conf/rem/overview-length: verify the route length."""
    each_sample(api, rem_overview_length)


def test_ats_rem_overview_length_computed(api: Api) -> None:
    """/conf/rem/overview-length-computed: verify the route length against the route path."""
    each_sample(api, rem_overview_length_computed)


def test_ats_rem_overview_duration(api: Api) -> None:
    """/conf/rem/overview-duration: verify the route duration."""
    each_sample(api, rem_overview_duration)


def test_ats_rem_overview_height(api: Api) -> None:
    """/conf/rem/overview-height: verify the route height restriction."""
    each_sample(api, rem_overview_height)
    restricted(api, "height", "maxHeight_m")


def test_ats_rem_overview_weight(api: Api) -> None:
    """/conf/rem/overview-weight: verify the route weight restriction."""
    each_sample(api, rem_overview_weight)
    restricted(api, "weight", "maxWeight_t")


def restricted(api: Api, member: str, key: str) -> None:
    """A route for a vehicle has the restriction it keeps to, never below the vehicle's; any other route has none."""
    for sample in samples(api):
        overview = feature(sample.route, "overview")["properties"]
        if member in sample.definition:
            assert overview[key] >= sample.definition[member]
        else:
            assert key not in overview
    assert any(member in s.definition for s in samples(api)) == api.declares(member)


def test_ats_rem_processing_time(api: Api) -> None:
    """/conf/rem/processingTime: verify the processing time."""
    each_sample(api, rem_processing_time)
    assert all("processingTime" in feature(s.route, "overview")["properties"] for s in samples(api))


def test_ats_rem_speed_limit_unit(api: Api) -> None:
    """/conf/rem/speedLimitUnit: verify that a unit is provided for each speed limit."""
    each_sample(api, rem_speed_limit_unit)
    limited = [s for sample in samples(api) for s in segments(sample.route) if "speedLimit" in s["properties"]]
    assert limited or api.rid != "monaco-pgrouting"  # the pgRouting graph has OpenStreetMap's maxspeed


# Every abstract test has its test.


def docstrings() -> str:
    """The docstrings of every test function under tests/."""
    found = []
    for path in Path(__file__).parents[1].rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                found.append(ast.get_docstring(node) or "")
    return "\n".join(found)


def test_every_abstract_test_has_a_test() -> None:
    assert (len(API_TESTS), len(MODEL_TESTS)) == (23, 16)
    text = docstrings()
    # An id followed by more of an id is another test (/conf/time/compute-route-success-default).
    missing = [test_id for test_id in (*API_TESTS, *MODEL_TESTS) if not re.search(re.escape(test_id) + r"(?![\w-])", text)]
    assert missing == []


# The OGC APIs in the admin API's description of a service and in the simple API's capabilities.


def test_the_admin_api_describes_the_ogc_apis_of_a_service(road2_demo: Demo, http: httpx.Client) -> None:
    described = http.get(f"{road2_demo.admin}/services/main")
    assert described.status_code == 200, described.text
    apis = described.json()["ogcApis"]
    assert [(a["resource"], a["api"], a["path"]) for a in apis] == [
        (rid, "ogcapi-routes/1.0", f"/ogcapi-routes/1.0/{rid}/") for rid in sorted(ENGINES.values())
    ]
    for entry in apis:
        assert entry["urls"] == [f"{road2_demo.service}{entry['path']}"]  # the demo's one listener
        landing = http.get(entry["urls"][0])
        assert landing.status_code == 200 and landing.json()["title"] == entry["title"]
    capabilities = http.get(f"{road2_demo.service}/simple/1.0.0/getcapabilities").json()
    assert [{k: a[k] for k in ("resource", "api", "path", "title")} for a in apis] == sorted(
        capabilities["ogcApis"], key=lambda a: a["resource"]
    )
    assert "ogcApis" not in http.get(f"{road2_demo.admin}/services").json()[0]  # the list stays what the administrator knows


async def test_a_service_in_worker_processes_describes_its_ogc_apis(tmp_path: Path, osrm_example: Path) -> None:
    from tests.core.test_children import Example, green, wait_for

    example = Example(tmp_path / "monaco", osrm_example)
    admin = example.administrator()
    await admin.start()
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            await wait_for(lambda: green(client, example))
            described = (await client.get(f"{example.admin}/services/main")).json()
            assert len(described["processes"]) == 2
            (entry,) = described["ogcApis"]
            assert (entry["resource"], entry["urls"]) == ("monaco-osrm", [f"{example.service}/ogcapi-routes/1.0/monaco-osrm/"])
            assert (await client.get(entry["urls"][0])).json()["title"] == entry["title"]
    finally:
        await admin.stop()
    assert "ogcApis" not in await admin.describe_apis("main")  # stopped: nothing served
