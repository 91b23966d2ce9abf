"""schemathesis on the simple API of the Monaco Valhalla service: routes, isochrones, nearest points; every check, 0 failures.

The document is generated for this service (tests/engine_a/test_schemathesis.py says what it must
keep): here with Valhalla's costs, its isochrones (one variant per unit, each with the largest
costValue the engine computes in that unit), its date_time range and its banned values.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.schemathesis_support import run_simple_api, serve


@pytest.fixture(scope="module")
def valhalla_demo(valhalla_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    yield from serve(valhalla_example, tmp_path_factory)


def test_the_valhalla_simple_api_passes_every_schemathesis_check(valhalla_demo: tuple[str, str], tmp_path: Path) -> None:
    _, simple = valhalla_demo
    run_simple_api(simple, tmp_path, {"/getcapabilities", "/route", "/isochrone", "/nearest"})
