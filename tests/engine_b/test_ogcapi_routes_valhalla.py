"""OGC API – Routes on the Monaco Valhalla resource, with the time class (checks in tests/ogcapi_routes_support.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from shapely import LineString, Polygon
from starlette.testclient import TestClient

from roadkit.apis.ogcapi_routes.compute import local_departure
from roadkit.routing.model import Cost, RouteRequest
from roadkit_valhalla.options import ValhallaCost
from roadkit_valhalla.translate import route_body
from tests import ogcapi_routes_support as ogc

RID = "monaco-valhalla"
MODES = ["car", "pedestrian", "multimodal"]
ROUTES = f"/ogcapi-routes/1.0/{RID}/routes"


class TestOgcRoutes(ogc.ResourceChecks):
    rid, modes, declares_time = RID, MODES, True  # the resource names its time zone

    @pytest.fixture
    def example(self, valhalla_example: Path) -> Path:
        return valhalla_example


def test_a_departure_in_utc_times_start_and_end(client: TestClient) -> None:
    when = {"value": {"timestamp": "2026-06-01T08:00:00Z", "type": "departure"}}
    route = ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, when=when)))
    overview, start, *segments, end = route["features"]
    assert start["properties"]["timestamp"] == "2026-06-01T08:00:00Z"
    assert all("duration_s" in s["properties"] for s in segments)
    seconds = overview["properties"]["duration_s"]
    assert end["properties"]["timestamp"] > start["properties"]["timestamp"] and seconds > 0
    # Also beside "inputs", as the standard's abstract tests send it.
    beside = {**ogc.definition(ogc.START, ogc.END), "when": when}
    assert ogc.valid_route(client.post(ROUTES, json=beside))["features"][1]["properties"]["timestamp"] == "2026-06-01T08:00:00Z"


def test_a_departure_not_in_utc_is_refused(client: TestClient) -> None:
    for timestamp in ("2026-06-01T08:00:00", "2026-06-01T10:00:00+02:00", "2026-13-01T08:00:00Z", "tomorrow"):
        when = {"value": {"timestamp": timestamp}}
        answer = client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, when=when))
        assert answer.status_code == 400 and "inputs.when.value.timestamp" in answer.text, timestamp
    leaving = {"value": {"timestamp": "2026-06-01T08:00:00Z", "type": "leaving"}}
    answer = client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, when=leaving))
    assert answer.status_code == 400 and "inputs.when.value.type" in answer.text


def test_an_arrival_time_ends_the_route_then(client: TestClient) -> None:
    when = {"value": {"timestamp": "2026-06-01T08:00:00Z", "type": "arrival"}}
    route = ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, when=when)))
    overview, start, *_, end = route["features"]
    assert end["properties"]["timestamp"] == "2026-06-01T08:00:00Z"
    left = datetime.fromisoformat(start["properties"]["timestamp"])
    assert (datetime(2026, 6, 1, 8, tzinfo=UTC) - left).total_seconds() == pytest.approx(overview["properties"]["duration_s"], abs=0.001)


def test_the_arrival_reaches_the_engine() -> None:
    """Valhalla's "arrive by" (date_time type 2): the engine searches backwards from the arrival."""
    request = RouteRequest(
        points=((7.41, 43.73), (7.42, 43.73)), cost=Cost("car", "fastest"), date_time=datetime(2026, 6, 1, 10), arrive_by=True
    )
    assert route_body(request, ValhallaCost("car", "auto"))["date_time"] == {"type": 2, "value": "2026-06-01T10:00"}


def test_the_engine_reads_the_networks_local_time() -> None:
    monaco = ZoneInfo("Europe/Monaco")
    assert local_departure(datetime(2026, 6, 1, 8, 0, 30, tzinfo=UTC), monaco) == datetime(2026, 6, 1, 10, 0)  # summer: UTC+2
    assert local_departure(datetime(2026, 1, 15, 23, 30, tzinfo=UTC), monaco) == datetime(2026, 1, 16, 0, 30)  # winter: UTC+1


def test_a_departure_the_engine_cant_read_is_unroutable(client: TestClient) -> None:
    # Valhalla reads years from 1901; Monaco's time of the last hour of 9999 (UTC) is in year 10000.
    for when in (
        {"value": {"timestamp": "1900-06-01T08:00:00Z"}},
        {"value": {"timestamp": "9999-12-31T23:59:59Z"}},
        {"value": {"timestamp": "9999-12-31T23:59:59Z", "type": "arrival"}},
    ):
        answer = client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, when=when))
        assert answer.status_code == 422 and "inputs.when.value.timestamp" in answer.text, (when, answer.text)


def square(center: list[float], half: float) -> list[list[float]]:
    x, y = center
    return [[x - half, y - half], [x + half, y - half], [x + half, y + half], [x - half, y + half], [x - half, y - half]]


def test_a_route_never_crosses_an_obstacle(client: TestClient) -> None:
    assert ogc.SPEC + "obstacles" in client.get(f"/ogcapi-routes/1.0/{RID}/conformance").json()["conformsTo"]
    plain = ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END)))
    line = plain["features"][0]["geometry"]["coordinates"]
    middle = line[len(line) // 2]
    block = square(middle, 0.0003)
    assert LineString(line).intersects(Polygon(block))
    for obstacles in (
        {"value": {"type": "MultiPolygon", "coordinates": [[block]]}},
        {"type": "MultiPolygon", "coordinates": [[block[:-1]]]},
    ):
        route = ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, obstacles=obstacles)))
        around = route["features"][0]["geometry"]["coordinates"]
        assert not LineString(around).intersects(Polygon(block))
        assert around != line  # another way round
    # Beside "inputs", as the standard's abstract tests send it.
    beside = {**ogc.definition(ogc.START, ogc.END), "obstacles": {"value": {"type": "MultiPolygon", "coordinates": [[block]]}}}
    assert not LineString(ogc.valid_route(client.post(ROUTES, json=beside))["features"][0]["geometry"]["coordinates"]).intersects(
        Polygon(block)
    )


def test_an_obstacle_no_route_avoids_is_unroutable(client: TestClient) -> None:
    walled = {"value": {"type": "MultiPolygon", "coordinates": [[square(ogc.END, 0.002)]]}}
    answer = client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, obstacles=walled))
    assert answer.status_code == 422, answer.text
    bad = {"value": {"type": "MultiPolygon", "coordinates": [[[[7.41, 43.73], [7.42, 43.73]]]]}}
    answer = client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, obstacles=bad))
    assert answer.status_code == 400 and "inputs.obstacles.value.coordinates[0][0]" in answer.text
