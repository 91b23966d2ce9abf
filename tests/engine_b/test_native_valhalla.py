"""The native OSRM API on a Valhalla resource: route and nearest in Valhalla's OSRM-format output, table through the matrix."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.engine_b.conftest import END, START, VIA

COORDS = f"{START[0]},{START[1]};{VIA[0]},{VIA[1]};{END[0]},{END[1]}"


def _direct(actor: Any, costing: str, **extra: Any) -> dict[str, Any]:
    locations = [{"lon": p[0], "lat": p[1]} for p in (START, VIA, END)]
    body = {"locations": locations, "costing": costing, "directions_options": {"format": "osrm", "units": "kilometers"}, **extra}
    if costing == "pedestrian":
        body["costing_options"] = {"pedestrian": {"walking_speed": 4.0}}
    answer: dict[str, Any] = json.loads(actor.route(json.dumps(body)))
    return answer


@pytest.mark.parametrize(("profile", "costing"), [("car", "auto"), ("driving", "auto"), ("foot", "pedestrian")])
def test_route_is_valhallas_own_osrm_output(client: TestClient, actor: Any, profile: str, costing: str) -> None:
    response = client.get(f"/osrm/1.0.0/monaco-valhalla/route/v1/{profile}/{COORDS}?steps=true&geometries=polyline6")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    mine = response.json()
    direct = _direct(actor, costing, shape_format="polyline6")
    assert mine["code"] == "Ok"
    assert mine["routes"] == direct["routes"]
    assert [w["location"] for w in mine["waypoints"]] == [w["location"] for w in direct["waypoints"]]


def test_route_options_without_a_valhalla_switch_are_applied(client: TestClient) -> None:
    answer = client.get(f"/osrm/1.0.0/monaco-valhalla/car/fastest/route/v1/_/{COORDS}?overview=false&skip_waypoints=true").json()
    route = answer["routes"][0]
    assert "geometry" not in route and "waypoints" not in answer
    assert all(leg["steps"] == [] for leg in route["legs"]) and len(route["legs"]) == 2


def test_nearest_points_on_valhalla(client: TestClient) -> None:
    response = client.get(f"/osrm/1.0.0/monaco-valhalla/nearest/v1/car/{START[0]},{START[1]}?number=2")
    assert response.status_code == 200, response.text
    waypoints = response.json()["waypoints"]
    simple = client.get(
        "/simple/1.0.0/nearest", params={"resource": "monaco-valhalla", "coordinates": f"{START[0]},{START[1]}", "nbPoints": 2}
    )
    expected = simple.json()["points"]
    assert len(waypoints) == len(expected) >= 1
    for waypoint, point in zip(waypoints, expected, strict=True):
        assert waypoint["location"] == pytest.approx(point["geometry"], abs=1e-6)
        assert waypoint["distance"] == pytest.approx(point["distance"], abs=0.01)


def test_table_is_the_simple_api_matrix_in_osrm_routed_shape(client: TestClient) -> None:
    response = client.get(f"/osrm/1.0.0/monaco-valhalla/table/v1/car/{COORDS}?sources=0;1&destinations=2;0&annotations=distance,duration")
    assert response.status_code == 200, response.text
    table = response.json()
    assert list(table) == ["code", "distances", "destinations", "durations", "sources"]  # osrm-routed's order
    points = {"resource": "monaco-valhalla", "sources": f"{START[0]},{START[1]}|{VIA[0]},{VIA[1]}", "timeUnit": "second"}
    matrix = client.get("/simple/1.0.0/matrix", params=points | {"targets": f"{END[0]},{END[1]}|{START[0]},{START[1]}"}).json()
    assert table["durations"] == [[round(v, 1) for v in row] for row in matrix["durations"]]
    assert table["distances"] == [[round(v, 1) for v in row] for row in matrix["distances"]]
    for waypoints, points_ in ((table["sources"], matrix["sources"]), (table["destinations"], matrix["targets"])):
        assert [w["location"] for w in waypoints] == [[round(c, 6) for c in p["geometry"]] for p in points_]
        assert [w["distance"] for w in waypoints] == pytest.approx([p["distance"] for p in points_])
    assert table["durations"][0][1] == 0 and table["durations"][0][0] > 60
    # The default annotation (durations), every coordinate as source and destination, no waypoints when skipped.
    square = client.get(f"/osrm/1.0.0/monaco-valhalla/table/v1/driving/{COORDS}?skip_waypoints=true").json()
    assert list(square) == ["code", "durations"] and len(square["durations"]) == 3 and {len(r) for r in square["durations"]} == {3}
    posted = client.post("/osrm/1.0.0/monaco-valhalla/table/v1/car", json={"coordinates": [START, VIA, END], "annotations": ["distance"]})
    assert posted.status_code == 200 and list(posted.json()) == ["code", "distances", "destinations", "sources"]


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        ("?bearings=0,20;;", "InvalidOptions", "bearings is not available on this service"),
        ("?radiuses=5;5;5", "InvalidOptions", "radiuses is not available on this service"),
        ("?exclude=motorway", "InvalidOptions", "exclude is not available on this service"),
        ("?sources=0;7", "InvalidOptions", ""),
        ("?scale_factor=0", "InvalidOptions", "scale_factor must be > 0"),
    ],
)
def test_table_options_valhalla_cannot_apply_are_refused_as_osrm_words_them(
    client: TestClient, query: str, code: str, message: str
) -> None:
    response = client.get(f"/osrm/1.0.0/monaco-valhalla/table/v1/car/{COORDS}{query}")
    assert response.status_code == 400
    assert response.json() == {"message": message, "code": code}


def test_table_refuses_a_point_outside_the_area_and_too_many_points(client: TestClient) -> None:
    far = client.get(f"/osrm/1.0.0/monaco-valhalla/table/v1/car/{COORDS};2.35,48.85")
    assert far.status_code == 400
    assert far.json() == {"message": "Could not find a matching segment for coordinate 3", "code": "NoSegment"}
    # Valhalla has no multimodal matrix: the resource's matrix lists car and pedestrian only.
    multimodal = client.get(f"/osrm/1.0.0/monaco-valhalla/table/v1/multimodal/{COORDS}")
    assert (multimodal.status_code, multimodal.json()["code"]) == (400, "InvalidService")
    many = ";".join([f"{START[0]},{START[1]}"] * 101)
    assert client.get(f"/osrm/1.0.0/monaco-valhalla/table/v1/car/{many}").json()["code"] == "TooBig"


@pytest.mark.parametrize("service", ["trip", "match"])
def test_services_valhalla_cannot_answer_are_refused_clearly(client: TestClient, service: str) -> None:
    response = client.get(f"/osrm/1.0.0/monaco-valhalla/{service}/v1/car/{COORDS}")
    assert response.status_code == 400
    assert response.json() == {
        "code": "InvalidService",
        "message": f"Service {service} is not available on resource monaco-valhalla (engine valhalla)",
    }


def test_osrm_errors_on_valhalla(client: TestClient) -> None:
    too_few = client.get("/osrm/1.0.0/monaco-valhalla/route/v1/car/7.41,43.73")
    assert (too_few.status_code, too_few.json()["code"]) == (400, "InvalidOptions")
    far = client.get("/osrm/1.0.0/monaco-valhalla/route/v1/car/7.41337,43.72956;2.35,48.85")
    assert far.status_code == 400 and far.json()["code"] == "NoSegment", far.text
    # A POST with no coordinates is osrm-routed's InvalidOptions (found by schemathesis: Valhalla's nearest answered 200).
    for service in ("nearest", "route"):
        empty = client.post(f"/osrm/1.0.0/monaco-valhalla/{service}/v1/car", json={"coordinates": []})
        assert (empty.status_code, empty.json()["code"]) == (400, "InvalidOptions"), (service, empty.text)
    malformed = client.get(f"/osrm/1.0.0/monaco-valhalla/route/v1/car/{COORDS}?steps=maybe")
    assert malformed.status_code == 400 and malformed.json()["code"] == "InvalidQuery"
    listed = {r["id"]: r for r in client.get("/osrm/1.0.0/resources").json()}
    assert listed["monaco-valhalla"]["services"] == ["route", "nearest", "table"]


@pytest.mark.parametrize("service", ["route", "nearest"])
def test_generated_requests_never_fail_on_valhalla(client: TestClient, service: str) -> None:
    """osrm-routed's URLs and POST bodies, valid or not, on Valhalla: an answer or a 4xx, never a 5xx."""
    import random

    from tests.engine_a.native_support import encode, generate, generate_post

    rng = random.Random(f"roadkit-native-valhalla-{service}")
    statuses: dict[int, int] = {}
    for _ in range(120):
        url = encode(generate(service, rng))
        response = client.get(f"/osrm/1.0.0/monaco-valhalla{url}")
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        assert response.status_code < 500, (url, response.text)
        assert (response.json()["code"] == "Ok") == (response.status_code == 200), (url, response.text)
        path, body, content_type = generate_post(service, rng)
        posted = client.post(
            f"/osrm/1.0.0/monaco-valhalla{path}", content=body, headers={"content-type": content_type} if content_type else {}
        )
        assert posted.status_code < 500, (path, body, posted.text)
    # 19 of 120: the generator writes some coordinates with no decimals (7,44), outside the source's bbox (NoSegment)
    assert statuses.get(200, 0) >= 15, statuses


# -- the source's area and Valhalla's limits: refused before the engine, and stated by the document ----------

BOX = (7.349, 43.71, 7.491, 43.77)  # examples/monaco/sources/monaco-valhalla.source
OUTSIDE = "the area of source monaco-valhalla"


@pytest.mark.parametrize("profile", ["car", "foot"])
def test_every_point_of_the_sources_area_snaps(client: TestClient, profile: str) -> None:
    """Valhalla's search cutoff (35 km) reaches a road from anywhere in the bbox: inside it, never NoSegment."""
    steps = [i / 6 for i in range(7)]
    for x in (BOX[0] + t * (BOX[2] - BOX[0]) for t in steps):
        for y in (BOX[1] + t * (BOX[3] - BOX[1]) for t in steps):
            route = client.get(f"/osrm/1.0.0/monaco-valhalla/route/v1/{profile}/{x:.6f},{y:.6f};{START[0]},{START[1]}")
            assert route.json()["code"] in ("Ok", "NoRoute"), (x, y, route.text)  # snapped (maybe on a road cut off)
            nearest = client.get(f"/osrm/1.0.0/monaco-valhalla/nearest/v1/{profile}/{x:.6f},{y:.6f}")
            assert nearest.status_code == 200 and nearest.json()["waypoints"], (x, y, nearest.text)


def test_a_point_outside_the_sources_area_is_no_segment(client: TestClient) -> None:
    # Just west of the bbox: Valhalla would snap it (a road is 3 km away); the source refuses it, as documented.
    just_outside = client.get(f"/osrm/1.0.0/monaco-valhalla/route/v1/car/{START[0]},{START[1]};7.3489,43.74")
    assert just_outside.status_code == 400
    assert just_outside.json() == {
        "code": "NoSegment",
        "message": f"Could not find a matching segment for coordinate 1: 7.3489,43.74 is outside 7.349,43.71,7.491,43.77, {OUTSIDE}",
    }
    on_the_edge = client.get(f"/osrm/1.0.0/monaco-valhalla/route/v1/car/{START[0]},{START[1]};7.349,43.74")
    assert on_the_edge.status_code == 200, on_the_edge.text
    posted = client.post("/osrm/1.0.0/monaco-valhalla/nearest/v1/foot", json={"coordinates": [[0, 0]]})
    assert (posted.status_code, posted.json()["code"]) == (400, "NoSegment")
    assert posted.json()["message"].startswith("Could not find a matching segment for coordinate 0: 0.0,0.0 is outside")


def _points(n: int) -> str:
    return ";".join(f"{START[0] + i * 1e-4:.5f},{START[1]}" for i in range(n))


@pytest.mark.parametrize("profile", ["car", "foot", "pedestrian/fastest"])
def test_more_locations_than_valhalla_takes_is_too_big(client: TestClient, valhalla_config: Any, profile: str) -> None:
    """Valhalla's max_locations (auto 20, pedestrian 50): the source's lowest, under osrm-routed's 500, as osrm-routed words it."""
    limits = json.loads(valhalla_config.read_text())["service_limits"]
    most = min(limits[costing]["max_locations"] for costing in ("auto", "pedestrian", "multimodal"))
    url = "/osrm/1.0.0/monaco-valhalla/" + (f"{profile}/route/v1/_/" if "/" in profile else f"route/v1/{profile}/")
    assert client.get(url + _points(most)).status_code == 200
    too_many = client.get(url + _points(most + 1))
    assert too_many.status_code == 400
    assert too_many.json() == {"code": "TooBig", "message": f"Number of entries {most + 1} is higher than current maximum ({most})"}


def test_osrm_routed_limits_apply_on_valhalla(client: TestClient) -> None:
    """max_nearest_locations, max_nearest_size and max_alternatives, as on an OSRM resource (the answers had no limit)."""
    nearest = client.get(f"/osrm/1.0.0/monaco-valhalla/nearest/v1/car/{_points(11)}")
    assert nearest.json() == {"code": "TooBig", "message": "Number of coordinates 11 is higher than current maximum (10)"}
    results = client.get(f"/osrm/1.0.0/monaco-valhalla/nearest/v1/car/{_points(1)}?number=101")
    assert results.json() == {"code": "TooBig", "message": "Number of results 101 is higher than current maximum (100)"}
    alternatives = client.get(f"/osrm/1.0.0/monaco-valhalla/route/v1/car/{COORDS}?alternatives=4")
    assert alternatives.json() == {"code": "TooBig", "message": "Requested number of alternatives is higher than current maximum (3)"}
    assert client.get(f"/osrm/1.0.0/monaco-valhalla/route/v1/car/{COORDS}?alternatives=3").status_code == 200


def test_the_document_states_the_area_and_the_number_of_locations(client: TestClient) -> None:
    document = client.get("/osrm/1.0.0/openapi.json").json()
    for prefix in ("/monaco-valhalla/route/v1/{profile}", "/monaco-valhalla/{profile}/shortest/route/v1/_"):
        get = document["paths"][f"{prefix}/{{coordinates}}"]["get"]
        coordinates = next(p for p in get["parameters"] if p["name"] == "coordinates")
        pattern = re.compile(coordinates["schema"]["pattern"])
        assert pattern.fullmatch(_points(20)) and pattern.fullmatch("7.3491,43.7101;7.4901,43.7691")
        # auto's max_locations (matching 21 points against the pattern backtracks for minutes: read the bound)
        assert coordinates["description"].startswith("2 to 20 coordinates") and "{1,19}" in pattern.pattern
        assert "{1,499}" not in pattern.pattern
        assert not pattern.fullmatch(f"{START[0]},{START[1]};7.3489,43.74") and not pattern.fullmatch("0,0;0,0")
        body = document["paths"][prefix]["post"]["requestBody"]["content"]["application/json"]["schema"]
        points = body["properties"]["coordinates"]["anyOf"][0]
        assert (points["minItems"], points["maxItems"]) == (2, 20)
        lon, lat = points["items"]["prefixItems"]
        assert (lon["minimum"], lat["minimum"], lon["maximum"], lat["maximum"]) == BOX
    nearest = document["paths"]["/monaco-valhalla/nearest/v1/{profile}"]["post"]["requestBody"]["content"]["application/json"]
    assert nearest["schema"]["properties"]["coordinates"]["anyOf"][0]["maxItems"] == 10, "osrm-routed's max_nearest_locations"


def test_invalid_waypoints_and_numbers_are_refused_as_osrm_routed_does(client: TestClient) -> None:
    """Found by schemathesis: Valhalla answered 200 where osrm-routed's parameters are invalid (an OSRM source's answers)."""
    base = "/osrm/1.0.0/monaco-valhalla"
    for url, expected in (
        (f"{base}/route/v1/car/{COORDS}?waypoints=0;5;2", {"code": "InvalidOptions", "message": ""}),
        (
            f"{base}/route/v1/car/{COORDS}?waypoints=0;1",
            {"code": "InvalidValue", "message": "First and last coordinates must be specified as waypoints."},
        ),
        (f"{base}/nearest/v1/car/{START[0]},{START[1]}?number=0", {"code": "InvalidOptions", "message": ""}),
    ):
        response = client.get(url)
        assert (response.status_code, response.json()) == (400, expected), url
    posted = client.post(f"{base}/route/v1/car", json={"coordinates": [START, END], "waypoints": [0, 2**63]})
    assert (posted.status_code, posted.json()) == (400, {"code": "InvalidOptions", "message": ""})
    # no profile has a class named "" (osrm-routed's message for a class its profile lacks)
    empty = client.post(f"{base}/nearest/v1/car", json={"coordinates": [START], "exclude": [""]})
    assert (empty.status_code, empty.json()) == (400, {"code": "InvalidValue", "message": "Exclude flag combination is not supported."})
    assert client.get(f"{base}/route/v1/car/{COORDS}?waypoints=0;2").status_code == 200


def test_valhallas_own_refusal_of_too_many_locations_is_too_big() -> None:
    """A valhalla-http source without limits.max_locations: its servers' refusal keeps osrm-routed's code."""
    from roadkit_valhalla import native
    from roadkit_valhalla.base import engine_error

    answer = native.engine_error(engine_error("Exceeded max locations: 20", "route"))
    assert (answer.status, json.loads(answer.body)["code"]) == (400, "TooBig")


async def test_the_source_reads_valhallas_max_locations_when_it_connects(source: Any) -> None:
    assert source.native_limits == {"max_viaroute_size": 20}, "auto's 20 (pedestrian and multimodal: 50)"
    assert source.native_bbox == BOX


def test_the_lowest_max_locations_of_the_sources_costings() -> None:
    from roadkit_valhalla.source import least_max_locations

    settings = {"service_limits": {"auto": {"max_locations": 20}, "pedestrian": {"max_locations": 50}, "bus": {"max_locations": True}}}
    assert least_max_locations(settings, ["pedestrian"]) == 50
    assert least_max_locations(settings, ["auto", "pedestrian"]) == 20
    assert least_max_locations(settings, ["bus", "taxi"]) is None, "none given: Valhalla's own refusal (TooBig)"
    assert least_max_locations([], ["auto"]) is None and least_max_locations({"service_limits": [1]}, ["auto"]) is None
