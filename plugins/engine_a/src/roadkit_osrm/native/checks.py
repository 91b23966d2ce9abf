"""osrm-routed's checks between parsing and the engine: option consistency (the limits are ``NativeLimits.exceeded``)."""

from __future__ import annotations

from typing import Any

_MISMATCH = "Number of elements in {} size {} does not match coordinate size {}"
_TOO_FEW = "Number of coordinates needs to be at least two."


def _mismatch(params: dict[str, Any], name: str, size: int) -> str | None:
    values = params.get(name) or []
    if values and len(values) != size:
        return _MISMATCH.format(name, len(values), size)
    return None


def wrong_option_help(service: str, params: dict[str, Any]) -> str:
    """The message of osrm-routed's ``InvalidOptions`` answer (its ``getWrongOptionHelp``)."""
    size = len(params["coordinates"])
    if service == "nearest":
        help_text = ""  # every check runs: the last mismatch wins
        for name in ("hints", "bearings", "radiuses", "approaches"):
            help_text = _mismatch(params, name, size) or help_text
        return help_text
    names = ("hints", "bearings", "radiuses", "timestamps") if service == "match" else ("hints", "bearings", "radiuses", "approaches")
    help_text = ""
    for name in names:
        found = _mismatch(params, name, size)
        if found:
            help_text = found
            break
    else:
        if size < 2:
            help_text = _TOO_FEW
    if service == "table":
        if params.get("fallback_speed", 1.0) <= 0:
            help_text = "fallback_speed must be > 0"
        if params.get("scale_factor", 1.0) <= 0:
            help_text = "scale_factor must be > 0"
    return help_text
