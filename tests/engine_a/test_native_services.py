"""Native OSRM API: table, trip, match and tile answer as osrm-routed does on the same data and URLs."""

from __future__ import annotations

import random

import pytest
from starlette.testclient import TestClient

from tests.engine_a.native_support import Routed, compare, generate_post
from tests.engine_a.test_native_route_nearest import URLS_PER_SERVICE, differential


@pytest.mark.parametrize("service", ["table", "trip", "match"])
def test_native_answers_equal_osrm_routed(service: str, routed: Routed, native: TestClient) -> None:
    statuses = differential(service, routed, native)
    assert statuses.get(200, 0) >= URLS_PER_SERVICE // 6 and statuses.get(400, 0) >= URLS_PER_SERVICE // 10, statuses


def test_native_tiles_equal_osrm_routed(routed: Routed, native: TestClient) -> None:
    statuses = differential("tile", routed, native, count=URLS_PER_SERVICE)
    assert statuses.get(200, 0) >= URLS_PER_SERVICE // 5 and statuses.get(400, 0) >= URLS_PER_SERVICE // 10, statuses


@pytest.mark.parametrize("service", ["route", "nearest", "table", "trip", "match"])
def test_native_answers_equal_osrm_routed_on_mld(service: str, routed_mld: Routed, native: TestClient) -> None:
    """The pedestrian dataset is built for MLD (several alternatives, other code paths in the engine)."""
    statuses = differential(service, routed_mld, native, count=80, resource="diffmld")
    assert statuses.get(200, 0) >= 10, statuses


@pytest.mark.parametrize("service", ["route", "nearest", "table", "match", "trip", "tile"])
def test_native_post_requests_equal_osrm_routed(service: str, routed: Routed, native: TestClient) -> None:
    """osrm-routed 26 takes route, nearest, table and match options as a JSON body (others: NotImplemented)."""
    rng = random.Random(f"roadkit-native-post-{service}")
    failures: list[str] = []
    statuses: dict[int, int] = {}
    count = 150 if service in ("route", "nearest", "table", "match") else 20
    for _ in range(count):
        path, body, content_type = generate_post(service, rng)
        expected = routed.post(path, body, content_type)
        statuses[expected[0]] = statuses.get(expected[0], 0) + 1
        response = native.post(f"/osrm/1.0.0/diff{path}", content=body, headers={"content-type": content_type} if content_type else {})
        try:
            compare(
                f"POST {path} {body[:200]!r} ({content_type})",
                expected,
                (response.status_code, response.headers.get("content-type", ""), response.content),
            )
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, f"{len(failures)} of {count} answers differ:\n" + "\n".join(failures[:8])
    if service in ("route", "nearest", "table", "match"):
        assert statuses.get(200, 0) >= count // 6 and statuses.get(400, 0) >= count // 10, statuses
