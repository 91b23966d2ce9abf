"""Routes through the simple API on the Valhalla resource, and the multimodal profile on the demo buses."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

ROUTE = "/simple/1.0.0/route"
NEAREST = "/simple/1.0.0/nearest"
BASE = {"resource": "monaco-valhalla", "start": "7.41337,43.72956", "end": "7.41983,43.73115"}
# Fontvieille → Larvotto: 3.7 km, the length of bus line 1 of the demo feed.
FAR = {"resource": "monaco-valhalla", "start": "7.4167,43.7284", "end": "7.4350,43.7480", "timeUnit": "second"}


def route(client: TestClient, **params: Any) -> Any:
    response = client.get(ROUTE, params={**BASE, **params})
    assert response.status_code == 200, response.text
    return response.json()


def modes(body: dict[str, Any]) -> list[str]:
    return [step["attributes"]["mode"] for portion in body["portions"] for step in portion["steps"]]


def test_route_response_has_road2_fields(client: TestClient) -> None:
    body = route(client, intermediates="7.4246,43.7383")
    assert list(body)[:10] == [
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
    ]
    assert len(body["portions"]) == 2 and body["geometry"]["type"] == "LineString"
    assert (
        body["portions"][0]["steps"][0]["instruction"] == {"type": "depart"}
        or body["portions"][0]["steps"][0]["instruction"]["type"] == "depart"
    )
    assert all(
        set(step) == {"geometry", "attributes", "distance", "duration", "instruction"} for p in body["portions"] for step in p["steps"]
    )


def test_route_constraints_are_applied_not_dropped(client: TestClient) -> None:
    params = {"start": "7.41337,43.72956", "end": "7.4350,43.7480"}
    free = route(client, **params)
    banned = route(client, **params, constraints='{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}')
    assert banned["constraints"] == [{"type": "banned", "key": "waytype", "operator": "=", "value": "tunnel"}]
    assert banned["distance"] > free["distance"] * 1.2


def test_a_ban_no_route_can_keep_is_no_path_found(client: TestClient) -> None:
    # A point whose nearby roads leave only through the motorway: Road2 routed it on the motorway anyway.
    params = {"start": "7.3950,43.7530", "end": "7.41337,43.72956"}
    assert route(client, **params)["distance"] > 10_000
    no_motorway = '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}'
    response = client.get(ROUTE, params={**BASE, **params, "constraints": no_motorway})
    assert response.status_code == 404, response.text
    assert response.json()["error"]["message"].startswith("No path found")


def test_route_date_time_is_validated(client: TestClient) -> None:
    response = client.get(ROUTE, params={**BASE, "date_time": "15/06/2026 08:00"})
    assert response.status_code == 400 and "Parameter 'date_time' is invalid" in response.json()["error"]["message"]
    assert route(client, date_time="2026-06-15T08:00")["distance"] > 0


def test_nearest_has_the_osrm_plugin_shape(client: TestClient) -> None:
    response = client.get(NEAREST, params={"resource": "monaco-valhalla", "coordinates": "7.41337,43.72956", "nbPoints": "3"})
    body = response.json()
    assert list(body) == ["resource", "resourceVersion", "coordinates", "crs", "points"]
    assert [p["id"] for p in body["points"]] == ["0", "1", "2"]
    assert all(len(p["geometry"]) == 2 and p["distance"] >= 0 for p in body["points"])
    assert (
        client.get(NEAREST, params={"resource": "monaco-valhalla", "coordinates": "7.41337,43.72956", "nbPoints": "11"}).status_code == 400
    )


def test_multimodal_route_takes_the_demo_bus(client: TestClient) -> None:
    body = route(client, **FAR, profile="multimodal", date_time="2026-06-15T08:00")
    assert "transit" in modes(body) and set(modes(body)) <= {"walking", "transit"}
    walking = route(client, **FAR, profile="pedestrian")
    assert body["duration"] < walking["duration"] * 0.85
    bus_steps = [s for p in body["portions"] for s in p["steps"] if s["attributes"]["mode"] == "transit"]
    assert sum(s["distance"] for s in bus_steps) > 500


def test_multimodal_route_at_night_waits_for_the_first_bus(client: TestClient) -> None:
    # The demo buses run from 05:00: a trip asked at 02:00 includes three hours of waiting.
    night = route(client, **FAR, profile="multimodal", date_time="2026-06-15T02:00")
    morning = route(client, **FAR, profile="multimodal", date_time="2026-06-15T05:00")
    assert "transit" in modes(night)
    assert night["duration"] >= 3 * 3600 > morning["duration"]


def test_multimodal_route_follows_the_timetable(client: TestClient) -> None:
    # Buses leave every 10 minutes: leaving later shifts the waiting time, never below the ride itself.
    durations = {t: route(client, **FAR, profile="multimodal", date_time=f"2026-06-15T08:0{t}")["duration"] for t in (0, 5)}
    assert all(d > 0 for d in durations.values())
    assert durations[0] != pytest.approx(durations[5], abs=1.0)
