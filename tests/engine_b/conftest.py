"""Valhalla fixtures: the Monaco tiles (with the demo bus feed) built once, cached across runs, and apps on them.

The tiles live under ``$ROADKIT_CACHE/valhalla-monaco-<key>``, where the key hashes the inputs
(the extract, every GTFS file and the Valhalla version that builds them), so a changed input
builds a new set and an unchanged one is reused.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from roadkit.cli import main as roadkit_main
from roadkit.config.loader import read_source
from roadkit.plugins import Plugins
from roadkit.testing import service_client
from roadkit_valhalla import ValhallaSource
from roadkit_valhalla.prepare import builder_version
from tests.conftest import EXAMPLE, MONACO_PBF, cache_root, content_key, copy_example

GTFS = EXAMPLE / "gtfs"
SOURCE = EXAMPLE / "sources" / "monaco-valhalla.source"
START = (7.41337, 43.72956)
END = (7.41983, 43.73115)
VIA = (7.4246, 43.7383)


def keep_only_valhalla(example: Path) -> Path:
    """Drop the example's other engines' sources and resources: the service serves only Valhalla."""
    for folder, suffix in (("sources", ".source"), ("resources", ".resource")):
        for path in (example / folder).glob(f"*{suffix}"):
            if "valhalla" not in path.name:
                path.unlink()
    return example


def make_example(target: Path, data: Path) -> Path:
    """A copy of the Monaco example, Valhalla only, whose ``data/`` points at ``data``."""
    return keep_only_valhalla(copy_example(target, data, ("*osrm*", "*pgrouting*")))


@pytest.fixture(scope="session")
def valhalla_data() -> Path:
    """The cache folder of the Monaco Valhalla data for the current inputs."""
    gtfs_files = sorted(p for p in GTFS.rglob("*.txt"))
    # The storage layout is an input too: the demo moved from a tile folder to a tar extract.
    storage = json.dumps(tomllib.loads(SOURCE.read_text())["storage"], sort_keys=True)
    key = content_key(MONACO_PBF, builder_version(), storage, *[str(p.relative_to(GTFS)) for p in gtfs_files], *gtfs_files)
    data = cache_root() / f"valhalla-monaco-{key}"
    data.mkdir(parents=True, exist_ok=True)
    return data


@pytest.fixture(scope="session")
def valhalla_example(tmp_path_factory: pytest.TempPathFactory, valhalla_data: Path) -> Path:
    """The Monaco example (Valhalla only) with its tiles built by ``roadkit prepare`` when missing."""
    example = make_example(tmp_path_factory.mktemp("monaco-valhalla"), valhalla_data)
    assert roadkit_main(["prepare", "--config", str(example / "server.toml")]) == 0
    return example


@pytest.fixture(scope="session")
def valhalla_config(valhalla_example: Path) -> Path:
    """The ``valhalla.json`` that roadkit prepare wrote."""
    return valhalla_example / "data" / "valhalla" / "valhalla.json"


@pytest.fixture(scope="session")
def actor(valhalla_config: Path) -> Any:
    """A direct Valhalla Actor on the same tiles, to compare roadkit's answers with."""
    import valhalla

    return valhalla.Actor(str(valhalla_config))


def edit_source(example: Path, **changes: Any) -> Path:
    """Rewrite the example's Valhalla source file with top-level ``changes`` (a dict per table)."""
    import tomllib

    path = example / "sources" / "monaco-valhalla.source"
    data = tomllib.loads(path.read_text())
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    path.write_text(json.dumps(data))  # a file starting with '{' is read as JSON (Road2's format)
    return path


@pytest.fixture
def variant(tmp_path: Path, valhalla_example: Path) -> Path:
    """A throw-away copy of the built example whose source file a test may edit."""
    target = tmp_path / "example"
    shutil.copytree(valhalla_example, target, symlinks=True)
    return target


def client_of(example: Path) -> AbstractContextManager[TestClient]:
    """A TestClient of the example service's app, in ``with``: inside, the lifespan has connected the sources."""
    return service_client(example / "service.toml", Plugins.create(), cors=example / "cors.toml")


@pytest.fixture(scope="module")
def client(valhalla_example: Path) -> Iterator[TestClient]:
    """A client of the Monaco Valhalla service, inside its lifespan (the source connected)."""
    with client_of(valhalla_example) as test_client:
        yield test_client


async def connected(example: Path) -> ValhallaSource:
    """The example's Valhalla source, connected."""
    source = ValhallaSource.from_config(read_source(example / "sources" / "monaco-valhalla.source"))
    await source.connect()
    return source


@pytest.fixture
async def source(valhalla_example: Path) -> AsyncIterator[ValhallaSource]:
    """The Monaco Valhalla source, connected for one test."""
    connected_source = await connected(valhalla_example)
    yield connected_source
    await connected_source.disconnect()
