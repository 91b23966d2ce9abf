"""The demo's Valhalla source loads its tiles from a tar extract that Valhalla memory-maps (workers share it).

The answers from the extract must be those of the tile folder it was packed from, transit included,
and a tar without the transit tiles must not count as ready when the source has GTFS feeds.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from datetime import datetime
from pathlib import Path

import pytest

from roadkit.config.loader import read_source
from roadkit.routing.model import Cost, NearestRequest, RouteRequest
from roadkit_valhalla import ValhallaSource
from roadkit_valhalla.prepare import has_tiles
from tests.engine_b.conftest import END, START, edit_source

TUNNEL_START, TUNNEL_END = (7.4167, 43.7284), (7.4350, 43.7480)  # Fontvieille → Larvotto: bus line 1 of the demo feed
MORNING = datetime(2026, 6, 15, 8, 0)


def configuration(valhalla_config: Path) -> dict[str, object]:
    return json.loads(valhalla_config.read_text())  # type: ignore[no-any-return]


def test_prepare_packed_road_and_transit_tiles_into_the_extract_the_configuration_loads(valhalla_config: Path) -> None:
    mjolnir = configuration(valhalla_config)["mjolnir"]
    assert isinstance(mjolnir, dict)
    tar = Path(mjolnir["tile_extract"])
    assert tar == valhalla_config.resolve().parent / "tiles.tar"
    with tarfile.open(tar) as archive:
        names = archive.getnames()
    levels = {name.split("/", 1)[0] for name in names if name.endswith(".gph")}
    assert {"0", "1", "2", "3"} <= levels  # level 3: the transit tiles of the demo feed
    assert has_tiles(Path("/nonexistent"), tar, transit=True)


def test_a_tar_without_transit_tiles_is_not_ready_for_a_source_with_gtfs(tmp_path: Path, valhalla_config: Path) -> None:
    tiles = Path(configuration(valhalla_config)["mjolnir"]["tile_dir"])  # type: ignore[index]
    roads_only = tmp_path / "roads.tar"
    with tarfile.open(roads_only, "w") as archive:
        for path in sorted(tiles.rglob("*.gph")):
            if path.relative_to(tiles).parts[0] != "3":
                archive.add(path, arcname=str(path.relative_to(tiles)))
    assert has_tiles(tiles, roads_only)
    assert not has_tiles(tiles, roads_only, transit=True)
    (tmp_path / "garbage.tar").write_bytes(b"not a tar at all" * 100)
    assert not has_tiles(tiles, tmp_path / "garbage.tar")
    assert not has_tiles(tiles, tmp_path / "missing.tar")
    empty = tmp_path / "empty.tar"
    tarfile.open(empty, "w").close()
    assert not has_tiles(tiles, empty)


async def connected(variant: Path, config: Path) -> ValhallaSource:
    example = config.with_suffix("")  # a copy of the example per source: edit_source reads TOML once
    shutil.copytree(variant, example, symlinks=True)
    edit_source(example, storage={"config": str(config)})
    source = ValhallaSource.from_config(read_source(example / "sources" / "monaco-valhalla.source"))
    await source.connect()
    return source


async def test_the_source_on_the_extract_alone_answers_like_the_tile_folder(tmp_path: Path, variant: Path, valhalla_config: Path) -> None:
    config = configuration(valhalla_config)
    mjolnir = config["mjolnir"]
    assert isinstance(mjolnir, dict)
    tar = Path(mjolnir["tile_extract"])
    # Extract only: the tile folder it names does not exist, so every tile comes from the tar.
    extract_only = tmp_path / "extract.json"
    extract_only.write_text(json.dumps({**config, "mjolnir": {**mjolnir, "tile_dir": str(tmp_path / "no-tiles")}}))
    folder_only = tmp_path / "folder.json"
    folder_only.write_text(json.dumps({**config, "mjolnir": {k: v for k, v in mjolnir.items() if k != "tile_extract"}}))

    from_tar = await connected(variant, extract_only)
    try:
        # Valhalla memory-maps the extract (what lets the workers of a service share its pages).
        assert str(tar) in Path("/proc/self/maps").read_text()
        tar_answers = [
            await from_tar.route(RouteRequest((START, END), Cost("car", "fastest"))),
            await from_tar.route(RouteRequest((TUNNEL_START, TUNNEL_END), Cost("multimodal", "fastest"), date_time=MORNING)),
        ]
        tar_nearest = await from_tar.nearest(NearestRequest(START, 1))
    finally:
        await from_tar.disconnect()
    from_folder = await connected(variant, folder_only)
    try:
        folder_answers = [
            await from_folder.route(RouteRequest((START, END), Cost("car", "fastest"))),
            await from_folder.route(RouteRequest((TUNNEL_START, TUNNEL_END), Cost("multimodal", "fastest"), date_time=MORNING)),
        ]
        folder_nearest = await from_folder.nearest(NearestRequest(START, 1))
    finally:
        await from_folder.disconnect()

    for got, expected in zip(tar_answers, folder_answers, strict=True):
        assert got.distance == pytest.approx(expected.distance, abs=0.5) and got.distance > 100
        assert got.duration == pytest.approx(expected.duration, abs=0.5)
        assert got.geometry == expected.geometry
    bus = [s for p in tar_answers[1].portions for s in p.steps if s.attributes.get("mode") == "transit"]
    assert sum(s.distance for s in bus) > 500  # the demo bus, read from the extract's transit tiles
    assert [p.point for p in tar_nearest.points] == [p.point for p in folder_nearest.points]
