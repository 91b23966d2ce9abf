"""The plugin-manager factory, the source-kind registry and the typed facade over hooks.

Load order: blocked names first, then core's defaults, then entry points (group ``roadkit``),
then extra plugins given by the caller (tests, embedding apps), then ``check_pending()``.
``ROADKIT_LOAD_PLUGINS`` (comma-separated entry-point names, empty for none) restricts the entry
points loaded; ``ROADKIT_DISABLE_PLUGINS`` blocks names.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import pluggy

from roadkit import __version__, hookspecs
from roadkit.errors import PluginError
from roadkit.hookspecs import Command
from roadkit.routing.units import UnitRegistry

if TYPE_CHECKING:
    from roadkit.routing.source import Source
    from roadkit.web.api import Api

ENTRY_POINT_GROUP = "roadkit"
#: Core's own hook implementations, registered first (by name: they sit above this module, as pytest's do).
DEFAULT_PLUGINS = ("roadkit.defaults", "roadkit.apis.simple", "roadkit.apis.ogcapi_routes", "roadkit.cli")


def _names(value: str | None) -> set[str] | None:
    if value is None:
        return None
    return {name.strip() for name in value.split(",") if name.strip()}


def make_plugin_manager(
    *,
    extra_plugins: Iterable[object] = (),
    load_entry_points: bool = True,
    environ: Mapping[str, str] | None = None,
) -> pluggy.PluginManager:
    """A new plugin manager with core's defaults, the installed plugins and ``extra_plugins``."""
    env = os.environ if environ is None else environ
    pm = pluggy.PluginManager("roadkit")
    pm.add_hookspecs(hookspecs)
    for name in _names(env.get("ROADKIT_DISABLE_PLUGINS")) or ():
        pm.set_blocked(name)
    for module_name in DEFAULT_PLUGINS:
        module = importlib.import_module(module_name)
        pm.register(module, name=module_name)
    if load_entry_points:
        allowed = _names(env.get("ROADKIT_LOAD_PLUGINS"))
        if allowed is not None:
            for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
                if ep.name not in allowed:
                    pm.set_blocked(ep.name)
        try:
            pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        except Exception as exc:  # a broken plugin is named, not a bare traceback
            raise PluginError(f"a roadkit plugin failed to load: {exc!r}") from exc
    for plugin in extra_plugins:
        pm.register(plugin)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(str(exc)) from exc
    return pm


def _distribution(pm: pluggy.PluginManager, plugin: object, name: str) -> tuple[str, str]:
    """(distribution, version) of a registered plugin; core's defaults are roadkit's own."""
    for plug, dist in pm.list_plugin_distinfo():
        if plug is plugin:
            return str(dist.project_name), str(dist.version)  # type: ignore[attr-defined]
    if name in DEFAULT_PLUGINS:
        return "roadkit", __version__
    return "", ""


def _distribution_of(pm: pluggy.PluginManager, plugin: object) -> str:
    for plug, dist in pm.list_plugin_distinfo():
        if plug is plugin:
            return f"{dist.project_name} {dist.version}"  # type: ignore[attr-defined]
    name = pm.get_name(plugin) or repr(plugin)
    return "roadkit (core)" if name in DEFAULT_PLUGINS else f"plugin {name}"


class Plugins:
    """Typed facade over the hooks: application code never calls ``pm.hook`` directly."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._source_kinds: dict[str, type[Source]] | None = None

    @classmethod
    def create(cls, **kwargs: Any) -> Plugins:
        """Plugins from :func:`make_plugin_manager` with the same arguments."""
        return cls(make_plugin_manager(**kwargs))

    def source_kinds(self) -> dict[str, type[Source]]:
        """Source classes by kind; a kind given twice is a PluginError naming both distributions."""
        if self._source_kinds is None:
            from roadkit.routing.source import Source

            kinds: dict[str, tuple[type[Source], str]] = {}
            for impl in self.pm.hook.roadkit_source_kinds.get_hookimpls():
                origin = _distribution_of(self.pm, impl.plugin)
                registered = cast(Sequence[Any], impl.function() or ())
                for cls in registered:
                    if not (isinstance(cls, type) and issubclass(cls, Source)) or not getattr(cls, "kind", None):
                        raise PluginError(f"{origin} returned {cls!r}, which is not a Source subclass with a kind")
                    if cls.kind in kinds:
                        raise PluginError(f"source kind {cls.kind!r} is provided twice: by {kinds[cls.kind][1]} and by {origin}")
                    kinds[cls.kind] = (cls, origin)
            self._source_kinds = {kind: cls for kind, (cls, _) in kinds.items()}
        return self._source_kinds

    def resolve_cost(self, source: Source, cost: Any) -> Any:
        """The engine setting of one cost of a source."""
        return self.pm.hook.roadkit_resolve_cost(source=source, cost=cost)

    def cost_units(self) -> UnitRegistry:
        """The registry of every unit the plugins know (a later-registered plugin redefines a unit)."""
        # pluggy answers last-registered first: reversed, core's defaults come first and plugins win.
        return UnitRegistry.merged(reversed(self.pm.hook.roadkit_cost_units()))

    def extend_capabilities(self, service: Any, capabilities: dict[str, Any]) -> None:
        """Let every plugin add to a capabilities document."""
        self.pm.hook.roadkit_capabilities(service=service, capabilities=capabilities)

    def apis(self) -> dict[tuple[str, str], Api]:
        """Every API contributed by a plugin, by (name, version)."""
        apis: dict[tuple[str, str], Api] = {}
        for impl in self.pm.hook.roadkit_apis.get_hookimpls():
            contributed = cast(Sequence["Api"], impl.function() or ())
            for api in contributed:
                key = (api.name, api.version)
                if key in apis:
                    raise PluginError(f"API {api.name}/{api.version} is provided twice")
                apis[key] = api
        return apis

    def describe(self) -> list[dict[str, Any]]:
        """Every registered plugin, in load order: its name, distribution and version, and what it contributes.

        What ``roadkit plugins`` prints and ``GET /admin/1.0.0/plugins`` answers.
        """
        described = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:  # blocked
                continue
            distribution, version = _distribution(self.pm, plugin, name)
            hooks = sorted(impl.name for impl in self.pm.get_hookcallers(plugin) or ())

            def answer(hook: str, plugin: object = plugin, hooks: list[str] = hooks) -> Sequence[Any]:
                if hook not in hooks:
                    return ()
                impl = next(i for i in getattr(self.pm.hook, hook).get_hookimpls() if i.plugin is plugin)
                return cast(Sequence[Any], impl.function() or ())

            described.append(
                {
                    "name": name,
                    "distribution": distribution,
                    "version": version,
                    "sourceKinds": sorted(cls.kind for cls in answer("roadkit_source_kinds")),
                    "apis": sorted(f"{api.name}/{api.version}" for api in answer("roadkit_apis")),
                    "commands": sorted(command.name for command in answer("roadkit_commands")),
                    "hooks": hooks,
                }
            )
        return described

    def commands(self) -> list[Command]:
        """Every sub-command contributed by a plugin."""
        commands: list[Command] = []
        for answer in self.pm.hook.roadkit_commands():
            commands.extend(answer or ())
        return commands
