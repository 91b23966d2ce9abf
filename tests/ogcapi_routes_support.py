"""OGC API – Routes checks shared by the three engines' tests: every answer validated against the standard's schemas.

``REM_SCHEMA`` is the Route Exchange Model's JSON schema as the standard's repository has it
(opengeospatial/ogcapi-routes, rem/standard/code/rem-json-schema.json), copied here so that the tests
check roadkit's answers against the standard's own text, not against roadkit's OpenAPI document.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from starlette.testclient import TestClient

from tests.schemathesis_support import run, serve

REM_SCHEMA = json.loads((Path(__file__).parent / "rem-json-schema.json").read_text())
SPEC = "http://www.opengis.net/spec/ogcapi-routes-1/1.0.0-draft.1/conf/"
START, END = [7.41337, 43.72956], [7.41983, 43.73115]
#: Five waypoints on Monaco's streets (the intermediate-waypoints class: at least 5, in any order).
FIVE = [[7.41337, 43.72956], [7.4246, 43.7383], [7.4200, 43.7350], [7.41983, 43.73115], [7.4275, 43.7405]]


def definition(*points: list[float], **inputs: Any) -> dict[str, Any]:
    return {"inputs": {"waypoints": {"value": {"type": "MultiPoint", "coordinates": list(points)}}, **inputs}}


def valid_route(answer: Any) -> dict[str, Any]:
    """The body of a 200 route answer, checked against the REM schema and the issue's invariants."""
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/geo+json"
    route: dict[str, Any] = answer.json()
    jsonschema.validate(route, REM_SCHEMA, cls=jsonschema.Draft201909Validator, format_checker=jsonschema.FormatChecker())
    features = route["features"]
    overview, start, *segments, end = features
    assert overview["properties"]["featureType"] == "overview"
    assert (start["properties"]["featureType"], end["properties"]["featureType"]) == ("start", "end")
    line = overview["geometry"]["coordinates"]
    assert start["geometry"]["coordinates"] == line[0] and end["geometry"]["coordinates"] == line[-1]
    assert segments and all(s["properties"]["featureType"] == "segment" for s in segments)
    props = overview["properties"]
    assert props["length_m"] == round(sum(s["properties"]["length_m"] for s in segments), 1)
    assert props["duration_s"] == round(sum(s["properties"]["duration_s"] for s in segments), 1)
    assert props["length_m"] > 0 and "processingTime" in props
    # Each segment ends on the overview, in order along it.
    vertices = [tuple(c) for c in line]
    cursor = 0
    for segment in segments:
        point = tuple(segment["geometry"]["coordinates"])
        assert point in vertices[cursor:], (point, cursor)
        cursor = vertices.index(point, cursor)
    return route


def distance_m(a: list[float], b: list[float]) -> float:
    dx = (a[0] - b[0]) * 111_320 * math.cos(math.radians(a[1]))
    dy = (a[1] - b[1]) * 110_540
    return math.hypot(dx, dy)


def check_landing_and_conformance(client: TestClient, rid: str, modes: list[str]) -> dict[str, Any]:
    listing = client.get("/ogcapi-routes/1.0/").json()
    assert any(link["href"].endswith(f"/ogcapi-routes/1.0/{rid}/") and link["rel"] == "item" for link in listing["links"])
    landing = client.get(f"/ogcapi-routes/1.0/{rid}/").json()
    rels = {link["rel"]: link["href"] for link in landing["links"]}
    base = f"http://testserver/ogcapi-routes/1.0/{rid}"
    assert rels == {
        "self": f"{base}/",
        "service-desc": f"{base}/api",
        "http://www.opengis.net/def/rel/ogc/1.0/conformance": f"{base}/conformance",
        "http://www.opengis.net/def/rel/ogc/1.0/routes": f"{base}/routes",
    }
    conformance: dict[str, Any] = client.get(f"/ogcapi-routes/1.0/{rid}/conformance").json()
    assert {SPEC + "core", SPEC + "mode", SPEC + "intermediate-waypoints", SPEC + "manage-routes"} <= set(conformance["conformsTo"])
    assert conformance["properties"][SPEC + "core"] == {"preferences": ["fastest", "shortest"]}
    assert conformance["properties"][SPEC + "mode"] == {"modes": modes}
    capabilities = client.get("/simple/1.0.0/getcapabilities").json()
    assert {"resource": rid, "api": "ogcapi-routes/1.0", "path": f"/ogcapi-routes/1.0/{rid}/"}.items() <= next(
        a for a in capabilities["ogcApis"] if a["resource"] == rid
    ).items()
    document = client.get(f"/ogcapi-routes/1.0/{rid}/api")
    assert document.status_code == 200 and document.json()["openapi"].startswith("3.0")
    return conformance


def check_every_preference_and_mode(client: TestClient, rid: str, modes: list[str]) -> None:
    routes = f"/ogcapi-routes/1.0/{rid}/routes"
    lengths = {}
    for mode, preference in itertools.product(modes, ["fastest", "shortest"]):
        answer = client.post(routes, json=definition(START, END, mode=mode, preference=preference, name=f"{mode} {preference}"))
        if answer.status_code == 422:
            continue  # a profile without this optimization (the message says which)
        route = valid_route(answer)
        assert route["name"] == f"{mode} {preference}"
        lengths[mode, preference] = route["features"][0]["properties"]["length_m"]
    car = [lengths[m, p] for m, p in lengths if m == modes[0]]
    assert len(car) == 2 and lengths[modes[0], "shortest"] <= lengths[modes[0], "fastest"]


def check_waypoints_in_every_order(client: TestClient, rid: str, orders: int = 120) -> None:
    """The route passes near each of 5 waypoints, in the order given, for ``orders`` of their 120 orderings."""
    routes = f"/ogcapi-routes/1.0/{rid}/routes"
    for order in list(itertools.permutations(FIVE))[:orders]:
        route = valid_route(client.post(routes, json=definition(*order)))
        line = route["features"][0]["geometry"]["coordinates"]
        cursor = 0
        for point in order:
            near = [i for i in range(cursor, len(line)) if distance_m(line[i], point) < 150]
            assert near, (point, order)
            cursor = near[0]


def check_errors(client: TestClient, rid: str) -> None:
    routes = f"/ogcapi-routes/1.0/{rid}/routes"

    def refused(body: Any, status: int, member: str) -> None:
        answer = client.post(routes, json=body)
        assert answer.status_code == status, answer.text
        assert member in answer.json()["error"]["message"], answer.text

    refused({}, 400, "inputs")
    refused({"inputs": {}}, 400, "inputs.waypoints")
    refused({"inputs": {"waypoints": {"value": {"type": "Point", "coordinates": START}}}}, 400, "inputs.waypoints.value.type")
    refused(definition(START), 400, "inputs.waypoints.value.coordinates")
    refused(definition(START, ["x", 1]), 400, "inputs.waypoints.value.coordinates[1]")
    refused(definition(START, END, preference="quickest"), 400, "inputs.preference")
    refused(definition(START, END, mode="rocket"), 400, "inputs.mode")
    # A height where the resource has no height class; else one below 0.
    declared = SPEC + "height" in client.get(f"/ogcapi-routes/1.0/{rid}/conformance").json()["conformsTo"]
    refused(definition(START, END, height=-1.0 if declared else 4.0), 400, "inputs.height")
    refused(definition(START, END, surprise=1), 400, "inputs.surprise")
    refused({**definition(START, END), "obstacles": {"value": {"type": "MultiPolygon", "coordinates": []}}}, 400, "obstacles")
    refused(definition(START, [2.35, 48.85]), 422, "waypoint 1")
    refused(definition(START, [7.42, 120.0]), 422, "waypoint 1")
    assert client.post(routes, content=b"{", headers={"content-type": "application/json"}).status_code == 400
    assert client.get(f"/ogcapi-routes/1.0/{rid}/routes/nope").status_code == 404
    assert client.get("/ogcapi-routes/1.0/no-such-resource/").status_code == 404


def check_manage_routes(client: TestClient, rid: str) -> None:
    routes = f"/ogcapi-routes/1.0/{rid}/routes"
    body = json.dumps(definition(START, END, name="Casino to port"), indent=1).encode()
    posted = client.post(routes, content=body, headers={"content-type": "application/json"})
    valid_route(posted)
    location = posted.headers["location"]
    assert location.startswith(f"http://testserver{routes}/")
    path = location.removeprefix("http://testserver")
    fetched = client.get(path)
    assert fetched.status_code == 200 and fetched.content == posted.content
    assert fetched.headers["content-type"] == "application/geo+json"
    assert client.get(f"{path}/definition").content == body
    listed = client.get(routes).json()["links"]
    assert {"href": location, "rel": "item", "type": "application/geo+json", "title": "Casino to port"} in listed
    assert client.delete(path).status_code == 204
    assert client.get(path).status_code == 404 and client.get(f"{path}/definition").status_code == 404
    assert location not in [link["href"] for link in client.get(routes).json()["links"]]
    assert client.delete(path).status_code == 404


#: A valid definition may still be unroutable (a waypoint in the sea of the resource's box): the standard's 422.
SCHEMATHESIS_CONFIG = """
[[operations]]
include-operation-id = ["computeRoute"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "422"]
"""


class ResourceChecks:
    """The checks above, and schemathesis on the OGC API, as the tests of one engine's Monaco resource.

    An engine's test module subclasses it (``class TestOgcRoutes(ogc.ResourceChecks)``), sets ``rid``,
    ``modes`` and ``declares_time``, and gives the fixtures ``client`` (a test client of the resource's
    service) and ``example`` (the service's folder, which schemathesis's test serves).
    """

    rid: str
    modes: list[str]
    #: Whether the resource reads a departure or arrival time (the time class).
    declares_time: bool

    def test_landing_page_conformance_and_api(self, client: TestClient) -> None:
        conformance = check_landing_and_conformance(client, self.rid, self.modes)
        assert (SPEC + "time" in conformance["conformsTo"]) is self.declares_time

    def test_every_preference_and_mode(self, client: TestClient) -> None:
        check_every_preference_and_mode(client, self.rid, self.modes)

    def test_five_waypoints_in_all_120_orders(self, client: TestClient) -> None:
        """/conf/intermediate-waypoints/compute-route-success: the route passes each of 5 waypoints in order, all 120 orders."""
        check_waypoints_in_every_order(client, self.rid)

    def test_invalid_and_unroutable_definitions(self, client: TestClient) -> None:
        check_errors(client, self.rid)

    def test_stored_routes(self, client: TestClient) -> None:
        check_manage_routes(client, self.rid)

    @pytest.fixture  # one test serves it
    def demo(self, example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
        yield from serve(example, tmp_path_factory)

    def test_the_ogc_api_passes_every_schemathesis_check(self, demo: tuple[str, str], tmp_path: Path) -> None:
        (tmp_path / "schemathesis.toml").write_text(SCHEMATHESIS_CONFIG)
        base = demo[1].replace("/simple/1.0.0", f"/ogcapi-routes/1.0/{self.rid}")
        output = run(f"{base}/api", tmp_path, "--phases", "examples,coverage,fuzzing", examples=20)
        assert "POST /routes" in output
