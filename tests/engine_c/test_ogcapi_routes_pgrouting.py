"""OGC API – Routes on the Monaco pgRouting resource (checks in tests/ogcapi_routes_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from roadkit.plugins import Plugins
from roadkit.testing import service_client
from tests import ogcapi_routes_support as ogc

RID = "monaco-pgrouting"
MODES = ["car", "pedestrian"]


@pytest.fixture(scope="module")
def client(pg_example: Path) -> Iterator[TestClient]:
    with service_client(pg_example / "service.toml", Plugins.create()) as test_client:
        yield test_client


class TestOgcRoutes(ogc.ResourceChecks):
    rid, modes, declares_time = RID, MODES, False

    @pytest.fixture
    def example(self, pg_example: Path) -> Path:
        return pg_example


def test_speed_limits_where_the_graph_has_them(client: TestClient) -> None:
    route = ogc.valid_route(client.post(f"/ogcapi-routes/1.0/{RID}/routes", json=ogc.definition(*ogc.FIVE)))
    limits = [s["properties"] for s in route["features"] if "speedLimit" in s["properties"]]
    assert limits and all(p["speedLimitUnit"] == "kmph" and p["speedLimit"] > 0 for p in limits)
