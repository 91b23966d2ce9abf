"""A resource's settings for the native OSRM API: profile aliases and osrm-routed's limits.

In the resource file::

    [apis.osrm]
    profiles = { driving = "car", foot = "pedestrian/fastest" }   # alias = "profile[/optimization]"
    [apis.osrm.limits]
    max_table_size = 100          # osrm-routed's --max-table-size (dashes accepted too)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from roadkit.contract.apis import ConfigurationError, Cost, Resource, Source
from roadkit.contract.native_osrm import NativeLimits, NativeSource
from roadkit_osrm.native.url import NAME_CHARS

API_KEY = "osrm"
_LIMIT_NAMES = {f.name for f in attrs.fields(NativeLimits)}


@attrs.frozen
class NativeSettings:
    """Profile aliases (name → profile, optimization or None) and limits of one resource."""

    aliases: dict[str, tuple[str, str | None]]
    limits: NativeLimits

    def choose(self, resource: Resource, name: str, optimization: str | None = None) -> tuple[Source, Cost] | None:
        """The source and cost answering profile ``name`` (an alias or a cost's profile), or None."""
        profile, wanted = self.aliases.get(name, (name, optimization))
        if optimization is not None:
            wanted = optimization
        for source in resource.sources:
            for cost in source.costs():
                if cost.profile == profile and (wanted is None or cost.optimization == wanted):
                    return source, cost
        return None

    def limits_for(self, sources: Iterable[Source]) -> NativeLimits:
        """The resource's limits narrowed by each source's own (its ``native_limits``): the narrowest of all."""
        limits = self.limits
        for source in sources:
            limits = limits.narrowed(source.native_limits if isinstance(source, NativeSource) else {})
        return limits

    def profile_names(self, resource: Resource) -> list[str]:
        """Every profile name the resource accepts: its costs' profiles and the aliases."""
        names = {cost.profile for source in resource.sources for cost in source.costs()}
        return sorted(names | set(self.aliases))

    def profiles(self, resource: Resource) -> list[dict[str, object]]:
        """The resource's profiles with their optimizations, and the aliases naming each."""
        found: dict[str, list[str]] = {}
        for source in resource.sources:
            for cost in source.costs():
                optimizations = found.setdefault(cost.profile, [])
                if cost.optimization and cost.optimization not in optimizations:
                    optimizations.append(cost.optimization)
        return [
            {
                "id": profile,
                "optimizations": [{"id": o} for o in optimizations],
                "aliases": sorted(a for a, (p, _) in self.aliases.items() if p == profile),
            }
            for profile, optimizations in found.items()
        ]


def of(resource: Resource) -> NativeSettings:
    """A resource's settings, structured when it was built (the defaults for a resource built without this API)."""
    settings = resource.api_settings.get(API_KEY)
    return settings if isinstance(settings, NativeSettings) else DEFAULT


def read_settings(table: Mapping[str, Any], path: Path) -> NativeSettings:
    """A resource's ``[apis.osrm]`` table checked (at start-up or publication); problems name the file and the key."""
    raw = dict(table)
    where = f"{path}: apis.{API_KEY}"
    problems: list[str] = []
    aliases: dict[str, tuple[str, str | None]] = {}
    profiles = raw.pop("profiles", {})
    if not isinstance(profiles, dict):
        problems.append(f'{where}.profiles: expected a table of alias = "profile[/optimization]"')
        profiles = {}
    for alias, target in profiles.items():
        if not isinstance(target, str) or not target or not alias or any(c not in NAME_CHARS for c in alias):
            problems.append(
                f"{where}.profiles.{alias}: expected an alias of letters, digits, '-', '.', '_' or '~' "
                f'naming "profile[/optimization]", got {target!r}'
            )
            continue
        profile, _, optimization = target.partition("/")
        aliases[alias] = (profile, optimization or None)
    limits_raw = raw.pop("limits", {})
    values: dict[str, float] = {}
    if not isinstance(limits_raw, dict):
        problems.append(f"{where}.limits: expected a table of osrm-routed limits")
        limits_raw = {}
    for key, value in limits_raw.items():
        name = key.replace("-", "_")
        if name not in _LIMIT_NAMES:
            problems.append(f"{where}.limits.{key}: unknown limit (expected one of {', '.join(sorted(_LIMIT_NAMES))})")
        elif (
            isinstance(value, bool) or not isinstance(value, int | float) or (name != "max_matching_radius" and not isinstance(value, int))
        ):
            problems.append(f"{where}.limits.{key}: expected an integer (-1 for unlimited), got {value!r}")
        else:
            values[name] = value
    for key in raw:
        problems.append(f"{where}.{key}: unknown key (expected profiles, limits)")
    if problems:
        raise ConfigurationError(problems)
    return NativeSettings(aliases, NativeLimits(**values))  # type: ignore[arg-type]


#: The settings of a resource file without an ``[apis.osrm]`` table.
DEFAULT = NativeSettings({}, NativeLimits())
