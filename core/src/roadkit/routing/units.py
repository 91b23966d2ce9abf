"""The unit registry: every time and distance unit the service knows, from the ``roadkit_cost_units`` hook.

Engines always speak seconds (time) and meters (distance); the simple API converts the user's
values and the engine's totals with the registry of its service. Core contributes the units below
through its default plugin; a plugin may add units (``mile``) or redefine one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from roadkit.errors import ParameterInvalid, PluginError

#: Core's units: ``{name: (cost type, factor to seconds or meters)}``.
CORE_UNITS: dict[str, tuple[str, float]] = {
    "hour": ("time", 3600.0),
    "minute": ("time", 60.0),
    "second": ("time", 1.0),
    "standard": ("time", 1.0),
    "meter": ("distance", 1.0),
    "kilometer": ("distance", 1000.0),
}
#: Durations written ``HH:MM:SS`` (values given in it count as seconds).
STANDARD = "standard"
COST_TYPES = ("time", "distance")


@attrs.frozen
class Unit:
    """One unit: its cost type and how many seconds (time) or meters (distance) one of it is."""

    name: str
    cost_type: str
    factor: float


def format_standard(seconds: float) -> str:
    """Seconds as ``HH:MM:SS`` with fractional seconds kept to one decimal (``00:05:03.2``)."""
    seconds = round(seconds, 1)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    secs = round(secs, 1)
    text = f"{int(secs):02d}" if secs == int(secs) else f"{secs:04.1f}"
    return f"{int(hours):02d}:{int(minutes):02d}:{text}"


class UnitRegistry:
    """Every unit of a service, checked once when it is built (a bad plugin unit is a start-up error)."""

    def __init__(self, units: Mapping[str, tuple[str, float]], *, origin: str = "roadkit_cost_units") -> None:
        self._units: dict[str, Unit] = {}
        for name, entry in units.items():
            try:
                cost_type, factor = entry
                factor = float(factor)
            except (TypeError, ValueError):
                raise PluginError(f"{origin}: unit {name!r}: expected (cost type, factor), got {entry!r}") from None
            if cost_type not in COST_TYPES:
                raise PluginError(f"{origin}: unit {name!r}: cost type {cost_type!r} is not one of {', '.join(COST_TYPES)}")
            if not (math.isfinite(factor) and factor > 0):
                raise PluginError(f"{origin}: unit {name!r}: factor {factor!r} is not a positive number")
            self._units[name] = Unit(name, cost_type, factor)

    @classmethod
    def merged(cls, answers: Iterable[Mapping[str, tuple[str, float]]]) -> UnitRegistry:
        """One registry from the hook's answers, in order: a later answer redefines an earlier unit."""
        units: dict[str, tuple[str, float]] = {}
        for answer in answers:
            units.update(answer)
        return cls(units)

    def __contains__(self, name: object) -> bool:
        return name in self._units

    def __getitem__(self, name: str) -> Unit:
        return self._units[name]

    def names(self, cost_type: str) -> list[str]:
        """The units of one cost type, in registration order."""
        return [unit.name for unit in self._units.values() if unit.cost_type == cost_type]

    def problem(self, name: Any, cost_type: str) -> str | None:
        """Why ``name`` is no ``cost_type`` unit of this registry (None when it is one)."""
        unit = self._units.get(name) if isinstance(name, str) else None
        if unit is not None and unit.cost_type == cost_type:
            return None
        return f"unknown {cost_type} unit {name!r} (known: {', '.join(self.names(cost_type))})"

    def to_engine(self, name: str, value: float, cost_type: str, *, parameter: str = "costValue") -> float:
        """A user value in unit ``name`` in seconds or meters (``standard`` counts as seconds)."""
        problem = self.problem(name, cost_type)
        if problem is not None:
            raise ParameterInvalid(parameter, problem)
        engine = value * self._units[name].factor
        if not math.isfinite(engine):  # a finite value times the unit's factor can overflow
            raise ParameterInvalid(parameter, f"{value:g} {name} is beyond the numbers the engine takes")
        return engine

    def largest(self, name: str, engine_limit: float, cost_type: str) -> float:
        """The largest value in unit ``name`` within ``engine_limit`` seconds or meters (what a document may say too)."""
        return engine_limit / self.to_engine(name, 1.0, cost_type)

    def from_engine(self, name: str, value: float) -> float | str:
        """Seconds or meters written in unit ``name`` (``standard``: ``HH:MM:SS``)."""
        if name == STANDARD:
            return format_standard(value)
        return value / self._units[name].factor

    def writer(self, name: str) -> Callable[[float], float | str]:
        """``from_engine`` of unit ``name`` as one function (for the many values of one answer)."""
        if name == STANDARD:
            return format_standard
        factor = self._units[name].factor
        return lambda value: value / factor
