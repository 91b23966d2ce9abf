"""Data preparation: ``roadkit prepare`` builds only what is missing; ``roadkit valhalla-build`` by hand."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from roadkit.cli import main as roadkit_main
from roadkit.config.loader import read_source
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.routing.source import Progress
from roadkit_valhalla import ValhallaSource
from roadkit_valhalla.prepare import has_tiles
from tests.conftest import MONACO_PBF
from tests.engine_b.conftest import edit_source


def test_prepare_built_road_and_transit_tiles_and_a_quiet_configuration(valhalla_config: Path) -> None:
    config = json.loads(valhalla_config.read_text())
    tiles = Path(config["mjolnir"]["tile_dir"])
    assert has_tiles(tiles, transit=True)
    assert next((tiles / "3").rglob("*.gph"))  # level 3: the transit tiles of the demo feed
    assert config["logging"]["type"] == ""
    assert config["service_limits"]["isochrone"]["max_contours"] == 5
    assert config["service_limits"]["isochrone"]["max_time_contour"] == 600


def test_prepare_does_nothing_when_the_tiles_exist(valhalla_example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert roadkit_main(["prepare", "--config", str(valhalla_example / "server.toml")]) == 0
    assert "0 dataset(s) built" in capsys.readouterr().out


def test_prepare_without_preparation_and_without_tiles_says_what_is_missing(tmp_path: Path, variant: Path) -> None:
    import tomllib

    path = variant / "sources" / "monaco-valhalla.source"
    data = tomllib.loads(path.read_text())
    del data["preparation"]
    data["storage"] = {"config": str(tmp_path / "nothing" / "valhalla.json")}
    path.write_text(json.dumps(data))
    source = ValhallaSource.from_config(read_source(path))
    with pytest.raises(ConfigurationError, match="preparation: required to build the missing tiles"):
        ValhallaSource.prepare(source.config, source.options, force=False, progress=Progress(lambda _: None))


def test_the_build_command_is_contributed() -> None:
    assert "valhalla-build" in {c.name for c in Plugins.create().commands()}


@pytest.mark.slow
def test_valhalla_build_writes_tiles_a_tar_and_a_loadable_configuration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "built"
    assert roadkit_main(["valhalla-build", str(MONACO_PBF), str(out), "--tar"]) == 0
    printed = capsys.readouterr().out
    assert "==> valhalla_build_tiles: the road graph" in printed and "tiles ready" in printed
    config = json.loads((out / "valhalla.json").read_text())
    assert config["mjolnir"]["tile_extract"] == str(out / "tiles.tar")
    with tarfile.open(out / "tiles.tar") as archive:
        assert any(name.endswith(".gph") for name in archive.getnames())
    import valhalla

    answer = valhalla.Actor(str(out / "valhalla.json")).route(
        {"locations": [{"lon": 7.41337, "lat": 43.72956}, {"lon": 7.41983, "lat": 43.73115}], "costing": "auto"}
    )
    assert answer["trip"]["summary"]["length"] > 1


@pytest.mark.slow
def test_prepare_rebuilds_with_force_in_a_fresh_folder(variant: Path, tmp_path: Path) -> None:
    edit_source(variant, storage={"config": str(tmp_path / "v" / "valhalla.json"), "dir": str(tmp_path / "v" / "tiles")})
    source = ValhallaSource.from_config(read_source(variant / "sources" / "monaco-valhalla.source"))
    lines: list[str] = []
    assert ValhallaSource.prepare(source.config, source.options, force=False, progress=Progress(lines.append))
    assert any("valhalla_ingest_transit" in line for line in lines)
    assert has_tiles(tmp_path / "v" / "tiles", transit=True)
    assert not ValhallaSource.prepare(source.config, source.options, force=False, progress=Progress(lines.append))
