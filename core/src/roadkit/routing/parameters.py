"""Parameters of a resource operation: allowed values and defaults, and validation of user input.

Every ``parse`` takes a raw user value (a string from a query, or a JSON value from a POST body) and
returns the typed value, or raises :class:`ParameterInvalid` naming the parameter and what was
expected.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from roadkit.config.loader import parse_bbox
from roadkit.errors import ParameterInvalid
from roadkit.routing.json_input import MAX_NUMBER_LENGTH, JsonInputError, read_json
from roadkit.routing.model import Constraint, ConstraintKeyType, Coord
from roadkit.routing.operations import ParameterSpec

_POINT = re.compile(r"^(-?\d+(?:\.\d*)?),(-?\d+(?:\.\d*)?)$")
_FLOAT = re.compile(r"^[+-]?\d+(?:\.\d*)?$")  # "300." too, as points and the documents take it
_INTEGER = re.compile(r"^[+-]?\d+$")


#: The bounds of an ``integer`` parameter (a 32-bit signed integer, what the engines take).
INTEGER_MIN, INTEGER_MAX = -(2**31), 2**31 - 1
#: The largest ``costRatio`` of a constraint (a cost times the ratio stays far from a float's overflow).
MAX_COST_RATIO = 1000.0
#: The most characters of a user's value that an error message repeats.
MAX_ECHO = 80


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    """A JSON number (not a boolean) that is finite."""
    return _is_number(value) and math.isfinite(value)


def echo(text: str) -> str:
    """A user's text as an error message repeats it: at most ``MAX_ECHO`` characters."""
    return text if len(text) <= MAX_ECHO else f"{text[:MAX_ECHO]}... ({len(text)} characters)"


def _dumps(value: Any) -> str:
    return echo(json.dumps(value))


@attrs.frozen
class Parameter:
    """A parameter of a resource operation."""

    spec: ParameterSpec

    @property
    def name(self) -> str:
        return self.spec.name

    def invalid(self, detail: str) -> ParameterInvalid:
        return ParameterInvalid(self.name, detail)

    def parse(self, raw: Any) -> Any:
        raise NotImplementedError

    def default(self) -> Any:
        return None

    def capability(self) -> dict[str, Any]:
        """``{id, values, defaultValue?}`` for the capabilities."""
        return {"id": self.name}


def _listed(name: str, values: tuple[Any, ...], default_value: Any) -> dict[str, Any]:
    """The capability of a parameter that takes one of ``values``: ``{id, values, defaultValue?}``."""
    entry: dict[str, Any] = {"id": name, "values": list(values)}
    if default_value is not None:
        entry["defaultValue"] = default_value
    return entry


@attrs.frozen
class PointParameter(Parameter):
    """A point: ``x,y`` in the request CRS, checked against a bbox given in ``projection``."""

    bbox: tuple[float, float, float, float] = (-180.0, -90.0, 180.0, 90.0)
    projection: str = "EPSG:4326"

    def parse(self, raw: Any) -> Coord:
        if isinstance(raw, list) and len(raw) == 2 and all(_is_number(v) for v in raw):
            point = (float(raw[0]), float(raw[1]))
        elif not isinstance(raw, str):
            raise self.invalid(f"expected a point 'x,y', got {_dumps(raw)}")
        elif (
            len(raw) > 2 * MAX_NUMBER_LENGTH + 1
            or not (match := _POINT.match(raw.strip()))
            or max(len(match.group(1)), len(match.group(2))) > MAX_NUMBER_LENGTH
        ):
            raise self.invalid(
                f"expected a point 'x,y' (two decimal numbers of at most {MAX_NUMBER_LENGTH} characters separated by a comma), "
                f"got '{echo(raw)}'"
            )
        else:
            point = (float(match.group(1)), float(match.group(2)))
        if not (math.isfinite(point[0]) and math.isfinite(point[1])):
            raise self.invalid(f"expected finite coordinates, got {echo(str(raw))}")
        return point

    def check_bbox(self, point: Coord) -> None:
        """Raise when the point (in this parameter's projection) is outside the bbox (inclusive)."""
        xmin, ymin, xmax, ymax = self.bbox
        if not xmin <= point[0] <= xmax:
            raise self.invalid(f"x = {point[0]:g} is not in the bbox: expected between {xmin:g} and {xmax:g}")
        if not ymin <= point[1] <= ymax:
            raise self.invalid(f"y = {point[1]:g} is not in the bbox: expected between {ymin:g} and {ymax:g}")

    def capability(self) -> dict[str, Any]:
        return {"id": self.name, "values": {"bbox": ",".join(f"{v:g}" for v in self.bbox), "projection": self.projection}}


@attrs.frozen
class EnumParameter(Parameter):
    """One value (or several, for multi-valued parameters) among ``values``."""

    values: tuple[str, ...] = ()
    default_value: str | None = None

    def parse(self, raw: Any) -> str:
        if not isinstance(raw, str):
            raise self.invalid(f"expected one of {', '.join(self.values)}, got {_dumps(raw)}")
        if raw not in self.values:
            raise self.invalid(f"expected one of {', '.join(self.values)}, got '{echo(raw)}'")
        return raw

    def default(self) -> str | None:
        return self.default_value

    def capability(self) -> dict[str, Any]:
        return _listed(self.name, self.values, self.default_value)


@attrs.frozen
class BoolParameter(Parameter):
    """``true`` or ``false`` (strings in GET, strings or JSON booleans in POST)."""

    default_value: bool | None = None
    values: tuple[bool, ...] = (True, False)

    def parse(self, raw: Any) -> bool:
        if isinstance(raw, bool):
            value = raw
        elif raw in ("true", "false"):
            value = raw == "true"
        else:
            raise self.invalid(f"expected 'true' or 'false', got {echo(raw) if isinstance(raw, str) else _dumps(raw)}")
        if value not in self.values:
            raise self.invalid(f"expected {str(self.values[0]).lower()} on this resource")
        return value

    def default(self) -> bool | None:
        return self.default_value

    def capability(self) -> dict[str, Any]:
        return _listed(self.name, self.values, self.default_value)


@attrs.frozen
class NumberParameter(Parameter):
    """A float or an integer within ``min``..``max`` (inclusive)."""

    integer: bool = False
    min: float | None = None
    max: float | None = None
    default_value: float | None = None

    def parse(self, raw: Any) -> float:
        kind = "an integer" if self.integer else "a number"
        pattern = _INTEGER if self.integer else _FLOAT
        if _is_number(raw) or (isinstance(raw, str) and len(raw) <= MAX_NUMBER_LENGTH and pattern.match(raw.strip())):
            value = float(raw)
        else:
            shown = echo(raw) if isinstance(raw, str) else _dumps(raw)
            raise self.invalid(f"expected {kind} of at most {MAX_NUMBER_LENGTH} characters, got '{shown}'")
        if not math.isfinite(value):
            raise self.invalid(f"expected a finite number, got '{echo(str(raw))}'")
        if self.integer:
            if value != int(value):
                raise self.invalid(f"expected an integer, got {raw}")
            if not INTEGER_MIN <= value <= INTEGER_MAX:
                raise self.invalid(f"expected an integer from {INTEGER_MIN} to {INTEGER_MAX}, got {echo(str(raw))}")
        if self.min is not None and value < self.min:
            raise self.invalid(f"{value:g} is below the minimum {self.min:g}")
        if self.max is not None and value > self.max:
            raise self.invalid(f"{value:g} is above the maximum {self.max:g}")
        return int(value) if self.integer else value

    def default(self) -> float | None:
        if self.default_value is None:
            return None
        return int(self.default_value) if self.integer else self.default_value

    def capability(self) -> dict[str, Any]:
        values = {k: (int(v) if self.integer else v) for k, v in (("min", self.min), ("max", self.max)) if v is not None}
        entry: dict[str, Any] = {"id": self.name, "values": values}
        if self.default_value is not None:
            entry["defaultValue"] = self.default()
        return entry


@attrs.frozen
class StringParameter(Parameter):
    """A string, optionally matching a regular expression."""

    pattern: str | None = None
    default_value: str | None = None

    def parse(self, raw: Any) -> str:
        if not isinstance(raw, str):
            raise self.invalid(f"expected a string, got {_dumps(raw)}")
        if self.pattern is not None and not re.fullmatch(self.pattern, raw):
            raise self.invalid(f"'{echo(raw)}' does not match the pattern {self.pattern}")
        return raw

    def default(self) -> str | None:
        return self.default_value

    def capability(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": self.name, "values": {"pattern": self.pattern} if self.pattern else {}}
        if self.default_value is not None:
            entry["defaultValue"] = self.default_value
        return entry


@attrs.frozen
class ConstraintKey:
    """A constraint key of a resource: its kind, the constraint types and values it allows."""

    key_type: str
    key: str
    types: tuple[str, ...]
    values: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    field: str | None = None
    operators: tuple[str, ...] = ("=",)
    numeric: bool = False

    def capability(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "key": self.key,
            "availableConstraintType": list(self.types),
            "availableOperators": list(self.operators),
        }
        if self.values:
            entry["values"] = list(self.values)
        return entry


@attrs.frozen
class ConstraintParameter(Parameter):
    """Constraints: JSON objects checked against the resource's keys."""

    keys: dict[str, ConstraintKey] = attrs.field(factory=dict)
    prefer_ratio: float = 0.8
    avoid_ratio: float = 1.2
    #: What each source of the resource bans together (``constraint_support.BanSupport``), learnt at build.
    bans: tuple[Any, ...] = attrs.field(default=(), eq=False)

    def parse(self, raw: Any) -> Constraint:
        if isinstance(raw, str):
            try:
                raw = read_json(raw)
            except JsonInputError as exc:
                where = f"{exc.where}: " if exc.path else ""
                raise self.invalid(f"expected a JSON object, got invalid JSON ({where}{exc.detail})") from None
        if not isinstance(raw, dict):
            raise self.invalid("expected a JSON object {constraintType, key, operator, value}")
        ctype, key, op, value = (raw.get(k) for k in ("constraintType", "key", "operator", "value"))
        if not isinstance(key, str) or key.lower() not in self.keys:
            raise self.invalid(f"key: expected one of {', '.join(self.keys) or '(none)'}, got {_dumps(key)}")
        spec = self.keys[key.lower()]
        if ctype not in spec.types:
            raise self.invalid(f"constraintType: expected one of {', '.join(spec.types)} for key '{spec.key}', got {_dumps(ctype)}")
        operators = spec.operators
        if op not in operators:
            raise self.invalid(f"operator: expected one of {', '.join(operators)} for key '{spec.key}', got {_dumps(op)}")
        ratio = raw.get("costRatio")
        if ratio is not None and (not _is_finite(ratio) or not 0 < ratio <= MAX_COST_RATIO):
            raise self.invalid(f"costRatio: expected a positive number of at most {MAX_COST_RATIO:g}, got {_dumps(ratio)}")
        if ctype in ("prefer", "avoid") and ratio is None:
            ratio = self.prefer_ratio if ctype == "prefer" else self.avoid_ratio
        if spec.numeric:
            if not _is_finite(value):
                raise self.invalid(f"value: expected a finite number for key '{spec.key}', got {_dumps(value)}")
            return Constraint(ctype, spec.key, op, value, field=spec.field, ratio=ratio)
        if not isinstance(value, str) or value not in spec.values:
            raise self.invalid(f"value: expected one of {', '.join(spec.values)} for key '{spec.key}', got {_dumps(value)}")
        target = spec.values[value]
        return Constraint(ctype, spec.key, op, value, field=target.get("field"), condition=target.get("condition"), ratio=ratio)

    def capability(self) -> dict[str, Any]:
        return {"id": self.name, "values": {"keys": [k.capability() for k in self.keys.values()]}}


def split_multi(parameter: Parameter, raw: Any) -> list[Any]:
    """The values of a multi-valued parameter: a ``|``-separated string or a JSON array."""
    spec = parameter.spec
    if isinstance(raw, list):
        if not raw:
            raise parameter.invalid("expected at least one value, got an empty array")
        items = raw
    elif isinstance(raw, str):
        # Road2 accepts spaces around each "|" (waysAttributes=name | name).
        items = [item.strip(" ") for item in (_split_pipes(raw) if spec.type == "constraint" else raw.split("|"))]
    elif _is_number(raw) and spec.type in ("float", "integer"):
        items = [raw]
    else:
        raise parameter.invalid(f"expected '|'-separated values or a JSON array, got {_dumps(raw)}")
    if not spec.min <= len(items) <= spec.max:
        raise parameter.invalid(f"expected between {spec.min} and {spec.max} values, got {len(items)}")
    return items


def _split_pipes(text: str) -> list[str]:
    """Split JSON texts on the ``|`` that are outside JSON strings."""
    items, depth, in_string, escape, start = [], 0, False, False, 0
    for i, ch in enumerate(text):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif ch == "|" and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def parse_values(parameter: Parameter, raw: Any) -> list[Any]:
    """Every value of a multi-valued parameter, each validated."""
    return [parameter.parse(item) for item in split_multi(parameter, raw)]


def build_parameter(
    spec: ParameterSpec,
    settings: dict[str, Any],
    derived: Sequence[str] | None,
    where: str,
    problems: list[str],
    key_types: Mapping[str, ConstraintKeyType] | None = None,
) -> Parameter:
    """A resource parameter from its settings in a ``.resource`` file (problems are appended).

    ``key_types``: the constraint key types the resource's sources declare (``Source.constraint_key_types``).
    """
    settings = dict(settings)

    def take(key: str, default: Any = None) -> Any:
        return settings.pop(key, default)

    def bool_of(value: Any, key: str) -> bool | None:
        if value is None or isinstance(value, bool):
            return bool(value) if value is not None else None
        if value in ("true", "false"):
            return bool(value == "true")
        problems.append(f"{where}.{key}: expected a boolean, got {value!r}")
        return None

    param: Parameter
    if spec.type == "point":
        bbox = take("bbox")
        projection = take("projection", "EPSG:4326")
        parsed = (-180.0, -90.0, 180.0, 90.0)
        if bbox is not None:
            try:
                parsed = parse_bbox(bbox)
            except ValueError as exc:
                problems.append(f"{where}.bbox: {exc}")
        if not isinstance(projection, str):
            problems.append(f"{where}.projection: expected a projection id, got {projection!r}")
            projection = "EPSG:4326"
        param = PointParameter(spec, parsed, projection)
    elif spec.type == "enumeration":
        values = take("values", list(derived) if derived else None)
        default = take("default")
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            problems.append(f"{where}.values: expected a non-empty list of strings, got {values!r}")
            values = []
        if default is None and spec.defaulted and values:
            default = values[0]
        if default is not None and default not in values:
            problems.append(f"{where}.default: expected one of {values}, got {default!r}")
        param = EnumParameter(spec, tuple(values), default)
    elif spec.type == "boolean":
        default = bool_of(take("default", True if spec.defaulted else None), "default")
        raw_values = take("values", [True, False])
        values = [bool_of(v, "values") for v in raw_values] if isinstance(raw_values, list) else []
        param = BoolParameter(spec, default, tuple(v for v in values if v is not None) or (True, False))
    elif spec.type in ("float", "integer"):
        numbers = {}
        for key in ("min", "max", "default"):
            value = take(key)
            if value is not None and not _is_number(value):
                problems.append(f"{where}.{key}: expected a number, got {value!r}")
                value = None
            numbers[key] = value
        if numbers["min"] is not None and numbers["max"] is not None and numbers["min"] > numbers["max"]:
            problems.append(f"{where}: expected min <= max, got min {numbers['min']} and max {numbers['max']}")
        param = NumberParameter(spec, spec.type == "integer", numbers["min"], numbers["max"], numbers["default"])
    elif spec.type == "string":
        pattern = take("pattern")
        if pattern is not None:
            try:
                re.compile(pattern)
            except (re.error, TypeError) as exc:
                problems.append(f"{where}.pattern: expected a regular expression, got {pattern!r} ({exc})")
                pattern = None
        param = StringParameter(spec, pattern, take("default"))
    else:
        param = _build_constraints(spec, settings, where, problems, key_types or {})
        settings.clear()
    for key in settings:
        problems.append(f"{where}.{key}: unknown setting for a {spec.type} parameter")
    return param


def _build_constraints(
    spec: ParameterSpec, settings: dict[str, Any], where: str, problems: list[str], key_types: Mapping[str, ConstraintKeyType]
) -> ConstraintParameter:
    raw_keys = settings.get("keys", settings.get("values", []))
    keys: dict[str, ConstraintKey] = {}
    if not isinstance(raw_keys, list):
        problems.append(f"{where}.keys: expected a list of constraint keys, got {raw_keys!r}")
        raw_keys = []
    for i, entry in enumerate(raw_keys):
        at = f"{where}.keys[{i}]"
        if not isinstance(entry, dict):
            problems.append(f"{at}: expected a table")
            continue
        key_type, key = entry.get("keyType"), entry.get("key")
        types = entry.get("availableConstraintType", ["banned"])
        if not isinstance(key_type, str) or key_type not in key_types:
            problems.append(
                f"{at}.keyType: expected one of {', '.join(key_types) or '(none)'} (the key types the resource's "
                f"sources handle), got {key_type!r}"
            )
            continue
        declared = key_types[key_type]
        if not isinstance(key, str) or not key:
            problems.append(f"{at}.key: expected a non-empty string, got {key!r}")
            continue
        if not isinstance(types, list) or not types or not set(types) <= {"banned", "prefer", "avoid"}:
            problems.append(f"{at}.availableConstraintType: expected a list among banned, prefer, avoid, got {types!r}")
            continue
        values: dict[str, dict[str, Any]] = {}
        for j, value in enumerate(entry.get("availableValues", [])):
            if not isinstance(value, dict) or not isinstance(value.get("value"), str):
                problems.append(f"{at}.availableValues[{j}]: expected a table with a string value and a field")
                continue
            values[value["value"]] = value
        if not declared.numeric and not values:
            problems.append(f"{at}.availableValues: expected a non-empty list of values")
        if declared.numeric and not isinstance(entry.get("field"), str):
            problems.append(f"{at}.field: expected the name of the field the number applies to, got {entry.get('field')!r}")
        keys[key.lower()] = ConstraintKey(
            key_type, key.lower(), tuple(types), values, entry.get("field"), declared.operators, declared.numeric
        )
    ratios = {}
    for key, default in (("defaultPreferredCostRatio", 0.8), ("defaultAvoidCostRatio", 1.2)):
        value = settings.get(key, default)
        if not _is_finite(value) or not 0 < value <= MAX_COST_RATIO:
            problems.append(f"{where}.{key}: expected a positive number of at most {MAX_COST_RATIO:g}, got {value!r}")
            value = default
        ratios[key] = float(value)
    return ConstraintParameter(spec, keys, ratios["defaultPreferredCostRatio"], ratios["defaultAvoidCostRatio"])
