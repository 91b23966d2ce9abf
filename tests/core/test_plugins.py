"""The plugin manager factory, the source-kind registry and the hook specifications."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path

import pluggy
import pytest

from roadkit import hookimpl, hookspecs
from roadkit.errors import PluginError
from roadkit.plugins import Plugins, make_plugin_manager
from roadkit.routing.source import Source
from roadkit.routing.units import Unit
from tests.core.conftest import StraightLineSource, TestPlugin

TESTS = Path(__file__).parents[1]
HOOKS = [name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("roadkit_")]


def test_every_hook_is_typed_and_documented() -> None:
    assert HOOKS
    for name in HOOKS:
        fn = getattr(hookspecs, name)
        assert fn.__doc__ and "Called" in fn.__doc__, f"{name} must say when it is called"
        assert "return" in inspect.signature(fn).__str__() or inspect.signature(fn).return_annotation is not inspect.Signature.empty


def test_every_hook_has_a_test() -> None:
    text = "\n".join(p.read_text() for p in TESTS.rglob("test_*.py"))
    for name in HOOKS:
        assert f"test_hook_{name}" in text, f"no test named test_hook_{name}"


def test_core_defaults_load_first_and_entry_points_can_be_turned_off() -> None:
    pm = make_plugin_manager(load_entry_points=False)
    assert pm.get_plugin("roadkit.defaults") is not None
    assert Plugins(pm).source_kinds() == {}


def _distributions(pm: pluggy.PluginManager) -> dict[str, str]:
    """Entry-point name -> distribution of every plugin loaded from an entry point."""
    return {pm.get_name(plugin) or "": dist.project_name for plugin, dist in pm.list_plugin_distinfo()}


def test_the_engine_plugins_load_from_their_entry_points() -> None:
    # The real entry points of the installed distributions: without them every test below could pass vacuously.
    points = {ep.name: (ep.value, ep.dist.name if ep.dist else None) for ep in entry_points(group="roadkit")}
    assert points["osrm"] == ("roadkit_osrm.plugin", "roadkit-osrm")
    assert points["valhalla"] == ("roadkit_valhalla.plugin", "roadkit-valhalla")
    pm = make_plugin_manager(environ={})
    assert _distributions(pm)["osrm"] == "roadkit-osrm" and _distributions(pm)["valhalla"] == "roadkit-valhalla"
    kinds = Plugins(pm).source_kinds()
    assert kinds["osrm"].__module__ == "roadkit_osrm.source" and kinds["valhalla"].__module__ == "roadkit_valhalla.source"


def test_roadkit_load_plugins_restricts_entry_points() -> None:
    assert Plugins.create(environ={"ROADKIT_LOAD_PLUGINS": ""}).source_kinds() == {}
    only_osrm = make_plugin_manager(environ={"ROADKIT_LOAD_PLUGINS": "osrm"})
    assert set(_distributions(only_osrm)) == {"osrm"}
    assert set(Plugins(only_osrm).source_kinds()) == {"osrm", "osrm-http"}


def test_roadkit_disable_plugins_blocks_a_name() -> None:
    assert "osrm" in Plugins(make_plugin_manager(environ={})).source_kinds()  # installed: the block below is real
    pm = make_plugin_manager(environ={"ROADKIT_DISABLE_PLUGINS": "osrm"})
    assert pm.is_blocked("osrm")
    kinds = Plugins(pm).source_kinds()
    assert "osrm" not in kinds and "osrm-http" not in kinds
    assert "valhalla" in kinds and "osrm" not in _distributions(pm)


def test_hook_roadkit_source_kinds(plugins: Plugins) -> None:
    assert plugins.source_kinds() == {"straightline": StraightLineSource}


def test_a_duplicate_source_kind_names_both_providers() -> None:
    class Again:
        @hookimpl
        def roadkit_source_kinds(self) -> Sequence[type[Source]]:
            return [StraightLineSource]

    plugins = Plugins.create(load_entry_points=False, extra_plugins=[TestPlugin(), Again()])
    with pytest.raises(PluginError, match="provided twice"):
        plugins.source_kinds()


def test_a_misspelt_hook_fails_at_start_up() -> None:
    class Typo:
        @hookimpl
        def roadkit_source_kind(self) -> list[type[Source]]:
            return []

    with pytest.raises(PluginError, match="roadkit_source_kind"):
        make_plugin_manager(load_entry_points=False, extra_plugins=[Typo()])


def test_a_registration_that_is_not_a_source_is_refused() -> None:
    class Wrong:
        @hookimpl
        def roadkit_source_kinds(self) -> list[object]:
            return [object]

    with pytest.raises(PluginError, match="not a Source subclass"):
        Plugins.create(load_entry_points=False, extra_plugins=[Wrong()]).source_kinds()


def test_hook_roadkit_cost_units() -> None:
    class Miles:
        @hookimpl
        def roadkit_cost_units(self) -> dict[str, tuple[str, float]]:
            return {"mile": ("distance", 1609.344)}

    units = Plugins.create(load_entry_points=False, extra_plugins=[Miles()]).cost_units()
    assert units["mile"] == Unit("mile", "distance", 1609.344)
    assert units["minute"] == Unit("minute", "time", 60.0) and units["kilometer"] == Unit("kilometer", "distance", 1000.0)


def test_hook_roadkit_resolve_cost(plugins: Plugins) -> None:
    from roadkit.config.models import SourceConfig
    from roadkit.routing.model import Cost

    source = StraightLineSource.from_config(SourceConfig(Path("x.source"), "a", "straightline"))
    assert plugins.resolve_cost(source, Cost("car", "fastest")) == Cost("car", "fastest")

    class Override:
        @hookimpl
        def roadkit_resolve_cost(self, source: Source, cost: Cost) -> str:
            return f"{cost.profile}-setting"

    overridden = Plugins.create(load_entry_points=False, extra_plugins=[Override()])
    assert overridden.resolve_cost(source, Cost("car", "fastest")) == "car-setting"


def test_hook_roadkit_apis(plugins: Plugins) -> None:
    assert ("simple", "1.0.0") in plugins.apis()


def test_hook_roadkit_commands(plugins: Plugins) -> None:
    assert {"serve", "check", "prepare"} <= {c.name for c in plugins.commands()}
