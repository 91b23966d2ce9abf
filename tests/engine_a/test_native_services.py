"""Native OSRM API: table, trip, match and tile answer as osrm-routed does on the same data and URLs."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.engine_a.native_support import Routed, routed, routed_mld
from tests.engine_a.test_native_route_nearest import URLS_PER_SERVICE, differential, native

__all__ = ["native", "routed", "routed_mld"]


@pytest.mark.parametrize("service", ["table", "trip", "match"])
def test_native_answers_equal_osrm_routed(service: str, routed: Routed, native: TestClient) -> None:
    statuses = differential(service, routed, native)
    assert statuses.get(200, 0) >= URLS_PER_SERVICE // 6 and statuses.get(400, 0) >= URLS_PER_SERVICE // 10, statuses


def test_native_tiles_equal_osrm_routed(routed: Routed, native: TestClient) -> None:
    statuses = differential("tile", routed, native, count=60)
    assert statuses.get(200, 0) >= 12, statuses


@pytest.mark.parametrize("service", ["route", "nearest", "table", "trip", "match"])
def test_native_answers_equal_osrm_routed_on_mld(service: str, routed_mld: Routed, native: TestClient) -> None:
    """The pedestrian dataset is built for MLD (several alternatives, other code paths in the engine)."""
    statuses = differential(service, routed_mld, native, count=80, resource="diffmld")
    assert statuses.get(200, 0) >= 10, statuses
