"""Data preparation: an OSRM dataset from an ``.osm.pbf`` (extract + contract, or + partition + customize)."""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from roadkit.contract.sources import Command, Progress, RoadkitError


def profiles_dir() -> Path:
    """The Lua profiles shipped in the osrm-bindings wheel."""
    import osrm

    return Path(osrm.__file__).parent / "share" / "profiles"


def dataset_files(base: Path, algorithm: str) -> list[Path]:
    """The files whose presence means the dataset is built for ``algorithm``."""
    suffixes = [".properties", ".ebg_nodes", ".ramIndex", ".fileIndex"]
    suffixes += [".hsgr"] if algorithm == "CH" else [".cells", ".mldgr", ".cell_metrics"]
    return [base.with_name(base.name + s) for s in suffixes]


def dataset_ready(base: Path, algorithm: str) -> bool:
    """Whether every file of the dataset exists."""
    return all(path.exists() for path in dataset_files(base, algorithm))


def profile_path(profile: str) -> Path:
    """The Lua file of ``profile``: a shipped profile's name (``car``) or a ``.lua`` file."""
    path = Path(profile) if profile.endswith(".lua") else profiles_dir() / f"{profile}.lua"
    if not path.is_file():
        shipped = ", ".join(sorted(p.stem for p in profiles_dir().glob("*.lua")))
        raise RoadkitError(f"OSRM profile {profile!r} not found (shipped profiles: {shipped})", code="profile_not_found", status=400)
    return path


def profile_script(profile: str, weight: str | None, workdir: Path) -> Path:
    """The Lua profile to extract with: a shipped one, or a wrapper that finds the shipped ones and sets ``weight_name``."""
    path = profile_path(profile).resolve()
    if weight is None and path.parent == profiles_dir().resolve():
        return path
    # OSRM resolves a profile's require() calls against the folder of the script it runs: keep the
    # profile's folder, then the shipped profiles (require('car') in a profile of one's own), on the
    # Lua path; with a weight, change only the weight the profile's setup() returns.
    lua_path = f"{path.parent}/?.lua;{profiles_dir()}/?.lua;"
    wrapper = workdir / f"{path.stem}-{weight or 'profile'}.lua"
    override = (
        "local setup = profile.setup\n"
        "profile.setup = function()\n"
        "  local p = setup()\n"
        f"  p.properties.weight_name = {weight!r}\n"
        "  return p\n"
        "end\n"
    )
    wrapper.write_text(
        f"package.path = {lua_path!r} .. package.path\n"
        f"local profile = dofile({str(path)!r})\n"
        f"{override if weight is not None else ''}"
        "return profile\n"
    )
    return wrapper


def inputs_digest(profile: str, weight: str | None) -> str:
    """What a dataset is built from besides its extract: the profile's content, the weight and OSRM's version."""
    digest = hashlib.sha256(f"osrm-bindings {version('osrm-bindings')}\nweight {weight}\n".encode())
    digest.update(profile_path(profile).read_bytes())
    return digest.hexdigest()


def inputs_record(base: Path) -> Path:
    """The file where a build records :func:`inputs_digest`, beside the dataset."""
    return base.with_name(base.name + ".inputs")


def dataset_current(base: Path, algorithm: str, profile: str, weight: str | None) -> bool:
    """Whether the dataset is built and from this profile and weight.

    A dataset without a record (built by hand, or by an earlier roadkit) is taken as current:
    rebuilding one of a large region unasked would take hours.
    """
    if not dataset_ready(base, algorithm):
        return False
    record = inputs_record(base)
    return not record.is_file() or record.read_text().strip() == inputs_digest(profile, weight)


def _run(step: str, args: list[str], progress: Progress) -> None:
    progress.step(step)
    command = [sys.executable, "-m", "osrm", *args]
    tail: list[str] = []
    # As a context manager: its output pipe is closed however the tool ends.
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            line = line.rstrip()
            tail = [*tail, line][-20:]
            if "[info]" in line and ("finished" in line.lower() or "RAM: peak" in line):
                progress.info(line.split("] ", 2)[-1])
    if process.returncode != 0:
        raise RoadkitError(f"osrm {args[0]} failed:\n" + "\n".join(tail), code="prepare_failed")


def build_dataset(
    osm: Path,
    base: Path,
    *,
    profile: str = "car",
    algorithm: str = "CH",
    weight: str | None = None,
    progress: Progress | None = None,
) -> Path:
    """Build the OSRM dataset ``base`` (a path ending in ``.osrm``) from ``osm``; returns ``base``."""
    progress = progress or Progress()
    if not osm.is_file():
        raise RoadkitError(f"OSM extract not found: {osm}", code="prepare_failed", status=400)
    if not base.name.endswith(".osrm"):
        raise RoadkitError(f"an OSRM dataset path must end in .osrm, got {base}", code="prepare_failed", status=400)
    base.parent.mkdir(parents=True, exist_ok=True)
    threads = str(max(1, os.cpu_count() or 1))
    with tempfile.TemporaryDirectory(prefix="roadkit-osrm-", dir=base.parent) as tmp:
        work = Path(tmp)
        # osrm-extract names its output after its input: give it the dataset's name.
        source = work / (base.name[: -len(".osrm")] + ".osm.pbf")
        os.symlink(osm.resolve(), source)
        script = profile_script(profile, weight, work)
        label = profile_path(profile).stem + (f", weight {weight}" if weight else "")
        progress.step(f"building {base.name} from {osm.name} with profile {label} ({algorithm})")
        _run("osrm-extract", ["extract", "-p", str(script), "-t", threads, str(source)], progress)
        out = work / base.name
        if algorithm == "CH":
            _run("osrm-contract", ["contract", "-t", threads, str(out)], progress)
        else:
            _run("osrm-partition", ["partition", "-t", threads, str(out)], progress)
            _run("osrm-customize", ["customize", "-t", threads, str(out)], progress)
        for path in work.iterdir():
            if path.name.startswith(base.name):
                shutil.move(str(path), base.parent / path.name)
    inputs_record(base).write_text(inputs_digest(profile, weight) + "\n")
    progress.step(f"dataset ready: {base}")
    return base


def build_command() -> Command:
    """``roadkit osrm-build``: build one OSRM dataset by hand."""

    def configure(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("osm", type=Path, help="the .osm.pbf extract")
        parser.add_argument("output", type=Path, help="the dataset to write, e.g. data/car/monaco.osrm")
        parser.add_argument("--profile", default="car", help="a shipped OSRM profile (car, foot, bicycle) or a .lua file")
        parser.add_argument("--algorithm", choices=["CH", "MLD"], default="CH")
        parser.add_argument("--weight", choices=["routability", "duration", "distance"], help="override the profile's weight")

    def run(args: argparse.Namespace) -> int:
        build_dataset(args.osm, args.output, profile=args.profile, algorithm=args.algorithm, weight=args.weight)
        return 0

    return Command("osrm-build", "Build an OSRM dataset from an .osm.pbf extract.", configure, run)
