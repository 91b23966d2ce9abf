"""Native OSRM API: route and nearest answer as osrm-routed does on the same data and URLs."""

from __future__ import annotations

import random

import pytest
from starlette.testclient import TestClient

from tests.engine_a.native_support import Routed, compare, encode, generate

URLS_PER_SERVICE = 250


def native_get(client: TestClient, url: str, resource: str = "diff") -> tuple[int, str, bytes]:
    response = client.get(f"/osrm/1.0.0/{resource}{url}")
    return response.status_code, response.headers.get("content-type", ""), response.content


def differential(service: str, routed: Routed, native: TestClient, count: int = URLS_PER_SERVICE, resource: str = "diff") -> dict[int, int]:
    """``count`` generated URLs answered by both; every difference is reported. Returns statuses seen."""
    rng = random.Random(f"roadkit-native-{service}-{resource}")
    failures: list[str] = []
    statuses: dict[int, int] = {}
    for _ in range(count):
        url = encode(generate(service, rng))
        expected = routed.get(url)
        statuses[expected[0]] = statuses.get(expected[0], 0) + 1
        try:
            compare(url, expected, native_get(native, url, resource))
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, f"{len(failures)} of {count} answers differ:\n" + "\n".join(failures[:8])
    return statuses


@pytest.mark.parametrize("service", ["route", "nearest"])
def test_native_answers_equal_osrm_routed(service: str, routed: Routed, native: TestClient) -> None:
    statuses = differential(service, routed, native)
    # the generator reaches both kinds of answers, or the comparison proves little
    assert statuses.get(200, 0) >= URLS_PER_SERVICE // 4 and statuses.get(400, 0) >= URLS_PER_SERVICE // 10, statuses
