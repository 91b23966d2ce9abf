"""osrm-routed's checks between parsing and the engine: option consistency, then request limits."""

from __future__ import annotations

from typing import Any

from roadkit_osrm.native.contract import NativeLimits

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


def check_limits(service: str, params: dict[str, Any], limits: NativeLimits) -> tuple[str, str] | None:
    """``(code, message)`` when the request exceeds a limit, as osrm-routed's engine words it."""
    n = len(params["coordinates"])
    if service == "route":
        if 0 < limits.max_viaroute_size < n:
            return "TooBig", f"Number of entries {n} is higher than current maximum ({limits.max_viaroute_size})"
        if limits.max_alternatives >= 0 and params.get("number_of_alternatives", 0) > limits.max_alternatives:
            return "TooBig", f"Requested number of alternatives is higher than current maximum ({limits.max_alternatives})"
    elif service == "table":
        if not all(valid_coordinate(lon, lat) for lon, lat in params["coordinates"]):
            return "InvalidOptions", "Coordinates are invalid"
        sources = len(params.get("sources") or ()) or n
        destinations = len(params.get("destinations") or ()) or n
        if limits.max_table_size > 0 and sources * destinations > limits.max_table_size**2:
            return "TooBig", "Too many table coordinates"
    elif service == "trip":
        # a one-way trip needs a fixed start or end (osrm-routed checks this first)
        if not params.get("roundtrip", True) and params.get("source") != "first" and params.get("destination") != "last":
            return "NotImplemented", "This request is not supported"
        if 0 < limits.max_trip_size < n:
            return "TooBig", "Too many trip coordinates"
    elif service == "match":
        if 0 < limits.max_matching_size < n:
            return "TooBig", "Too many trace coordinates"
        if limits.max_matching_radius > 0 and any(r is not None and r > limits.max_matching_radius for r in params.get("radiuses") or ()):
            return "TooBig", "Radius search size is too large for map matching."
    elif service == "nearest":
        # osrm-routed's order: results, then coordinates' validity, then their number
        number = params.get("number_of_results", 1)
        if 0 < limits.max_nearest_size < number:
            return "TooBig", f"Number of results {number} is higher than current maximum ({limits.max_nearest_size})"
        if not all(valid_coordinate(lon, lat) for lon, lat in params["coordinates"]):
            return "InvalidOptions", "Coordinates are invalid"
        if 0 < limits.max_nearest_locations < n:
            return "TooBig", f"Number of coordinates {n} is higher than current maximum ({limits.max_nearest_locations})"
    return None


def valid_coordinate(lon: float, lat: float) -> bool:
    """OSRM's ``Coordinate::IsValid`` on its fixed-point values."""
    x, y = _fixed(lon), _fixed(lat)
    return -180_000_000 <= x <= 180_000_000 and -90_000_000 <= y <= 90_000_000


def _fixed(value: float) -> int:
    # std::lround: halves away from zero
    scaled = value * 1_000_000
    return int(scaled + 0.5) if scaled >= 0 else -int(-scaled + 0.5)
