"""Core's layout: no import cycle between its files, plugins import only the contract, the contract reaches no serving code.

Every import counts: module level, ``if TYPE_CHECKING:`` blocks and imports inside functions. The layers
themselves are import-linter's contract in ``pyproject.toml`` (``./dev lint``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import roadkit

ROOT = Path(__file__).parents[2]
CORE = Path(roadkit.__file__).parent
PLUGIN_SOURCES = sorted(p for p in (ROOT / "plugins").glob("*/src/*") if p.is_dir() and (p / "__init__.py").exists())
#: What a plugin must never need, and what the contract must never reach.
SERVING_PACKAGES = (
    "roadkit.serving",
    "roadkit.process",
    "roadkit.apis",
    "roadkit.cli",
    "roadkit.server",
    "roadkit.asgi",
    "roadkit.testing",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _core_module(name: str) -> str | None:
    """The core module (file) an imported name lives in, if any."""
    parts = name.split(".")
    while parts:
        candidate = CORE.parent.joinpath(*parts)
        if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
            return ".".join(parts)
        parts.pop()
    return None


def _imports(path: Path) -> set[str]:
    """Every absolute import anywhere in ``path`` (functions and TYPE_CHECKING blocks included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = node.module
            if node.level:
                base = _module_name(path).split(".")
                base = base[: len(base) - node.level + (1 if path.name == "__init__.py" else 0)]
                module = ".".join([*base, module])
            submodules = {
                f"{module}.{alias.name}" for alias in node.names if _core_module(f"{module}.{alias.name}") == f"{module}.{alias.name}"
            }
            # ``from package import module`` imports that module; any other name comes from the package itself.
            if len(submodules) < len(node.names):
                found.add(module)
            found |= submodules
    return found


def core_graph() -> dict[str, set[str]]:
    """Core module -> the core modules it imports (a package's ``__init__`` counts for the package)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(CORE.rglob("*.py")):
        name = _module_name(path)
        targets = {_core_module(imported) for imported in _imports(path) if imported.split(".")[0] == "roadkit"}
        graph[name] = {t for t in targets if t is not None and t != name and t != "roadkit"}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_core_has_no_import_cycle() -> None:
    found = cycles(core_graph())
    assert not found, "import cycles in core (every import counts):\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_follows_function_local_and_type_checking_imports() -> None:
    graph = core_graph()
    assert "roadkit.process.accept" in graph["roadkit.process.worker"]  # imported inside a method
    assert "roadkit.web.view" in graph["roadkit.web.api"]  # imported under TYPE_CHECKING


def test_the_process_manager_imports_no_api() -> None:
    graph = core_graph()
    wrong = sorted(
        f"{m} -> {t}" for m, targets in graph.items() if m.startswith("roadkit.process") for t in targets if t.startswith("roadkit.apis")
    )
    assert not wrong, wrong


def test_plugin_sources_are_found() -> None:
    assert {"roadkit_osrm", "roadkit_valhalla", "roadkit_pgrouting"} <= {p.name for p in PLUGIN_SOURCES}


@pytest.mark.parametrize("package", PLUGIN_SOURCES, ids=lambda p: p.name)
def test_engine_plugins_import_only_the_contract_from_roadkit(package: Path) -> None:
    wrong = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted(package.rglob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] == "roadkit" and name != "roadkit" and not name.startswith("roadkit.contract") and name != "roadkit.hookimpl"
    ]
    assert not wrong, "engine plugins import from roadkit.contract only:\n" + "\n".join(sorted(wrong))


def _reachable(start: str, graph: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += graph.get(name, ())
    return seen


@pytest.mark.parametrize("part", ["roadkit.contract.sources", "roadkit.contract.apis", "roadkit.contract.native_osrm", "roadkit.hookspecs"])
def test_the_contract_reaches_no_serving_code(part: str) -> None:
    reached = _reachable(part, core_graph())
    wrong = sorted(m for m in reached if m.startswith(SERVING_PACKAGES))
    assert not wrong, wrong
    assert part == "roadkit.contract.native_osrm" or "roadkit.routing.source" in reached  # the walk follows imports


def test_the_contract_imports_without_serving_modules() -> None:
    code = (
        "import sys, roadkit.contract.sources, roadkit.contract.apis, roadkit.contract.native_osrm; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('roadkit'))))"
    )
    loaded = set(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split())
    assert "roadkit.contract.sources" in loaded
    wrong = sorted(m for m in loaded if m.startswith(SERVING_PACKAGES))
    assert not wrong, wrong


@pytest.mark.parametrize("part", ["sources", "apis", "native_osrm"])
def test_every_public_name_of_the_contract_exists(part: str) -> None:
    import importlib

    module = importlib.import_module(f"roadkit.contract.{part}")
    names = module.__all__
    assert len(names) == len(set(names)) and names == sorted(names, key=lambda n: (n[0].islower(), n))
    assert all(hasattr(module, name) for name in names)


def test_the_contract_gives_each_part_what_it_needs() -> None:
    from roadkit.contract import apis, sources

    for name in ("Source", "SourceContext", "SourceState", "Progress", "Command", "Cost", "RouteRequest", "IsochroneResponse"):
        assert name in sources.__all__, name
    for name in ("SourceConfig", "RoadkitError", "EngineError", "ConfigurationError", "structure", "resolve", "hookimpl"):
        assert name in sources.__all__, name
    for name in ("Api", "ServiceView", "Resource", "JSONResponse", "docs_routes", "RoadkitError", "hookimpl"):
        assert name in apis.__all__, name
    # Internals stay out: the private cluster, configuration of services, process-wide state.
    for name in ("PrivateCluster", "ServiceConfig", "ResourceConfig", "cores_per_worker", "connection_waiting"):
        assert name not in sources.__all__ and name not in apis.__all__, name


def test_a_service_is_a_service_view() -> None:
    from roadkit.serving.service import Service
    from roadkit.web.view import ServiceView

    members = [name for name in vars(ServiceView) if not name.startswith("_")]
    assert {"units", "resource", "extend_capabilities", "resources", "projections"} <= set(members)
    for name in members:
        assert name in dir(Service) or name in Service.__init__.__code__.co_names, f"Service lacks {name}"


def test_the_valhalla_source_declares_the_native_osrm_protocol() -> None:
    from roadkit.contract.native_osrm import NativeSource
    from roadkit_osrm.source import OsrmSource
    from roadkit_valhalla.base import ValhallaBase

    assert NativeSource in ValhallaBase.__mro__ and NativeSource in OsrmSource.__mro__


def test_roadkit_testing_needs_the_testing_extra() -> None:
    # roadkit.testing imports pytest: the distribution says so in its ``testing`` extra, not in its dependencies.
    from importlib.metadata import requires

    requirements = requires("roadkit") or []
    testing = [r for r in requirements if "extra ==" in r and "testing" in r.split("extra ==")[1]]
    assert any(r.startswith("pytest>=") for r in testing), requirements
    assert not any(r.startswith("pytest") for r in requirements if "extra ==" not in r)
