"""What a resource's sources really apply of its constraint keys, learnt when the resource is built.

A resource file may allow constraints its engines cannot honour: a constraint type an engine never
applies (OSRM has no preference weights) is a configuration error; a combination of banned values a
dataset was not built for (OSRM excludes only the class sets its profile declares excludable) is
left out of the capabilities and refused per request with a 400 naming ``constraints``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from typing import Any

import attrs

from roadkit.config.models import ResourceConfig
from roadkit.errors import ParameterInvalid
from roadkit.routing.model import Constraint, Cost
from roadkit.routing.operations import OPERATIONS
from roadkit.routing.parameters import ConstraintKey, ConstraintParameter, Parameter, build_parameter
from roadkit.routing.source import Source

log = logging.getLogger(__name__)

#: Above this many banned values the combinations are not listed in the capabilities (still checked).
MAX_LISTED_VALUES = 12


@attrs.frozen
class BanSupport:
    """The sets of banned fields one source applies together (``None``: any combination)."""

    source: Source = attrs.field(eq=False)
    allowed: frozenset[frozenset[str]] | None

    def accepts(self, fields: frozenset[str]) -> bool:
        return self.allowed is None or not fields or fields in self.allowed


def _banned_pairs(keys: dict[str, ConstraintKey]) -> list[tuple[str, str, str]]:
    """(key, value, field) of every value that may be banned and names an engine field."""
    return [
        (key.key, value, str(entry["field"]))
        for key in keys.values()
        if "banned" in key.types
        for value, entry in key.values.items()
        if isinstance(entry.get("field"), str) and entry["field"]
    ]


def check_constraint_types(
    parameter: ConstraintParameter, sources: Sequence[Source], where: str, problems: list[str], operation: str = "route"
) -> None:
    """A problem for each constraint type a key allows that one of the sources never applies to ``operation``."""
    for key in parameter.keys.values():
        fields: list[str | None] = [v.get("field") for v in key.values.values()] or [key.field]
        for ctype in key.types:
            for source in sources:
                reason = next((r for f in fields if (r := source.constraint_problem(operation, ctype, key.key_type, f))), None)
                if reason:
                    problems.append(
                        f"{where}.constraints.keys[key={key.key}].availableConstraintType: {ctype!r} is not applied by source "
                        f"{source.id!r} ({source.kind}): {reason}"
                    )
                    break


def wanted_bans(config: ResourceConfig, source: Source) -> list[tuple[list[str], int]]:
    """``(fields, most)`` of each operation of a resource file that bans values of ``source``'s fields.

    What :meth:`Source.learn_bans` is asked before the resource is built (problems in the file are
    reported by the build, not here).
    """
    wanted: list[tuple[list[str], int]] = []
    for op, settings in config.operations.items():
        spec = next((s for s in OPERATIONS.get(op, ()) if s.name == "constraints"), None)
        if spec is None or not isinstance(settings, dict) or not isinstance(settings.get("constraints"), dict):
            continue
        parameter = build_parameter(spec, settings["constraints"], None, "", [], type(source).constraint_key_types)
        if isinstance(parameter, ConstraintParameter):
            fields = sorted({field for _, _, field in _banned_pairs(parameter.keys)})
            if fields:
                wanted.append((fields, parameter.spec.max))
    return wanted


def learn_bans(parameter: ConstraintParameter, sources: Sequence[Source], where: str) -> ConstraintParameter:
    """The parameter with what each source bans together; values no source can ban are left out."""
    pairs = _banned_pairs(parameter.keys)
    if not pairs:
        return parameter
    fields = sorted({field for _, _, field in pairs})
    supports = []
    for source in sources:
        allowed = source.supported_bans(fields, parameter.spec.max)
        supports.append(BanSupport(source, None if allowed is None else frozenset(frozenset(a) for a in allowed)))
    if all(s.allowed is not None for s in supports):
        usable = {f for s in supports for combination in s.allowed or () for f in combination}
        keys = dict(parameter.keys)
        for key, value, field in pairs:
            if field not in usable and value in keys[key].values:
                log.warning("%s.constraints: no source of the resource can ban %s=%s (engine field %r): left out", where, key, value, field)
                remaining = {v: e for v, e in keys[key].values.items() if v != value}
                keys[key] = attrs.evolve(keys[key], values=remaining)
        keys = {k: v for k, v in keys.items() if v.values or v.numeric}
        parameter = attrs.evolve(parameter, keys=keys)
    return attrs.evolve(parameter, bans=tuple(supports))


def check_bans(parameter: Parameter, source: Source, constraints: Sequence[Constraint], cost: Cost, context: str) -> None:
    """A 400 naming ``constraints`` when the source can't apply one of them with ``cost``, or these banned values together.

    ``context`` says which cost was asked (``profile 'car' and optimization 'fastest'``).
    """
    if not isinstance(parameter, ConstraintParameter):
        return
    for constraint in constraints:
        key = parameter.keys.get(constraint.key.lower())
        problem = None if key is None else source.cost_constraint_problem(cost, constraint.type, key.key_type, constraint.field)
        if problem:
            raise ParameterInvalid(
                "constraints",
                f"{constraint.type} {constraint.key}={constraint.value} can't be applied with {context} on this resource ({problem})",
            )
    fields = frozenset(c.field for c in constraints if c.type == "banned" and c.field)
    for support in parameter.bans:
        if support.source is source and not support.accepts(fields):
            banned = ", ".join(f"{c.key}={c.value}" for c in constraints if c.type == "banned")
            combinations = _combinations(parameter, support)
            if combinations is None:
                possible = "too many to list"
            else:
                possible = "; ".join(" + ".join(f"{k}={v}" for k, v, _ in combo) for combo in combinations) or "none"
            raise ParameterInvalid(
                "constraints",
                f"banning {banned} together is not possible with {context} on this resource (possible bans: {possible})",
            )


def _combinations(parameter: ConstraintParameter, support: BanSupport) -> list[list[tuple[str, str, str]]] | None:
    """The combinations of banned (key, value, field) the source applies; None when too many to list."""
    pairs = _banned_pairs(parameter.keys)
    if support.allowed is None or len(pairs) > MAX_LISTED_VALUES:
        return None
    found = []
    for size in range(1, parameter.spec.max + 1):
        for combo in itertools.combinations(pairs, size):
            if frozenset(f for _, _, f in combo) in support.allowed:
                found.append(list(combo))
    return found


def bans_capability(parameter: ConstraintParameter, op: str) -> list[dict[str, Any]]:
    """Per cost of a restricted source, the combinations of banned values it applies."""
    entries = []
    for support in parameter.bans:
        found = _combinations(parameter, support)
        if found is None:  # any combination, or too many values to list (requests are still checked)
            continue
        combinations = [[{"key": k, "value": v} for k, v, _ in combo] for combo in found]
        for cost in support.source.costs():
            second = ("optimization", cost.optimization) if op == "route" else ("costType", cost.cost_type)
            if second[1]:
                entries.append({"profile": cost.profile, second[0]: second[1], "combinations": combinations})
    return entries


def _applies(parameter: ConstraintParameter, source: Source, cost: Cost, ctype: str, key: ConstraintKey, field: str | None) -> bool:
    """Whether a request with ``cost`` gets this one constraint applied (not a 400)."""
    if source.cost_constraint_problem(cost, ctype, key.key_type, field):
        return False
    if ctype != "banned" or not field:
        return True
    return all(s.accepts(frozenset({field})) for s in parameter.bans if s.source is source)


def keys_for_cost(parameter: ConstraintParameter, source: Source, cost: Cost) -> list[dict[str, Any]]:
    """The resource's key descriptors (Road2's shape) reduced to what a request with ``cost`` gets applied.

    A key whose values allow different constraint types is described once per group of values.
    """
    described: list[dict[str, Any]] = []
    for key in parameter.keys.values():
        if key.numeric or not key.values:
            applied = [t for t in key.types if _applies(parameter, source, cost, t, key, key.field)]
            if applied:
                described.append({**key.capability(), "availableConstraintType": applied})
            continue
        groups: dict[tuple[str, ...], list[str]] = {}
        for value, entry in key.values.items():
            field = entry.get("field")
            types = tuple(t for t in key.types if _applies(parameter, source, cost, t, key, field if isinstance(field, str) else None))
            if types:
                groups.setdefault(types, []).append(value)
        for types, values in groups.items():
            described.append({**key.capability(), "availableConstraintType": list(types), "values": values})
    return described


def constraints_per_profile(parameter: ConstraintParameter, costs: Sequence[tuple[Cost, Source]], op: str) -> list[dict[str, Any]]:
    """Per cost, the keys a request gets applied; empty when every cost gets every key the resource lists."""
    listed = [key.capability() for key in parameter.keys.values()]
    entries = []
    for cost, source in costs:
        second = ("costType", cost.cost_type) if op == "isochrone" else ("optimization", cost.optimization)
        entries.append({"profile": cost.profile, second[0]: second[1], "keys": keys_for_cost(parameter, source, cost)})
    if all(entry["keys"] == listed for entry in entries):
        return []
    return entries
