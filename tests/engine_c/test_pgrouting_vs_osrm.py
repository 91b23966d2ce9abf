"""pgRouting's shortest car routes against OSRM's on the same OSM extract: the spread of their distances.

The two graphs come from different importers (osm2pgrouting vs osrm-extract: other access rules,
other snapping, turn restrictions read differently), so the distances are not equal; most must
agree closely and the median must be near 1. The figures are printed (``-s``) and in the README.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from roadkit.testing import service_client

ROUTE = "/simple/1.0.0/route"
PAIRS = 30


@pytest.fixture(scope="module")
def both(osrm_example: Path, pg_example: Path) -> Iterator[tuple[TestClient, TestClient]]:
    with service_client(osrm_example / "service.toml") as osrm, service_client(pg_example / "service.toml") as pg:
        yield osrm, pg


def test_shortest_car_distances_agree_with_osrm(both: tuple[TestClient, TestClient]) -> None:
    osrm, pg = both
    rng = random.Random(8)
    ratios: list[float] = []
    while len(ratios) < PAIRS:
        a = (round(rng.uniform(7.410, 7.440), 5), round(rng.uniform(43.727, 43.748), 5))
        b = (round(rng.uniform(7.410, 7.440), 5), round(rng.uniform(43.727, 43.748), 5))
        params = {"start": f"{a[0]},{a[1]}", "end": f"{b[0]},{b[1]}", "optimization": "shortest", "getSteps": "false"}
        o = osrm.get(ROUTE, params={**params, "resource": "monaco-osrm"})
        p = pg.get(ROUTE, params={**params, "resource": "monaco-pgrouting"})
        assert p.status_code in (200, 404), p.text
        if o.status_code != 200 or p.status_code != 200 or o.json()["distance"] < 300:
            continue
        ratios.append(p.json()["distance"] / o.json()["distance"])
    ratios.sort()
    median = statistics.median(ratios)
    within = sum(0.85 <= r <= 1.15 for r in ratios) / len(ratios)
    print(
        f"\npgRouting/OSRM shortest car distance over {len(ratios)} random Monaco pairs: median {median:.3f}, "
        f"min {ratios[0]:.3f}, max {ratios[-1]:.3f}, p10 {ratios[len(ratios) // 10]:.3f}, "
        f"p90 {ratios[len(ratios) * 9 // 10]:.3f}, within ±15 %: {within:.0%}"
    )
    assert 0.95 <= median <= 1.05
    assert within >= 0.8
