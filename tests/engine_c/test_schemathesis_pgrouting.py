"""schemathesis on the simple API of the Monaco pgRouting service (a private PostgreSQL cluster): every check, 0 failures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.schemathesis_support import run_simple_api, serve


@pytest.fixture(scope="module")
def pgrouting_demo(pg_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    yield from serve(pg_example, tmp_path_factory)


def test_the_pgrouting_simple_api_passes_every_schemathesis_check(pgrouting_demo: tuple[str, str], tmp_path: Path) -> None:
    _, simple = pgrouting_demo
    run_simple_api(simple, tmp_path, {"/getcapabilities", "/route", "/isochrone", "/nearest"})
