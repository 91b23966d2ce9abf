"""The public plugin contract: ``roadkit.contract`` is all a plugin imports, and it pulls in no serving code."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import roadkit
import roadkit.contract

ROOT = Path(__file__).parents[2]
CORE = Path(roadkit.__file__).parent
PLUGIN_SOURCES = sorted(p for p in (ROOT / "plugins").glob("*/src/*") if p.is_dir() and (p / "__init__.py").exists())
# Serving code: what a plugin must never need, and what the contract must never reach.
SERVING = {"roadkit.service", "roadkit.plugins", "roadkit.app", "roadkit.listen", "roadkit.administrator", "roadkit.hookspecs"}


def _imports(path: Path, *, top_level_only: bool = False) -> list[tuple[int, str]]:
    """Every absolute import of ``path`` (line, module); relative imports stay inside their own package."""
    tree = ast.parse(path.read_text(), str(path))
    nodes = _module_level(tree.body) if top_level_only else list(ast.walk(tree))
    found: list[tuple[int, str]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module))
            # ``from roadkit.config import models`` imports a module too.
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names if _is_module(f"{node.module}.{a.name}")]
    return found


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements run (or type-checked) at import: the module body and its ``if``/``try`` blocks, not functions."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If):
            out += _module_level(stmt.body) + _module_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            out += _module_level(stmt.body) + _module_level(stmt.orelse) + _module_level(stmt.finalbody)
    return out


def _is_module(name: str) -> bool:
    return name.startswith("roadkit.") and _core_file(name) is not None


def _core_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    for candidate in (CORE.joinpath(*parts).with_suffix(".py"), CORE.joinpath(*parts, "__init__.py")):
        if parts and candidate.exists():
            return candidate
    return None


def _reachable(start: str) -> set[str]:
    """Core modules ``start`` imports at module level, transitively, counting ``if TYPE_CHECKING:`` imports."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _core_file(name)
        if path is None:
            continue
        todo += [m for _, m in _imports(path, top_level_only=True) if m.startswith("roadkit.") and _core_file(m)]
    return seen


def test_plugin_sources_are_found() -> None:
    names = {p.name for p in PLUGIN_SOURCES}
    assert {"roadkit_osrm", "roadkit_valhalla"} <= names


@pytest.mark.parametrize("package", PLUGIN_SOURCES, ids=lambda p: p.name)
def test_engine_plugins_import_only_the_contract_from_roadkit(package: Path) -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted(package.rglob("*.py"))
        for line, name in _imports(path)
        if (name == "roadkit" or name.startswith("roadkit.")) and name != "roadkit.contract"
    ]
    assert not wrong, "engine plugins import from roadkit.contract only:\n" + "\n".join(wrong)


def test_every_public_name_exists_and_is_documented_once() -> None:
    names = roadkit.contract.__all__
    assert len(names) == len(set(names)), "a name is listed twice in __all__"
    assert names == sorted(names, key=lambda n: (n[0].islower(), n)), "__all__ is kept sorted"
    for name in names:
        assert hasattr(roadkit.contract, name), f"roadkit.contract.__all__ lists {name}, which it does not define"
    for name in (
        "Source",
        "SourceState",
        "Progress",
        "Api",
        "Command",
        "Cost",
        "RouteRequest",
        "IsochroneResponse",
        "RoadkitError",
        "SourceUnavailable",
        "EngineError",
        "ConfigurationError",
        "SourceConfig",
        "resolve",
        "structure",
        "hookimpl",
        "ServiceView",
    ):
        assert name in names, f"plugins need {name}"


def test_hookspecs_import_only_the_contract() -> None:
    path = CORE / "hookspecs.py"
    from_roadkit = {name for _, name in _imports(path) if name.startswith("roadkit")}
    assert from_roadkit == {"roadkit.contract"}


def test_the_contract_reaches_no_serving_code_even_under_type_checking() -> None:
    # hookspecs -> service -> plugins -> hookspecs was a cycle under type checking: the contract and
    # everything it imports (TYPE_CHECKING blocks included) stay clear of the serving modules.
    reached = _reachable("roadkit.contract") | _reachable("roadkit.hookspecs") - {"roadkit.hookspecs"}
    assert not (reached & SERVING), sorted(reached & SERVING)
    assert "roadkit.view" in reached and "roadkit.source" in reached  # the walk does follow imports


def test_the_contract_imports_without_serving_modules() -> None:
    # A fresh interpreter: importing the contract loads no serving code at run time either.
    import subprocess
    import sys

    code = "import sys, roadkit.contract; print(' '.join(sorted(m for m in sys.modules if m.startswith('roadkit'))))"
    loaded = set(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split())
    assert "roadkit.contract" in loaded
    assert not (loaded & SERVING), sorted(loaded & SERVING)


def test_a_service_is_a_service_view() -> None:
    from roadkit.service import Service

    view = importlib.import_module("roadkit.view").ServiceView
    members = [name for name in vars(view) if not name.startswith("_")]
    assert members
    for name in members:
        assert name in dir(Service) or name in Service.__init__.__code__.co_names, f"Service lacks {name}"


def test_roadkit_testing_needs_the_testing_extra() -> None:
    # roadkit.testing imports pytest: the distribution says so in its ``testing`` extra, not in its dependencies.
    from importlib.metadata import requires

    requirements = requires("roadkit") or []
    testing = [r for r in requirements if "extra ==" in r and "testing" in r.split("extra ==")[1]]
    assert any(r.startswith("pytest>=") for r in testing), requirements
    assert not any(r.startswith("pytest") for r in requirements if "extra ==" not in r)
    imported = {name for _, name in _imports(CORE / "testing.py")}
    assert "pytest" in imported
