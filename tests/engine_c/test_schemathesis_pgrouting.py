"""schemathesis on the simple API of the Monaco pgRouting service (a private PostgreSQL cluster): every check, 0 failures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.schemathesis_support import run_simple_api, serve


@pytest.fixture(scope="module")
def pgrouting_demo(pg_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    yield from serve(pg_example, tmp_path_factory)


#: A matrix's point at sea, in the resource's box but far from roads, is a 400 the document can't state:
#: let such 400s of /matrix through, the hook fails on any other.
MATRIX_CONFIG = """
[[operations]]
include-path-regex = "/matrix$"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400"]
"""


def test_the_pgrouting_simple_api_passes_every_schemathesis_check(
    pgrouting_demo: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, simple = pgrouting_demo
    (tmp_path / "schemathesis.toml").write_text(MATRIX_CONFIG)
    monkeypatch.setenv("SCHEMATHESIS_HOOKS", str(Path(__file__).with_name("schemathesis_matrix_hooks.py")))
    run_simple_api(simple, tmp_path, {"/getcapabilities", "/route", "/isochrone", "/nearest", "/matrix"})
