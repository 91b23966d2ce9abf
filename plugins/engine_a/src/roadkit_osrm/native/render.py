"""osrm-bindings' answers rendered as osrm-routed renders them (numbers with 10 significant digits).

The binding hands back its own ``Object``/``Array`` wrappers, not JSON text; each item access copies
the part below it, so every part is read exactly once while rendering.
"""

from __future__ import annotations

from typing import Any

import orjson


def number(value: float) -> str:
    """A number as osrm-routed writes it (``{:.10g}``)."""
    return f"{value:.10g}"


def _string(value: str) -> str:
    return orjson.dumps(value).decode()


def render(value: Any) -> str:
    """The JSON text of a binding answer."""
    import osrm

    kind = type(value)
    if kind is float:
        return f"{value:.10g}"
    if kind is str:
        return _string(value)
    if kind is osrm.Object:
        return "{" + ",".join(f"{_string(key)}:{render(value[key])}" for key in value) + "}"
    if kind is osrm.Array:
        items = list(value)
        if all(type(item) is float for item in items):
            return "[" + ",".join([f"{item:.10g}" for item in items]) + "]"
        return "[" + ",".join([render(item) for item in items]) + "]"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if kind is int:
        return str(value)
    raise TypeError(f"unexpected value in an OSRM answer: {kind.__name__}")


def error_body(code: str, message: str) -> bytes:
    """An osrm-routed error body (its members in osrm-routed's order)."""
    return orjson.dumps({"message": message, "code": code})
