"""The JSON body of a POST request (osrm-routed 26: route, match, table, nearest), read as osrm-routed reads it.

``parse_body(service, body)`` returns the same options as :func:`roadkit_osrm.native.query.parse_query`
(keys named as in osrm-bindings), or raises :class:`BodyError` with osrm-routed's ``InvalidQuery`` message.
"""

from __future__ import annotations

import math
from typing import Any

from roadkit_osrm.native.jsonreader import JsonSyntaxError, read_json
from roadkit_osrm.native.query import BASE64_CHARS, HINT_SIZE, decode_polyline

#: services osrm-routed answers by POST (the others answer NotImplemented)
POST_SERVICES = ("route", "nearest", "table", "match")
_ANNOTATIONS = ("duration", "nodes", "distance", "weight", "datasources", "speed")


class BodyError(Exception):
    """The body is not a valid request: osrm-routed's message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _is_int(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value < high


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _in_fixed_range(value: float) -> bool:
    scaled = float(value) * 1_000_000
    return -2147483648.5 < scaled < 2147483647.5


def _coordinates(value: Any) -> list[tuple[float, float]]:
    if isinstance(value, str):
        for prefix, precision in (("polyline6(", 1_000_000), ("polyline(", 100_000)):
            if len(value) >= len(prefix) + 1 and value.startswith(prefix) and value.endswith(")"):
                return decode_polyline(value[len(prefix) : -1], precision)
        raise BodyError("coordinates string must be of the form polyline(...) or polyline6(...)")
    if not isinstance(value, list):
        raise BodyError("coordinates must be an array of [longitude, latitude] pairs")
    coordinates = []
    for element in value:
        if not (isinstance(element, list) and len(element) == 2 and _is_number(element[0]) and _is_number(element[1])):
            raise BodyError("each coordinate must be an array of two numbers [longitude, latitude]")
        if not (_in_fixed_range(element[0]) and _in_fixed_range(element[1])):
            raise BodyError("coordinate value out of range")
        coordinates.append((float(element[0]), float(element[1])))
    return coordinates


def _base(doc: Any, params: dict[str, Any]) -> None:
    if not isinstance(doc, dict):
        raise BodyError("request body must be a JSON object")
    if "coordinates" not in doc:
        raise BodyError("missing required member: coordinates")
    params["coordinates"] = _coordinates(doc["coordinates"])
    if "bearings" in doc:
        if not isinstance(doc["bearings"], list):
            raise BodyError("bearings must be an array")
        bearings: list[tuple[int, int] | None] = []
        for b in doc["bearings"]:
            if b is None:
                bearings.append(None)
            elif isinstance(b, list) and len(b) == 2 and all(_is_int(v, -(1 << 31), 1 << 31) for v in b):
                if not all(-32768 <= v <= 32767 for v in b):
                    raise BodyError("each bearing value must fit in a 16-bit integer")
                bearings.append((b[0], b[1]))
            else:
                raise BodyError("each bearing must be null or an array of two integers")
        params["bearings"] = bearings
    if "radiuses" in doc:
        if not isinstance(doc["radiuses"], list):
            raise BodyError("radiuses must be an array")
        radiuses: list[float | None] = []
        for r in doc["radiuses"]:
            if r is None:
                radiuses.append(None)
            elif _is_number(r):
                radiuses.append(float(r))
            elif r == "unlimited":
                radiuses.append(math.inf)
            else:
                raise BodyError('each radius must be null, a number or "unlimited"')
        params["radiuses"] = radiuses
    if "hints" in doc:
        if not isinstance(doc["hints"], list):
            raise BodyError("hints must be an array")
        hints: list[str | None] = []
        for h in doc["hints"]:
            if h is None or h == "":
                hints.append(None)
            elif not isinstance(h, str):
                raise BodyError("each hint must be null or a base64 string")
            else:
                # osrm-routed decodes any string; one that is no hint of this dataset is ignored, as no hint is
                hints.append(h if len(h) % HINT_SIZE == 0 and all(c in BASE64_CHARS for c in h) else None)
        params["hints"] = hints
    if "approaches" in doc:
        if not isinstance(doc["approaches"], list):
            raise BodyError("approaches must be an array")
        approaches: list[str | None] = []
        for a in doc["approaches"]:
            if a is None:
                approaches.append(None)
            elif not isinstance(a, str):
                raise BodyError("each approach must be null or a string")
            elif a not in ("unrestricted", "curb", "opposite"):
                raise BodyError("invalid approach value")
            else:
                approaches.append(a)
        params["approaches"] = approaches
    if "exclude" in doc:
        if not isinstance(doc["exclude"], list):
            raise BodyError("exclude must be an array of strings")
        if not all(isinstance(e, str) for e in doc["exclude"]):
            raise BodyError("each exclude entry must be a string")
        params["exclude"] = list(doc["exclude"])
    for name in ("generate_hints", "skip_waypoints"):
        if name in doc:
            if type(doc[name]) is not bool:
                raise BodyError(f"{name} must be a boolean")
            params[name] = doc[name]
    _choice(doc, params, "snapping", ("default", "any"))
    _choice(doc, params, "format", ("json", "flatbuffers"))


def _choice(doc: dict[str, Any], params: dict[str, Any], name: str, values: tuple[str, ...], key: str | None = None) -> None:
    if name in doc:
        if not isinstance(doc[name], str):
            raise BodyError(f"{name} must be a string")
        if doc[name] not in values:
            raise BodyError(f"invalid {name} value")
        params[key or name] = doc[name]


def _indices(doc: dict[str, Any], params: dict[str, Any], name: str) -> None:
    if name in doc:
        if not isinstance(doc[name], list):
            raise BodyError(f"{name} must be an array of indices")
        if not all(_is_int(v, 0, 1 << 64) for v in doc[name]):
            raise BodyError(f"{name} entries must be non-negative integers")
        params[name] = list(doc[name])


def _route(doc: Any, params: dict[str, Any]) -> None:
    _base(doc, params)
    if "steps" in doc:
        if type(doc["steps"]) is not bool:
            raise BodyError("steps must be a boolean")
        params["steps"] = doc["steps"]
    if "alternatives" in doc:
        value = doc["alternatives"]
        if type(value) is bool:
            params["number_of_alternatives"], params["alternatives"] = int(value), value
        elif _is_int(value, 0, 1 << 32):
            params["number_of_alternatives"], params["alternatives"] = value, value > 0
        else:
            raise BodyError("alternatives must be a boolean or a non-negative integer")
    if "continue_straight" in doc:
        value = doc["continue_straight"]
        if type(value) is bool:
            params["continue_straight"] = value
        elif value != "default":
            raise BodyError('continue_straight must be a boolean or "default"')
    _choice(doc, params, "geometries", ("polyline", "polyline6", "geojson"))
    _choice(doc, params, "overview", ("simplified", "full", "false", "by_legs"))
    if "annotations" in doc:
        value = doc["annotations"]
        if type(value) is bool:
            params["annotations"] = ["all" if value else "none"]
        elif isinstance(value, list):
            if not all(isinstance(a, str) for a in value):
                raise BodyError("annotation entries must be strings")
            if any(a not in _ANNOTATIONS for a in value):
                raise BodyError("invalid annotation value")
            params["annotations"] = list(dict.fromkeys(value)) or ["none"]
        else:
            raise BodyError("annotations must be a boolean or an array of strings")
    _indices(doc, params, "waypoints")


def _match(doc: Any, params: dict[str, Any]) -> None:
    _route(doc, params)
    if "timestamps" in doc:
        if not isinstance(doc["timestamps"], list):
            raise BodyError("timestamps must be an array of integers")
        if not all(_is_int(t, 0, 1 << 32) for t in doc["timestamps"]):
            raise BodyError("timestamps entries must be non-negative integers")
        params["timestamps"] = list(doc["timestamps"])
    _choice(doc, params, "gaps", ("split", "ignore"))
    if "tidy" in doc:
        if type(doc["tidy"]) is not bool:
            raise BodyError("tidy must be a boolean")
        params["tidy"] = doc["tidy"]


def _table(doc: Any, params: dict[str, Any]) -> None:
    _base(doc, params)
    _indices(doc, params, "sources")
    _indices(doc, params, "destinations")
    if "annotations" in doc:
        value = doc["annotations"]
        if type(value) is bool:
            params["annotations"] = ["duration", "distance"] if value else ["none"]
        elif isinstance(value, list):
            if not all(isinstance(a, str) for a in value):
                raise BodyError("annotation entries must be strings")
            if any(a not in ("duration", "distance") for a in value):
                raise BodyError("invalid annotation value")
            params["annotations"] = list(dict.fromkeys(value)) or ["none"]
        else:
            raise BodyError("annotations must be a boolean or an array of strings")
    for name in ("fallback_speed", "scale_factor"):
        if name in doc:
            if not _is_number(doc[name]):
                raise BodyError(f"{name} must be a number")
            params[name] = float(doc[name])
    _choice(doc, params, "fallback_coordinate", ("input", "snapped"), "fallback_coordinate_type")


def _nearest(doc: Any, params: dict[str, Any]) -> None:
    _base(doc, params)
    if "number" in doc:
        if not _is_int(doc["number"], 0, 1 << 32):
            raise BodyError("number must be a non-negative integer")
        params["number_of_results"] = doc["number"]


_PARSERS = {"route": _route, "match": _match, "table": _table, "nearest": _nearest}


def parse_body(service: str, body: bytes) -> dict[str, Any]:
    """The options of a POST body for ``service`` (one of :data:`POST_SERVICES`)."""
    try:
        doc = read_json(body)
    except JsonSyntaxError as exc:
        raise BodyError(f"invalid JSON: {exc}") from None
    params: dict[str, Any] = {}
    _PARSERS[service](doc, params)
    return params
