"""osrm-bindings' answers rendered as osrm-routed renders them (numbers with 10 significant digits).

The binding hands back its own ``Object``/``Array`` wrappers, not JSON text (nor a way to get it);
each item access copies the part below it, so every part is read exactly once while rendering.
Rendering is the larger part of a native request's cost: the code below is written for speed.
"""

from __future__ import annotations

from typing import Any

import orjson

_number = "{:.10g}".format
_keys: dict[str, str] = {}
_types: tuple[type, type] | None = None


def _string(value: str) -> str:
    return orjson.dumps(value).decode()


def _key(key: str) -> str:
    found = _keys.get(key)
    if found is None:
        found = _keys[key] = orjson.dumps(key).decode() + ":"
    return found


def _render(value: Any, object_type: type, array_type: type) -> str:
    kind = type(value)
    if kind is float:
        return _number(value)
    if kind is str:
        return orjson.dumps(value).decode()
    if kind is object_type:
        return "{" + ",".join([_key(key) + _render(value[key], object_type, array_type) for key in value]) + "}"
    if kind is array_type:
        items = list(value)
        if items and type(items[0]) is float:  # OSRM's arrays are homogeneous; arrays of numbers are the bulk
            try:
                return "[" + ",".join(map(_number, items)) + "]"
            except (TypeError, ValueError):
                pass
        return "[" + ",".join([_render(item, object_type, array_type) for item in items]) + "]"
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if kind is int:
        return str(value)
    raise TypeError(f"unexpected value in an OSRM answer: {kind.__name__}")


def render(value: Any) -> str:
    """The JSON text of a binding answer."""
    global _types
    if _types is None:
        import osrm

        _types = (osrm.Object, osrm.Array)
    return _render(value, *_types)


def error_body(code: str, message: str) -> bytes:
    """An osrm-routed error body (its members in osrm-routed's order)."""
    return orjson.dumps({"message": message, "code": code})
