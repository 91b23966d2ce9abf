"""schemathesis on the Monaco Valhalla service: its simple API and its native OSRM API; every check, 0 failures.

The documents are generated for this service (tests/engine_a/test_schemathesis.py says what they must
keep). The simple API's with Valhalla's costs, its isochrones (one variant per unit, each with the
largest costValue the engine computes in that unit), its date_time range and its banned values; the
native API's (route, nearest, and table through the matrix) with the source's area (a point outside it is refused before the
engine) and Valhalla's max_locations under osrm-routed's limits.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.schemathesis_support import run_native_api, run_simple_api, serve


@pytest.fixture(scope="module")
def valhalla_demo(valhalla_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    yield from serve(valhalla_example, tmp_path_factory)


def test_the_valhalla_simple_api_passes_every_schemathesis_check(valhalla_demo: tuple[str, str], tmp_path: Path) -> None:
    _, simple = valhalla_demo
    run_simple_api(simple, tmp_path, {"/getcapabilities", "/route", "/isochrone", "/nearest", "/matrix"})


def test_the_valhalla_native_osrm_api_passes_every_schemathesis_check(valhalla_demo: tuple[str, str], tmp_path: Path) -> None:
    _, simple = valhalla_demo
    native = simple.replace("/simple/1.0.0", "/osrm/1.0.0")
    paths = set(httpx.get(f"{native}/openapi.json", timeout=30).json()["paths"])
    assert {f"/monaco-valhalla/{s}/v1/{{profile}}{c}" for s in ("route", "nearest") for c in ("", "/{coordinates}")} <= paths
    assert "/monaco-valhalla/table/v1/{profile}/{coordinates}" in paths, "table, through the matrix"
    assert not any("/trip/" in path or "/match/" in path for path in paths), "only the services Valhalla answers"
    run_native_api(native, tmp_path)
