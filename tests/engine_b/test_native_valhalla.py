"""The native OSRM API on a Valhalla resource: route and nearest in Valhalla's OSRM-format output."""

from __future__ import annotations

import json
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


@pytest.mark.parametrize("service", ["table", "trip", "match"])
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
    assert listed["monaco-valhalla"]["services"] == ["route", "nearest"]


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
    assert statuses.get(200, 0) >= 20, statuses
