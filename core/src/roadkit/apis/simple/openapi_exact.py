"""Exact request schemas of the simple API, generated from the service's resources.

A request is schema-valid exactly when the service accepts it (as far as JSON Schema can say):
one variant per resource, request CRS and cost (profile + optimization, or profile + costType),
with the resource's enumerations, the bbox as number ranges in that CRS, the bounds of numbers
and of multi-valued parameters, and the constraint combinations the sources can apply. The GET
query and the POST body share one schema: GET serialises it as form-exploded query parameters
(every value as text), POST as a JSON object (native values accepted too, as the server does).

Where a domain cannot be written as a pattern (an arbitrary decimal range), the pattern describes
a slightly smaller, safe part of it: schema-valid requests are always accepted.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from roadkit.errors import RoadkitError
from roadkit.routing.constraints import check_bans
from roadkit.routing.model import Cost, CostType
from roadkit.routing.operations import OPERATIONS, ParameterSpec
from roadkit.routing.parameters import (
    BoolParameter,
    ConstraintParameter,
    EnumParameter,
    NumberParameter,
    Parameter,
    PointParameter,
    StringParameter,
)
from roadkit.web.patterns import decimal_pattern, digit_ranges

if TYPE_CHECKING:
    from roadkit.routing.projections import ProjectionRegistry
    from roadkit.routing.resources import Resource
    from roadkit.web.view import ServiceView

#: Above this many constraint combinations, only single constraints are described.
MAX_CONSTRAINT_COMBINATIONS = 200
#: How much of a transformed bbox is kept on each side (projections bend edges).
_MARGIN = 0.01
_WS = r"\s*"


# -- dates ----------------------------------------------------------------------------------


def date_time_pattern(first: int, last: int) -> str:
    """``date_time`` in years ``first`` to ``last`` (four digits): real dates (days 01-28 are valid in every month) and times."""
    years = "|".join("".join(tokens) for tokens in digit_ranges(str(first), str(last)))
    return rf"^(?:{years})-(0[1-9]|1[0-2])-(0[1-9]|1\d|2[0-8])T([01]\d|2[0-3]):[0-5]\d$"


#: ``date_time`` of any year an engine may read (a source narrows it: ``Source.date_time_years``).
DATE_TIME_PATTERN = date_time_pattern(1000, 9999)


# -- points in a CRS ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def inner_box(
    projections: ProjectionRegistry, bbox: tuple[float, float, float, float], projection: str, crs: str
) -> tuple[float, float, float, float] | None:
    """An axis-aligned box in ``crs`` whose points all fall inside ``bbox`` (given in ``projection``).

    The simple API checks points given in another CRS against this box (``Inputs.check_point``), so
    the document's ranges are the service's rule, exactly.
    """
    xmin, ymin, xmax, ymax = bbox
    if crs == projection:
        return bbox
    steps = [i / 20 for i in range(21)]
    edges = {
        "left": [(xmin, ymin + t * (ymax - ymin)) for t in steps],
        "right": [(xmax, ymin + t * (ymax - ymin)) for t in steps],
        "bottom": [(xmin + t * (xmax - xmin), ymin) for t in steps],
        "top": [(xmin + t * (xmax - xmin), ymax) for t in steps],
    }
    try:
        out = {side: projections.transform(points, projection, crs) for side, points in edges.items()}
    except Exception:
        return None
    box = [max(p[0] for p in out["left"]), max(p[1] for p in out["bottom"]), min(p[0] for p in out["right"]), min(p[1] for p in out["top"])]
    for _ in range(10):
        dx, dy = (box[2] - box[0]) * _MARGIN, (box[3] - box[1]) * _MARGIN
        box = [box[0] + dx, box[1] + dy, box[2] - dx, box[3] - dy]
        if box[0] >= box[2] or box[1] >= box[3]:
            return None
        corners = [(box[0], box[1]), (box[0], box[3]), (box[2], box[1]), (box[2], box[3])]
        back = projections.transform(corners, crs, projection)
        if all(xmin <= x <= xmax and ymin <= y <= ymax for x, y in back):
            return (box[0], box[1], box[2], box[3])
    return None


def point_text_pattern(box: tuple[float, float, float, float]) -> str | None:
    """``x,y`` inside ``box`` (unanchored)."""
    x, y = decimal_pattern(box[0], box[2]), decimal_pattern(box[1], box[3])
    return f"{x},{y}" if x and y else None


# -- one parameter of one variant ---------------------------------------------------------------


def _anchored(pattern: str) -> str:
    return f"^{pattern}$"


def _multi_text(item: str, spec: ParameterSpec) -> str:
    """``item`` repeated ``spec.min``..``spec.max`` times, '|'-separated (GET form), anchored."""
    least = max(spec.min, 1)
    more = f"(?:\\|(?:{item})){{{least - 1},{spec.max - 1}}}"
    return f"^(?:{item}){more}$"


def _text_or_native(text: dict[str, Any], native: dict[str, Any] | None, *, post: bool) -> dict[str, Any]:
    return {"anyOf": [native, text]} if post and native else text


def parameter_schema(service: ServiceView, param: Parameter, crs: str, *, post: bool) -> dict[str, Any] | None:
    """The schema of one parameter's value, or None when no value can be described (leave it out)."""
    spec = param.spec
    if isinstance(param, PointParameter):
        box = inner_box(service.projections, param.bbox, param.projection, crs)
        item = point_text_pattern(box) if box else None
        if item is None or box is None:
            return None
        if spec.multi:
            text = {"type": "string", "pattern": _multi_text(f"{_WS}{item}{_WS}", spec)}
            pair = {
                "type": "array",
                "prefixItems": [
                    {"type": "number", "minimum": box[0], "maximum": box[2]},
                    {"type": "number", "minimum": box[1], "maximum": box[3]},
                ],
                "items": False,
                "minItems": 2,
            }
            native = {
                "type": "array",
                "items": {"anyOf": [pair, {"type": "string", "pattern": _anchored(f"{_WS}{item}{_WS}")}]},
                "minItems": max(spec.min, 1),
                "maxItems": spec.max,
            }
            return _text_or_native(text, native, post=post)
        text = {"type": "string", "pattern": _anchored(f"{_WS}{item}{_WS}")}
        native = {
            "type": "array",
            "prefixItems": [
                {"type": "number", "minimum": box[0], "maximum": box[2]},
                {"type": "number", "minimum": box[1], "maximum": box[3]},
            ],
            "items": False,
            "minItems": 2,
        }
        return _text_or_native(text, native, post=post)
    if isinstance(param, EnumParameter):
        if not param.values:
            return None
        if spec.multi:
            item = "|".join(re.escape(v) for v in param.values)
            text = {"type": "string", "pattern": _multi_text(item, spec)}
            native = {"type": "array", "items": {"enum": list(param.values)}, "minItems": max(spec.min, 1), "maxItems": spec.max}
            return _text_or_native(text, native, post=post)
        return {"type": "string", "enum": list(param.values)}
    if isinstance(param, BoolParameter):
        words = [str(v).lower() for v in param.values]
        return _text_or_native({"type": "string", "enum": words}, {"type": "boolean", "enum": list(param.values)}, post=post)
    if isinstance(param, NumberParameter):
        lo = param.min if param.min is not None else -1e9
        hi = param.max if param.max is not None else 1e9
        number = decimal_pattern(lo, hi, integer=param.integer)
        if number is None:
            return None
        item = f"{_WS}\\+?{number}{_WS}" if not number.startswith("-") else f"{_WS}{number}{_WS}"
        native = {"type": "integer" if param.integer else "number", "minimum": lo, "maximum": hi}
        if spec.multi:
            text = {"type": "string", "pattern": _multi_text(item, spec)}
            many = {"type": "array", "items": native, "minItems": max(spec.min, 1), "maxItems": spec.max}
            return {"anyOf": [many, native, text]} if post else text
        return _text_or_native({"type": "string", "pattern": _anchored(item)}, native, post=post)
    if isinstance(param, StringParameter):
        if param.pattern is not None:
            return {"type": "string", "pattern": _anchored(param.pattern)}
        return {"type": "string"}
    return None


def constraint_texts(param: ConstraintParameter) -> list[dict[str, Any]]:
    """Every single constraint the parameter accepts (JSON objects), when they can be listed."""
    found: list[dict[str, Any]] = []
    for spec in param.keys.values():
        if spec.numeric or not spec.values:
            return []  # numbers: not a finite list
        for ctype, op, value in itertools.product(spec.types, spec.operators, spec.values):
            found.append({"constraintType": ctype, "key": spec.key, "operator": op, "value": value})
    return found


def constraint_schema(
    param: ConstraintParameter, resource: Resource, source: Any, cost: Cost, context: str, *, post: bool
) -> dict[str, Any] | None:
    """The constraint lists ``source`` applies: each list as '|'-joined compact JSON (GET) or an array (POST)."""
    singles = constraint_texts(param)
    if not singles:
        return None
    spec = param.spec
    sizes = range(max(spec.min, 1), spec.max + 1)
    count = sum(len(singles) ** n for n in sizes)
    if count > MAX_CONSTRAINT_COMBINATIONS:
        sizes = range(1, 2)
    accepted: list[tuple[dict[str, Any], ...]] = []
    for size in sizes:
        for combo in itertools.product(singles, repeat=size):
            try:
                parsed = [param.parse(c) for c in combo]
                check_bans(param, source, parsed, cost, context)
            except RoadkitError:
                continue
            accepted.append(combo)
    if not accepted:
        return None
    texts = ["|".join(json.dumps(c, separators=(",", ":")) for c in combo) for combo in accepted]
    text = {"type": "string", "enum": texts}
    if not post:
        return text
    arrays = [{"type": "array", "prefixItems": [{"const": c} for c in combo], "items": False, "minItems": len(combo)} for combo in accepted]
    return {"anyOf": [text, *arrays]}


# -- variants ----------------------------------------------------------------------------------


def _optional(schema: dict[str, Any], *, post: bool) -> dict[str, Any]:
    """An optional parameter may also be empty (GET, POST) or null (POST): the server reads it as absent."""
    extra: list[dict[str, Any]] = [{"const": ""}]
    if post:
        extra.append({"type": "null"})
    return {"anyOf": [schema, *extra]}


Split = tuple[str | None, str | None, float | None]


def _unit_splits(service: ServiceView, operation: Any, op: str, cost_type: str | None, source: Any) -> list[Split]:
    """``(unit parameter, unit, largest costValue)`` of an isochrone whose engine has a limit, one per unit.

    The largest costValue depends on the unit asked: one variant per unit then; else one variant
    that fixes no unit (``(None, None, None)``).
    """
    if op != "isochrone" or cost_type is None or source is None:
        return [(None, None, None)]
    limit = source.isochrone_limit(cost_type)
    name = "timeUnit" if cost_type == "time" else "distanceUnit"
    param = operation.parameters.get(name)
    if limit is None or not isinstance(param, EnumParameter):
        return [(None, None, None)]
    return [(name, unit, service.units.largest(unit, limit, cost_type)) for unit in param.values]


def _costs(resource: Resource, op: str) -> list[tuple[str, str, str, Any]]:
    """(first name, first value, second name, source) of every cost the resource computes for ``op``."""
    if op in ("route", "matrix"):
        return [(p, o, "optimization", s) for (p, o), s in sorted(resource.route_index.items())]
    if op == "isochrone":
        return [(p, c, "costType", s) for (p, c), s in sorted(resource.isochrone_index.items())]
    return []


def _allows(operation: Any, name: str, value: str) -> bool:
    """Whether the operation's parameter ``name`` takes ``value`` (any value when it lists none)."""
    param = operation.parameters.get(name)
    return not isinstance(param, EnumParameter) or not param.values or value in param.values


def matrix_counts(operation: Any) -> dict[str, int]:
    """The most sources and targets a matrix document allows: the resource's limits, lowered so that every
    count within them stays within its most cells (``sources`` alone make a square matrix)."""
    limits = operation.limits
    sources = min(limits["sources"], math.isqrt(limits["cells"]))
    return {"sources": sources, "targets": min(limits["targets"], limits["cells"] // sources)}


class Shared:
    """Schemas used by several variants, kept once under ``components/schemas`` and referenced."""

    def __init__(self) -> None:
        self.schemas: dict[str, dict[str, Any]] = {}
        self._names: dict[str, str] = {}

    def ref(self, schema: dict[str, Any], hint: str) -> dict[str, Any]:
        text = json.dumps(schema, sort_keys=True)
        if len(text) < 120:
            return schema
        name = self._names.get(text)
        if name is None:
            name = f"{hint}-{len(self._names) + 1}"
            self._names[text] = name
            self.schemas[name] = schema
        return {"$ref": f"#/components/schemas/{name}"}


def variants(service: ServiceView, resource: Resource, op: str, *, post: bool, shared: Shared | None = None) -> list[dict[str, Any]]:
    """The object schemas of ``op`` on ``resource``: one per request CRS and cost."""
    shared = shared or Shared()
    operation = resource.operations[op]
    specs = {spec.name: spec for spec in OPERATIONS[op]}
    crs_param = operation.parameters.get("crs")
    crs_values = list(crs_param.values) if isinstance(crs_param, EnumParameter) and crs_param.values else ["EPSG:4326"]
    nearest: list[tuple[str | None, str | None, str | None, Any]] = [(None, None, None, resource.sources[0] if resource.sources else None)]
    # Only the costs the operation's own values allow (a Valhalla matrix lists no multimodal profile).
    offered = [cost for cost in _costs(resource, op) if _allows(operation, "profile", cost[0]) and _allows(operation, cost[2], cost[1])]
    costs: Sequence[tuple[str | None, str | None, str | None, Any]] = offered or nearest
    found = []
    for crs, (profile, second, second_name, source), (unit_name, unit, most) in (
        (crs, cost, split)
        for crs, cost in itertools.product(crs_values, costs)
        for split in _unit_splits(service, operation, op, cost[1], cost[3])
    ):
        properties: dict[str, Any] = {"resource": {"const": resource.id}}
        required = ["resource"]
        fixed = {"crs": crs}
        if profile is not None and second_name is not None:
            fixed.update({"profile": profile, second_name: second})
        if unit_name is not None and unit is not None:
            fixed[unit_name] = unit
        years = source.date_time_years if source is not None else (1000, 9999)
        for name, value in fixed.items():
            param = operation.parameters.get(name)
            if param is None:
                continue
            properties[name] = {"const": value}
            if param.default() != value:
                required.append(name)
            else:
                properties[name] = _optional({"const": value}, post=post)
        context = f"profile '{profile}' and {second_name} '{second}'"
        for name, spec in specs.items():
            if name in properties or name in ("resource",):
                continue
            if name == "date_time" and name not in operation.parameters:
                properties[name] = _optional({"type": "string", "pattern": date_time_pattern(*years)}, post=post)
                continue
            param = operation.parameters.get(name)
            if param is None:
                continue
            if op == "matrix" and name in ("sources", "targets"):
                param = attrs.evolve(param, spec=attrs.evolve(param.spec, max=matrix_counts(operation)[name]))
            if name == "costValue" and most is not None and isinstance(param, NumberParameter):
                param = attrs.evolve(param, max=most if param.max is None else min(param.max, most))
            if isinstance(param, ConstraintParameter):
                cost = (
                    Cost(str(profile), second) if second_name == "optimization" else Cost(str(profile), cost_type=cast("CostType", second))
                )
                schema = constraint_schema(param, resource, source, cost, context, post=post)
            else:
                schema = parameter_schema(service, param, crs, post=post)
            if schema is None:
                if spec.required and param.default() is None:
                    break  # no value of a required parameter can be described: no variant
                continue
            if name == "date_time":
                schema = {"allOf": [schema, {"pattern": date_time_pattern(*years)}]}
            schema = shared.ref(schema, f"{'post' if post else 'get'}-{name}")
            if spec.required and param.default() is None:
                required.append(name)
            else:
                schema = _optional(schema, post=post)
            properties[name] = schema
        else:
            found.append({"type": "object", "required": required, "properties": properties})
    return found


def request_schema(
    service: ServiceView, op: str, resources: Iterable[Resource], *, post: bool, shared: Shared | None = None
) -> dict[str, Any]:
    """One schema for ``op``: any variant of any resource offering it (big parts kept in ``shared``)."""
    every = [v for r in resources if op in r.operations for v in variants(service, r, op, post=post, shared=shared)]
    schema: dict[str, Any] = {"type": "object", "anyOf": every} if every else {"type": "object", "not": {}}
    if not post:
        # Other query parameters are ignored, each given once: an array would repeat its key (refused).
        schema["additionalProperties"] = {"type": "string"}
    return schema


__all__ = ["DATE_TIME_PATTERN", "Shared", "date_time_pattern", "decimal_pattern", "inner_box", "request_schema", "variants"]
