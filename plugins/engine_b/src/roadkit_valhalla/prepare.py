"""Data preparation: Valhalla tiles (and transit from GTFS feeds) from an ``.osm.pbf``, plus ``valhalla.json``.

Uses the tools bundled in the pyvalhalla wheel: ``valhalla_build_config`` writes the configuration,
``valhalla_ingest_transit`` + ``valhalla_convert_transit`` turn GTFS feeds into transit tiles, and
``valhalla_build_tiles`` builds the road graph and links the transit tiles into it. Everything is
built in a temporary folder next to the target and moved in place at the end, so an interrupted
build never leaves half a tile set behind.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from roadkit.contract.sources import Command, ConfigurationError, Progress, RoadkitError, SourceConfig
from roadkit_valhalla.options import ValhallaOptions

_STAGES = ("Parsing", "Creating graph", "Enhancing", "Validating", "Adding", "transit", "Finished", "hierarchy", "shortcuts", "Building")


def _tool(name: str) -> Path:
    import valhalla

    return Path(valhalla.__file__).parent / "bin" / name


def builder_version() -> str:
    """The Valhalla version the tiles are built with (part of the test cache key)."""
    import valhalla

    return str(valhalla.__version__)


def _tar_levels(tar: Path) -> set[str]:
    """The hierarchy levels (``0``...``3``) of the ``.gph`` tiles in a tile extract; empty when unreadable."""
    try:
        with tarfile.open(tar) as archive:
            # Only the headers are read (the tiles themselves are skipped over).
            return {name.split("/", 1)[0] for name in archive.getnames() if name.endswith(".gph") and "/" in name}
    except (OSError, tarfile.TarError):
        return set()


def has_tiles(tile_dir: Path, tar: Path | None = None, *, transit: bool = False) -> bool:
    """Whether a tile set is there (with transit tiles, level 3, when asked).

    With a ``tar`` the extract alone counts (it is what Valhalla loads): it must hold tiles, and
    level 3 ones when transit is asked, so an extract packed before the GTFS feeds came is rebuilt.
    """
    if tar is not None:
        levels = _tar_levels(tar) if tar.is_file() else set()
        return bool(levels) and (not transit or "3" in levels)
    if not tile_dir.is_dir() or next(tile_dir.rglob("*.gph"), None) is None:
        return False
    return not transit or next((tile_dir / "3").rglob("*.gph"), None) is not None


#: The most cells (sources × targets) of one matrix in the valhalla.json roadkit writes, for every costing
#: that has matrices: Valhalla's default, 2500, refuses the 100 × 100 matrices a resource accepts by default;
#: the resource's own limits (its file) are what keep matrices small.
MATRIX_LOCATION_PAIRS = 250_000
#: The farthest two points of a matrix that takes its date_time into account (Valhalla's default, 0, ignores it).
TIMEDEP_DISTANCE_MATRIX = 500_000


def raise_matrix_limits(config: dict[str, Any]) -> bool:
    """Raise a valhalla.json's matrix limits to roadkit's and allow hard exclusions, in place; whether anything changed.

    Only limits below roadkit's change, and not a costing without matrices (0: multimodal).
    """
    limits = config.setdefault("service_limits", {})
    if not isinstance(limits, dict):
        return False  # not a valhalla.json roadkit wrote: Valhalla will say what is wrong with it
    changed = False
    for of_costing in limits.values():
        pairs = of_costing.get("max_matrix_location_pairs") if isinstance(of_costing, dict) else None
        if isinstance(pairs, int | float) and 0 < pairs < MATRIX_LOCATION_PAIRS:
            of_costing["max_matrix_location_pairs"] = MATRIX_LOCATION_PAIRS
            changed = True
    timedep = limits.get("max_timedep_distance_matrix", 0)
    if not isinstance(timedep, int | float) or timedep < TIMEDEP_DISTANCE_MATRIX:
        limits["max_timedep_distance_matrix"] = TIMEDEP_DISTANCE_MATRIX
        changed = True
    if limits.get("allow_hard_exclusions") is not True:  # a banned way type is a hard ban (valhalla_service too)
        limits["allow_hard_exclusions"] = True
        changed = True
    return changed


def valhalla_config(
    tile_dir: Path,
    *,
    tar: Path | None = None,
    transit_dir: Path | None = None,
    feeds_dir: Path | None = None,
    max_time_contour: int = 600,
    max_distance_contour: int = 1000,
    quiet: bool = True,
) -> dict[str, Any]:
    """A ``valhalla.json`` from Valhalla's own defaults, with roadkit's paths and limits."""
    args = [
        "--mjolnir-tile-dir",
        str(tile_dir),
        "--mjolnir-tile-extract",
        str(tar or ""),
        "--mjolnir-timezone",
        "",
        "--mjolnir-admin",
        "",
        "--mjolnir-transit-dir",
        str(transit_dir or ""),
        "--mjolnir-transit-feeds-dir",
        str(feeds_dir or ""),
        "--service-limits-isochrone-max-contours",
        "5",
        "--service-limits-isochrone-max-time-contour",
        str(max_time_contour),
        "--service-limits-isochrone-max-distance-contour",
        str(max_distance_contour),
    ]
    command = [sys.executable, "-W", "ignore::RuntimeWarning", "-m", "valhalla.valhalla_build_config", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RoadkitError(f"valhalla_build_config failed: {done.stderr.strip()}", code="prepare_failed")
    config: dict[str, Any] = json.loads(done.stdout)
    if tar is None:
        config["mjolnir"].pop("tile_extract", None)  # an empty path makes the Actor log a stat error
    config["mjolnir"]["traffic_extract"] = ""
    raise_matrix_limits(config)
    # Valhalla logs every request at info level: a served source keeps quiet, a build talks.
    config["logging"] = {"type": "" if quiet else "std_out", "color": False}
    return config


def _run(step: str, tool: str, args: list[str], progress: Progress) -> None:
    progress.step(step)
    tail: list[str] = []
    # As a context manager: its output pipe is closed however the tool ends.
    with subprocess.Popen([str(_tool(tool)), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.rstrip()
            tail = [*tail, line][-30:]
            message = line.split("] ", 1)[-1] if "] " in line else line
            if "[INFO]" in line and any(stage in message for stage in _STAGES):
                progress.info(message)
    if process.returncode != 0:
        raise RoadkitError(f"{tool} failed:\n" + "\n".join(tail), code="prepare_failed")


def build_tiles(
    osm: Path,
    config_path: Path,
    tile_dir: Path,
    *,
    gtfs: Path | None = None,
    tar: Path | None = None,
    max_time_contour: int = 600,
    max_distance_contour: int = 1000,
    progress: Progress | None = None,
) -> Path:
    """Build the tiles of ``osm`` (with the GTFS feeds under ``gtfs``) into ``tile_dir``; write ``config_path``."""
    progress = progress or Progress()
    if not osm.is_file():
        raise RoadkitError(f"OSM extract not found: {osm}", code="prepare_failed", status=400)
    if gtfs is not None and not any(p.is_dir() for p in gtfs.glob("*")):
        raise RoadkitError(
            f"GTFS folder {gtfs} holds no feed folder (expected one sub-folder per unzipped feed)", code="prepare_failed", status=400
        )
    tile_dir.parent.mkdir(parents=True, exist_ok=True)
    config_path.parent.mkdir(parents=True, exist_ok=True)
    progress.step(f"building Valhalla {builder_version()} tiles from {osm.name}" + (f" with the GTFS feeds of {gtfs}" if gtfs else ""))
    with tempfile.TemporaryDirectory(prefix="roadkit-valhalla-", dir=tile_dir.parent) as tmp:
        work = Path(tmp)
        tiles, transit = work / "tiles", work / "transit"
        tiles.mkdir()
        build_config = work / "build.json"
        feeds = gtfs.resolve() if gtfs else None
        config = valhalla_config(
            tiles,
            transit_dir=transit if feeds else None,
            feeds_dir=feeds,
            quiet=False,
            max_time_contour=max_time_contour,
            max_distance_contour=max_distance_contour,
        )
        build_config.write_text(json.dumps(config, indent=2))
        if feeds is not None:
            transit.mkdir()
            _run("valhalla_ingest_transit: reading the GTFS feeds", "valhalla_ingest_transit", ["-c", str(build_config)], progress)
            _run("valhalla_convert_transit: transit tiles", "valhalla_convert_transit", ["-c", str(build_config)], progress)
        _run("valhalla_build_tiles: the road graph", "valhalla_build_tiles", ["-c", str(build_config), str(osm)], progress)
        if tile_dir.exists():
            shutil.rmtree(tile_dir)
        shutil.move(str(tiles), tile_dir)
    if tar is not None:
        progress.step(f"packing the tiles into {tar}")
        tar.parent.mkdir(parents=True, exist_ok=True)
        partial = tar.with_name(tar.name + ".partial")
        with tarfile.open(partial, "w") as archive:
            for path in sorted(tile_dir.rglob("*.gph")):
                archive.add(path, arcname=str(path.relative_to(tile_dir)))
        partial.replace(tar)  # never half an extract where Valhalla looks for one
    final = valhalla_config(tile_dir, tar=tar, quiet=True, max_time_contour=max_time_contour, max_distance_contour=max_distance_contour)
    config_path.write_text(json.dumps(final, indent=2))
    progress.step(f"tiles ready: {tile_dir} (configuration {config_path})")
    return config_path


def prepare_source(config: SourceConfig, options: ValhallaOptions, *, force: bool, progress: Progress) -> bool:
    """``roadkit prepare`` for one source: build when the configuration or the tiles are missing."""
    storage, prep = options.storage, options.preparation
    ready = storage.config.is_file() and has_tiles(options.tile_dir, storage.tar, transit=bool(prep and prep.gtfs))
    if ready and not force:
        return prep is not None and refresh_matrix_limits(storage.config, progress)
    if prep is None:
        raise ConfigurationError([f"{config.path}: preparation: required to build the missing tiles of {storage.config}"])
    build_tiles(
        prep.osm,
        storage.config,
        options.tile_dir,
        gtfs=prep.gtfs,
        tar=storage.tar,
        max_time_contour=prep.max_time_contour,
        max_distance_contour=prep.max_distance_contour,
        progress=progress,
    )
    return True


def refresh_matrix_limits(path: Path, progress: Progress) -> bool:
    """Raise the matrix limits of a valhalla.json an earlier roadkit wrote (the tiles stay); whether it changed."""
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RoadkitError(f"cannot read the Valhalla configuration {path}: {exc}", code="prepare_failed") from None
    if not isinstance(config, dict) or not raise_matrix_limits(config):
        return False
    progress.step(f"raising the matrix limits of {path} to {MATRIX_LOCATION_PAIRS} cells")
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(config, indent=2))
    partial.replace(path)  # whole or not at all: the workers of a running service may be reading it
    return True


def build_command() -> Command:
    """``roadkit valhalla-build``: build a tile set and its ``valhalla.json`` by hand."""

    def configure(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("osm", type=Path, help="the .osm.pbf extract")
        parser.add_argument("output", type=Path, help="the folder to write valhalla.json and tiles/ into")
        parser.add_argument("--gtfs", type=Path, help="a folder of GTFS feeds (one sub-folder per unzipped feed)")
        parser.add_argument("--tar", action="store_true", help="also pack the tiles into tiles.tar and load that")
        parser.add_argument("--max-time-contour", type=int, default=600, help="isochrone limit in minutes")
        parser.add_argument("--max-distance-contour", type=int, default=1000, help="isodistance limit in kilometers")

    def run(args: argparse.Namespace) -> int:
        out: Path = args.output.resolve()
        build_tiles(
            args.osm.resolve(),
            out / "valhalla.json",
            out / "tiles",
            gtfs=args.gtfs.resolve() if args.gtfs else None,
            tar=out / "tiles.tar" if args.tar else None,
            max_time_contour=args.max_time_contour,
            max_distance_contour=args.max_distance_contour,
        )
        return 0

    return Command("valhalla-build", "Build Valhalla tiles (and transit from GTFS) from an .osm.pbf extract.", configure, run)
