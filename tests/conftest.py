"""Shared fixtures: the data cache and the Monaco example with built engine data."""

from __future__ import annotations

import hashlib
import os
import shutil
from importlib.metadata import version
from pathlib import Path

import pytest

from roadkit.cli import main as roadkit_main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "monaco"
MONACO_PBF = EXAMPLE / "monaco.osm.pbf"


def cache_root() -> Path:
    """Where engine data built by the tests is kept across runs (``$ROADKIT_CACHE``)."""
    path = Path(os.environ.get("ROADKIT_CACHE", ROOT / ".cache"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def content_key(*parts: bytes | str | Path) -> str:
    """A short hash of files and strings: data built from the same inputs is reused."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            digest.update(part.read_bytes())
        else:
            digest.update(part.encode() if isinstance(part, str) else part)
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def monaco_pbf() -> Path:
    return MONACO_PBF


def copy_example(target: Path, data: Path, ignore: tuple[str, ...] = ()) -> Path:
    """The Monaco example's configuration copied to ``target`` with ``data/`` pointing at ``data``.

    What a demo run left in the example (its stored OGC routes) stays there: each test starts empty.
    """
    runtime = ("*.sqlite", "*.sqlite-*")
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("data", "*.pbf", *runtime, *ignore), dirs_exist_ok=True)
    os.symlink(MONACO_PBF, target / "monaco.osm.pbf")
    (target / "data").symlink_to(data, target_is_directory=True)
    return target


OSRM_ONLY = ("*valhalla*", "*pgrouting*", "gtfs")


@pytest.fixture(scope="session")
def osrm_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Monaco example (OSRM sources only) whose datasets live in the cache, built when missing."""
    sources = sorted((EXAMPLE / "sources").glob("monaco-*-*.source"))
    profiles = sorted((EXAMPLE / "profiles").glob("*.lua"))  # a changed profile builds new datasets
    key = content_key(MONACO_PBF, version("osrm-bindings"), *[p for p in sources if "valhalla" not in p.name], *profiles)
    data = cache_root() / f"osrm-monaco-{key}"
    data.mkdir(parents=True, exist_ok=True)
    example = copy_example(tmp_path_factory.mktemp("monaco"), data, OSRM_ONLY)
    assert roadkit_main(["prepare", "--config", str(example / "server.toml")]) == 0
    return example
