"""OSRM fixtures: the Monaco datasets built once (cached across runs) and a service app on them."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from roadkit.app import create_app
from roadkit.cli import main as roadkit_main
from roadkit.config import load_service
from roadkit.plugins import Plugins
from tests.conftest import EXAMPLE, MONACO_PBF, cache_root, content_key, copy_example

OSRM_ONLY = ("*valhalla*", "*pgrouting*", "gtfs")


@pytest.fixture(scope="session")
def osrm_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Monaco example (OSRM sources only) whose datasets live in the cache, built when missing."""
    sources = sorted((EXAMPLE / "sources").glob("monaco-*-*.source"))
    key = content_key(MONACO_PBF, version("osrm-bindings"), *[p for p in sources if "valhalla" not in p.name])
    data = cache_root() / f"osrm-monaco-{key}"
    data.mkdir(parents=True, exist_ok=True)
    example = copy_example(tmp_path_factory.mktemp("monaco"), data, OSRM_ONLY)
    assert roadkit_main(["prepare", "--config", str(example / "server.toml")]) == 0
    return example


@pytest.fixture(scope="session")
def osrm_datasets(osrm_example: Path) -> dict[str, Path]:
    """``{"car-fastest": .../monaco.osrm, ...}``."""
    return {d.name: d / "monaco.osrm" for d in sorted((osrm_example / "data" / "osrm").iterdir()) if d.is_dir()}


@pytest.fixture(scope="module")
def client(osrm_example: Path) -> Iterator[TestClient]:
    """A client of the Monaco service's app, inside its lifespan (sources connected)."""
    app = create_app(load_service(osrm_example / "service.toml", cors=osrm_example / "cors.toml"), Plugins.create())
    with TestClient(app, base_url="http://testserver") as test_client:
        yield test_client
