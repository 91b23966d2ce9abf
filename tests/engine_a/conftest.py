"""OSRM fixtures: the Monaco datasets built once (cached across runs) and a service app on them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from roadkit.plugins import Plugins
from roadkit.testing import service_client
from tests.engine_a.native_support import Routed, write_native_service


@pytest.fixture(scope="session")
def osrm_datasets(osrm_example: Path) -> dict[str, Path]:
    """``{"car-fastest": .../monaco.osrm, ...}``."""
    return {d.name: d / "monaco.osrm" for d in sorted((osrm_example / "data" / "osrm").iterdir()) if d.is_dir()}


@pytest.fixture(scope="module")
def client(osrm_example: Path) -> Iterator[TestClient]:
    """A client of the Monaco service's app, inside its lifespan (sources connected)."""
    with service_client(osrm_example / "service.toml", Plugins.create(), cors=osrm_example / "cors.toml") as test_client:
        yield test_client


@pytest.fixture(scope="session")
def routed(osrm_datasets: dict[str, Path]) -> Iterator[Routed]:
    """osrm-routed on the car dataset (CH), as resource ``diff`` of ``native`` serves it."""
    server = Routed(osrm_datasets["car-fastest"])
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def routed_mld(osrm_datasets: dict[str, Path]) -> Iterator[Routed]:
    """osrm-routed on the pedestrian dataset (MLD), as resource ``diffmld`` of ``native`` serves it."""
    server = Routed(osrm_datasets["pedestrian-fastest"], "MLD")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def native(osrm_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """A client of a service on the same datasets, with resources ``diff`` and ``diffmld`` limited like ``routed``."""
    path = write_native_service(osrm_example, tmp_path_factory.mktemp("native"))
    with service_client(path, Plugins.create()) as test_client:
        yield test_client
