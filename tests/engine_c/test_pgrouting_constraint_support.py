"""What a pgRouting resource may offer: prefer and avoid weigh routes and matrices, never an isochrone's reach."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from roadkit.config import load_service
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.serving.service import Service
from tests.engine_c.conftest import make_pg_example


def test_prefer_or_avoid_on_a_pgrouting_isochrone_is_refused_in_the_configuration(tmp_path: Path, pg_dsn: str) -> None:
    # Before: the resource started, its capabilities advertised avoid on isochrones, and requests got
    # the same polygon with or without it (the isochrone SQL reads only banned constraints).
    example = make_pg_example(tmp_path / "example", pg_dsn)
    resource = example / "resources" / "monaco-pgrouting.resource"
    text = resource.read_text()
    route, isochrone = text.split("[operations.isochrone.constraints]")
    assert 'availableConstraintType = ["banned", "prefer", "avoid"]' in route  # routes and matrices keep theirs
    isochrone = isochrone.replace('availableConstraintType = ["banned"]', 'availableConstraintType = ["banned", "avoid"]', 1)
    resource.write_text(route + "[operations.isochrone.constraints]" + isochrone)
    service = Service(load_service(example / "service.toml"), Plugins.create())
    try:
        with pytest.raises(ConfigurationError) as caught:
            asyncio.run(service.start())
    finally:
        asyncio.run(service.stop())
    assert caught.value.problems == [
        f"{resource}: operations.isochrone.constraints.keys[key=waytype].availableConstraintType: 'avoid' is not applied by "
        "source 'monaco-pgrouting' (pgrouting): pgRouting isochrones apply banned only (prefer and avoid weigh routes and "
        "matrices, not reach)"
    ]
