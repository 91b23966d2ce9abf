"""Resources: what users name in requests. A group of sources plus per-operation parameter values."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, cast

import attrs

from roadkit.config.models import ResourceConfig
from roadkit.errors import OperationNotPermitted, ParametersNotCompatible
from roadkit.routing.constraints import bans_capability, check_constraint_types, constraints_per_profile, learn_bans
from roadkit.routing.geometry import GEOMETRY_FORMATS
from roadkit.routing.model import Cost, CostType
from roadkit.routing.operations import MATRIX_MOST_CELLS, MATRIX_MOST_SOURCES, MATRIX_MOST_TARGETS, OPERATIONS
from roadkit.routing.parameters import ConstraintParameter, EnumParameter, Parameter, PointParameter, build_parameter
from roadkit.routing.projections import ProjectionRegistry
from roadkit.routing.source import Source
from roadkit.routing.units import UnitRegistry

log = logging.getLogger(__name__)


@attrs.frozen
class ResourceOperation:
    """An operation as a resource offers it: its parameters with their allowed values."""

    id: str
    parameters: dict[str, Parameter]
    #: The matrix's limits (``sources``, ``targets``, ``cells``: the most of each); empty for other operations.
    limits: dict[str, int] = attrs.field(factory=dict)

    def __getitem__(self, name: str) -> Parameter:
        return self.parameters[name]


@attrs.define
class Resource:
    """A resource with its available sources and how it picks one for a request."""

    config: ResourceConfig
    sources: list[Source]
    operations: dict[str, ResourceOperation]
    route_index: dict[tuple[str, str], Source] = attrs.field(factory=dict)
    isochrone_index: dict[tuple[str, str], Source] = attrs.field(factory=dict)
    #: The settings of each API the service serves that reads some (``Api.settings_class``), by API name.
    api_settings: dict[str, Any] = attrs.field(factory=dict)

    @property
    def id(self) -> str:
        return self.config.id

    def operation(self, op: str) -> ResourceOperation:
        """The resource's settings of ``op`` (400 when the resource does not offer it)."""
        try:
            return self.operations[op]
        except KeyError:
            raise OperationNotPermitted(f"Operation '{op}' is not permitted on this resource") from None

    def source_for_route(self, profile: str, optimization: str) -> Source:
        """The source computing routes for this profile and optimization."""
        source = self.route_index.get((profile, optimization))
        if source is None:
            raise ParametersNotCompatible(
                "profile", "optimization", f"profile '{profile}' with optimization '{optimization}' is not offered by this resource"
            )
        return source

    def source_for_isochrone(self, profile: str, cost_type: str) -> Source:
        """The source computing isochrones for this profile and cost type."""
        source = self.isochrone_index.get((profile, cost_type))
        if source is None:
            raise ParametersNotCompatible(
                "profile", "costType", f"profile '{profile}' with costType '{cost_type}' is not offered by this resource"
            )
        return source

    def source_for_nearest(self) -> Source:
        """The first source (all sources of a resource share one graph area)."""
        return self.sources[0]


#: The parameters naming a unit, with the cost type of their units.
UNIT_PARAMETERS = {"timeUnit": "time", "distanceUnit": "distance"}


def _derived_values(name: str, op: str, sources: list[Source], projections: ProjectionRegistry, units: UnitRegistry) -> list[str] | None:
    costs = [cost for source in sources for cost in source.costs()]
    if name == "profile":
        wanted = [c.profile for c in costs if (c.optimization if op in ("route", "matrix") else c.cost_type)]
    elif name == "optimization":
        wanted = [c.optimization for c in costs if c.optimization]
    elif name == "costType":
        wanted = [c.cost_type for c in costs if c.cost_type]
    elif name == "crs":
        return projections.ids()
    elif name == "geometryFormat":
        return list(GEOMETRY_FORMATS)
    elif name in UNIT_PARAMETERS:
        return units.names(UNIT_PARAMETERS[name])
    elif name == "direction":
        return ["departure", "arrival"]
    elif name == "waysAttributes":
        return ["name"]
    elif name == "resource":
        return None
    else:
        return None
    return list(dict.fromkeys(w for w in wanted if w))


def build_resource(
    config: ResourceConfig, available: Mapping[str, Source], projections: ProjectionRegistry, units: UnitRegistry
) -> tuple[Resource | None, list[str]]:
    """A resource from its file and the available sources; problems name the file and key.

    ``units`` is the service's unit registry: a ``timeUnit``/``distanceUnit`` value it does not know
    is a problem here, not an error when a request asks for it.

    Unknown or unavailable source ids are left out with a warning; with no source left the
    resource is skipped (``None``) with a warning.
    """
    problems: list[str] = []
    sources: list[Source] = []
    for sid in config.sources:
        source = available.get(sid)
        if source is None:
            log.warning("%s: sources: source %r is unknown or unavailable; left out of resource %r", config.path, sid, config.id)
        elif config.type not in (source.kind, type(source).resource_type):
            log.warning("%s: sources: source %r is of type %r, not %r; left out", config.path, sid, source.kind, config.type)
        else:
            sources.append(source)
    if not sources:
        log.warning("%s: resource %r has no available source; skipped", config.path, config.id)
        return None, []
    supported = frozenset.intersection(*(type(s).operations for s in sources))
    # A key type is usable when every source of the resource declares it.
    key_types = {
        name: kt for name, kt in type(sources[0]).constraint_key_types.items() if all(name in type(s).constraint_key_types for s in sources)
    }
    operations: dict[str, ResourceOperation] = {}
    for op, settings in config.operations.items():
        where = f"{config.path}: operations.{op}"
        if op not in OPERATIONS:
            problems.append(f"{where}: unknown operation (expected one of {', '.join(OPERATIONS)})")
            continue
        if op not in supported:
            problems.append(f"{where}: sources of type {config.type!r} do not offer {op!r}")
            continue
        specs = OPERATIONS[op]
        limits: dict[str, int] = {}
        if op == "matrix":
            settings = dict(settings)
            limits = matrix_limits(settings.pop("limits", {}), f"{where}.limits", problems)
            most = {"sources": limits["sources"], "targets": limits["targets"]}
            specs = tuple(attrs.evolve(spec, max=most[spec.name]) if spec.name in most else spec for spec in specs)
        known = {spec.name for spec in specs}
        for name in settings:
            if name not in known:
                problems.append(f"{where}.{name}: unknown parameter of {op} (expected one of {', '.join(sorted(known))})")
        params: dict[str, Parameter] = {}
        for spec in specs:
            if spec.name == "resource":
                continue
            derived = _derived_values(spec.name, op, sources, projections, units)
            param = build_parameter(spec, settings.get(spec.name, {}), derived, f"{where}.{spec.name}", problems, key_types)
            if isinstance(param, PointParameter) and param.projection not in projections:
                problems.append(f"{where}.{spec.name}.projection: unknown projection {param.projection!r}")
            params[spec.name] = param
        constraints = params.get("constraints")
        if isinstance(constraints, ConstraintParameter) and constraints.keys:
            check_constraint_types(constraints, sources, where, problems, op)
            params["constraints"] = learn_bans(constraints, sources, where)
        for name, cost_type in UNIT_PARAMETERS.items():
            for value in getattr(params.get(name), "values", ()):
                problem = units.problem(value, cost_type)
                if problem is not None:
                    problems.append(f"{where}.{name}.values: {problem}")
        crs = params.get("crs")
        for value in getattr(crs, "values", ()):
            if value not in projections:
                problems.append(f"{where}.crs.values: unknown projection {value!r}")
        operations[op] = ResourceOperation(op, params, limits)
    resource = Resource(config, sources, operations)
    for source in sources:
        for cost in source.costs():
            if cost.optimization:
                resource.route_index.setdefault((cost.profile, cost.optimization), source)
            if cost.cost_type:
                resource.isochrone_index.setdefault((cost.profile, cost.cost_type), source)
    return (None, problems) if problems else (resource, [])


def matrix_limits(settings: Any, where: str, problems: list[str]) -> dict[str, int]:
    """The most sources, targets and cells of a matrix (``[operations.matrix.limits]``), defaults for those not set."""
    limits = {"sources": MATRIX_MOST_SOURCES, "targets": MATRIX_MOST_TARGETS, "cells": MATRIX_MOST_CELLS}
    if not isinstance(settings, dict):
        problems.append(f"{where}: expected a table of sources, targets and cells, got {settings!r}")
        return limits
    for key, value in settings.items():
        if key not in limits:
            problems.append(f"{where}.{key}: unknown limit (expected sources, targets or cells)")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
            problems.append(f"{where}.{key}: expected a positive integer, got {value!r}")
        else:
            limits[key] = value
    return limits


def _offered_costs(resource: Resource, op: ResourceOperation) -> list[tuple[Cost, Source]]:
    """The costs a request of ``op`` may ask (the operation's profile and optimization or costType values allow them)."""

    def allows(name: str, value: str) -> bool:
        param = op.parameters.get(name)
        return not isinstance(param, EnumParameter) or not param.values or value in param.values

    if op.id == "isochrone":
        return [
            (Cost(p, cost_type=cast("CostType", c)), s)
            for (p, c), s in resource.isochrone_index.items()
            if allows("profile", p) and allows("costType", c)
        ]
    return [(Cost(p, o), s) for (p, o), s in resource.route_index.items() if allows("profile", p) and allows("optimization", o)]


def _capability(parameter: Parameter, op: ResourceOperation, resource: Resource) -> dict[str, Any]:
    entry = parameter.capability()
    if op.id == "matrix" and isinstance(parameter, PointParameter):
        entry["min"], entry["max"] = parameter.spec.min, parameter.spec.max
    if isinstance(parameter, ConstraintParameter):
        combinations = bans_capability(parameter, op.id)
        if combinations:  # only engines that ban some combinations only (OSRM) restrict them
            entry["values"]["bannedCombinations"] = combinations
        per_profile = constraints_per_profile(parameter, _offered_costs(resource, op), op.id)
        if per_profile:  # only where some profile gets less than the keys above
            entry["values"]["perProfile"] = per_profile
    return entry


def _parameters_of(op: ResourceOperation, resource: Resource) -> list[dict[str, Any]]:
    entries = [{"id": "resource", "values": [resource.id]}]
    for parameter in op.parameters.values():
        entry = _capability(parameter, op, resource)
        if op.id == "isochrone" and entry["id"] == "crs":
            entries.append({**entry, "id": "projection"})  # Road2's name for the isochrone's crs, crs beside it
        entries.append(entry)
    return entries


def capabilities_of(resource: Resource) -> dict[str, Any]:
    """The resource's entry in the capabilities."""
    return {
        "id": resource.id,
        "description": resource.config.description,
        "availableOperations": [
            {
                "id": op.id,
                **({"limits": dict(op.limits)} if op.limits else {}),
                "availableParameters": _parameters_of(op, resource),
            }
            for op in resource.operations.values()
        ],
    }
