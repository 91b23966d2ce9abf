"""OGC API – Routes on the Monaco pgRouting resource (checks in tests/ogcapi_routes_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from roadkit.plugins import Plugins
from roadkit.testing import service_client
from tests import ogcapi_routes_support as ogc
from tests.schemathesis_support import run, serve

RID = "monaco-pgrouting"
MODES = ["car", "pedestrian"]


@pytest.fixture(scope="module")
def client(pg_example: Path) -> Iterator[TestClient]:
    with service_client(pg_example / "service.toml", Plugins.create()) as test_client:
        yield test_client


def test_landing_page_conformance_and_api(client: TestClient) -> None:
    conformance = ogc.check_landing_and_conformance(client, RID, MODES)
    assert ogc.SPEC + "time" not in conformance["conformsTo"]


def test_every_preference_and_mode(client: TestClient) -> None:
    ogc.check_every_preference_and_mode(client, RID, MODES)


def test_five_waypoints_in_all_120_orders(client: TestClient) -> None:
    """/conf/intermediate-waypoints/compute-route-success: the route passes each of 5 waypoints in order, all 120 orders."""
    ogc.check_waypoints_in_every_order(client, RID)


def test_invalid_and_unroutable_definitions(client: TestClient) -> None:
    ogc.check_errors(client, RID)


def test_stored_routes(client: TestClient) -> None:
    ogc.check_manage_routes(client, RID)


def test_speed_limits_where_the_graph_has_them(client: TestClient) -> None:
    route = ogc.valid_route(client.post(f"/ogcapi-routes/1.0/{RID}/routes", json=ogc.definition(*ogc.FIVE)))
    limits = [s["properties"] for s in route["features"] if "speedLimit" in s["properties"]]
    assert limits and all(p["speedLimitUnit"] == "kmph" and p["speedLimit"] > 0 for p in limits)


@pytest.fixture(scope="module")
def demo(pg_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    yield from serve(pg_example, tmp_path_factory)


def test_the_ogc_api_passes_every_schemathesis_check(demo: tuple[str, str], tmp_path: Path) -> None:
    (tmp_path / "schemathesis.toml").write_text(ogc.SCHEMATHESIS_CONFIG)
    base = demo[1].replace("/simple/1.0.0", f"/ogcapi-routes/1.0/{RID}")
    run(f"{base}/api", tmp_path, "--phases", "examples,coverage,fuzzing", examples=20)
