"""The lock file: every dependency the project declares is pinned in it with its hashes, and every install uses it.

Adding a dependency to a pyproject.toml or a requirements file without running ``./dev lock`` fails here,
so that the lock can't silently go stale.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).parents[2]
LOCK = ROOT / "requirements" / "lock.txt"
PROJECTS = sorted(p.parent for p in ROOT.glob("*/pyproject.toml")) + sorted(p.parent for p in ROOT.glob("*/*/pyproject.toml"))
REQUIREMENTS = [ROOT / "tests" / "requirements.txt", ROOT / "tools" / "lint-requirements.txt", ROOT / "tools" / "docs-requirements.txt"]
#: Python 3.12 on Linux, as the lock is compiled for.
ENVIRONMENT = default_environment() | {"python_version": "3.12", "sys_platform": "linux", "extra": ""}


def _pins(path: Path) -> dict[str, tuple[Version, list[str]]]:
    """Each pinned distribution of a hashed requirements file: its version and its hashes."""
    pins: dict[str, tuple[Version, list[str]]] = {}
    for entry in re.split(r"\n(?=\S)", path.read_text()):
        match = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", entry)
        if match:
            pins[canonicalize_name(match[1])] = (Version(match[2]), re.findall(r"--hash=sha256:([0-9a-f]{64})", entry))
    return pins


def _declared() -> tuple[list[tuple[str, Requirement]], set[str]]:
    """(where, requirement) of every dependency declared, and the project's own distribution names."""
    declared: list[tuple[str, Requirement]] = []
    own: set[str] = set()
    for project in PROJECTS:
        data = tomllib.loads((project / "pyproject.toml").read_text())
        if "project" not in data:
            continue
        own.add(canonicalize_name(data["project"]["name"]))
        where = str((project / "pyproject.toml").relative_to(ROOT))
        lists = [data["project"].get("dependencies", []), data["build-system"]["requires"]]
        lists += data["project"].get("optional-dependencies", {}).values()
        declared += [(where, Requirement(text)) for texts in lists for text in texts]
    for path in REQUIREMENTS:
        lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
        declared += [(str(path.relative_to(ROOT)), Requirement(line)) for line in lines if line]
    return declared, own


def test_every_declared_dependency_is_pinned_in_the_lock_with_a_version_it_allows() -> None:
    pins = _pins(LOCK)
    declared, own = _declared()
    assert len(declared) > 40 and {"roadkit", "roadkit-osrm", "roadkit-valhalla", "roadkit-pgrouting"} <= own
    stale = []
    for where, requirement in declared:
        name = canonicalize_name(requirement.name)
        if name in own or (requirement.marker is not None and not requirement.marker.evaluate(ENVIRONMENT)):
            continue
        if name not in pins:
            stale.append(f"{where}: {requirement} is not in the lock")
        elif not requirement.specifier.contains(pins[name][0], prereleases=True):
            stale.append(f"{where}: {requirement} does not allow the locked {pins[name][0]}")
    assert not stale, "run ./dev lock:\n" + "\n".join(stale)
    assert not own & set(pins), "the project's own distributions are installed from their folders, not the lock"


def test_every_pin_has_its_hashes_and_the_engine_wheels_are_pinned() -> None:
    for path in (
        LOCK,
        ROOT / "requirements" / "bench-lock.txt",
        ROOT / "tools" / "nox-requirements.txt",
        ROOT / "tools" / "uv-requirements.txt",
    ):
        pins = _pins(path)
        assert pins and all(hashes for _, hashes in pins.values()), f"{path}: a pin without --hash"
        assert not re.search(r"^(-e |\.|/|git\+)", path.read_text(), re.M), f"{path}: a requirement pip can't check by hash"
    pins = _pins(LOCK)
    assert {"osrm-bindings", "pyvalhalla", "hatchling", "schemathesis", "ruff", "mkdocs"} <= set(pins)
    assert "nox" in _pins(ROOT / "tools" / "nox-requirements.txt")
    bench = _pins(ROOT / "requirements" / "bench-lock.txt")
    assert {"matplotlib", "py-spy"} <= set(bench)
    assert all(pins[name][0] == version for name, (version, _) in bench.items() if name in pins), "the bench lock agrees with the lock"


def test_installs_check_hashes_and_dev_pins_nox() -> None:
    noxfile = (ROOT / "noxfile.py").read_text()
    assert '"--require-hashes", "-r", LOCK' in noxfile
    # The project's own distributions: their dependencies and build backend from the lock only.
    assert '"--no-deps", "--no-build-isolation", *dists' in noxfile
    for call in re.findall(r"session\.install\([^)]*\)", noxfile):
        assert '"-r"' not in call or '"--require-hashes"' in call, f"a requirements file installed without its hashes: {call}"
    dev = (ROOT / "dev").read_text()
    assert "--require-hashes -r tools/nox-requirements.txt" in dev and '"nox>=' not in dev
