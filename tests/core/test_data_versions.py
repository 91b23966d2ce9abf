"""Data versions in source files: where a version's data lives, and the errors naming file and key."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from roadkit.config.loader import parse_source
from roadkit.errors import ConfigurationError
from roadkit.routing.versions import apply_version, new_version

WHERE = Path("/srv/sources/car.source")
KEYS = {"storage.file": "path", "storage.schema": "name"}


def test_a_version_goes_into_the_data_keys_by_placeholder_or_by_rule() -> None:
    plain = {"storage": {"file": "../data/car/monaco.osrm", "schema": "monaco"}, "cost": {"profile": "car"}}
    assert apply_version(plain, None, KEYS, WHERE) == plain
    versioned = apply_version(plain, "2026-11.a", KEYS, WHERE)
    assert versioned == {"storage": {"file": "../data/car/2026-11.a/monaco.osrm", "schema": "monaco_2026_11_a"}, "cost": {"profile": "car"}}
    assert plain["storage"]["file"] == "../data/car/monaco.osrm"  # the file's options are left as they were
    placed = {"storage": {"file": "data/{version}/car/monaco.osrm", "schema": "graph_{version}_x"}}
    assert apply_version(placed, "V2", KEYS, WHERE)["storage"] == {"file": "data/V2/car/monaco.osrm", "schema": "graph_v2_x"}
    assert apply_version({"storage": {"file": "monaco.osrm"}}, "v2", KEYS, WHERE)["storage"]["file"] == "v2/monaco.osrm"
    assert apply_version({"storage": "not a table"}, "v2", KEYS, WHERE) == {"storage": "not a table"}


def test_a_placeholder_without_a_version_names_file_and_key() -> None:
    with pytest.raises(ConfigurationError) as caught:
        apply_version({"storage": {"file": "data/{version}/monaco.osrm"}}, None, KEYS, WHERE)
    assert caught.value.problems == [f"{WHERE}: storage.file: {{version}} needs a version key in the file, got none"]


@pytest.mark.parametrize("value", ["../up", "", "a b", "x" * 65, 3, ".hidden", "v1\n"])
def test_a_source_file_refuses_a_version_that_cannot_name_a_folder(value: object) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_source({"id": "car", "type": "osrm", "version": value}, WHERE)
    assert caught.value.problems[0].startswith(f"{WHERE}: version: expected letters, digits")


def test_a_source_file_keeps_its_version() -> None:
    assert parse_source({"id": "car", "type": "osrm", "version": "20261126-0a1b2c3d4e"}, WHERE).version == "20261126-0a1b2c3d4e"
    assert parse_source({"id": "car", "type": "osrm"}, WHERE).version is None


def test_a_new_version_is_the_date_and_a_hash_of_the_inputs(tmp_path: Path) -> None:
    extract = tmp_path / "monaco.osm.pbf"
    extract.write_bytes(b"first")
    now = datetime(2026, 11, 26, tzinfo=UTC)
    first = new_version({"profile": "car"}, [extract], now=now)
    assert first.startswith("20261126-") and len(first) == 19
    assert new_version({"profile": "car"}, [extract], now=now) == first
    assert new_version({"profile": "foot"}, [extract], now=now) != first
    extract.write_bytes(b"second")
    assert new_version({"profile": "car"}, [extract], now=now) != first
