"""Time and distance units of the simple API; engines always speak seconds and meters."""

from __future__ import annotations

from roadkit.errors import ParameterInvalid

TIME_UNITS = ("hour", "minute", "second", "standard")
DISTANCE_UNITS = ("meter", "kilometer")
_SECONDS = {"hour": 3600.0, "minute": 60.0, "second": 1.0}
_METERS = {"meter": 1.0, "kilometer": 1000.0}


def format_standard(seconds: float) -> str:
    """Seconds as ``HH:MM:SS`` with fractional seconds kept to one decimal (``00:05:03.2``)."""
    seconds = round(seconds, 1)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    secs = round(secs, 1)
    text = f"{int(secs):02d}" if secs == int(secs) else f"{secs:04.1f}"
    return f"{int(hours):02d}:{int(minutes):02d}:{text}"


def seconds_to(unit: str, seconds: float) -> float | str:
    """A duration in seconds written in ``unit``."""
    if unit == "standard":
        return format_standard(seconds)
    return seconds / _SECONDS[unit]


def meters_to(unit: str, meters: float) -> float:
    """A distance in meters written in ``unit``."""
    return meters / _METERS[unit]


def to_seconds(unit: str, value: float, *, parameter: str = "costValue") -> float:
    """A user time value in ``unit`` converted to seconds (``standard`` counts as seconds)."""
    if unit == "standard":
        return value
    try:
        return value * _SECONDS[unit]
    except KeyError:
        raise ParameterInvalid(parameter, f"unknown time unit {unit!r}") from None


def to_meters(unit: str, value: float, *, parameter: str = "costValue") -> float:
    """A user distance value in ``unit`` converted to meters."""
    try:
        return value * _METERS[unit]
    except KeyError:
        raise ParameterInvalid(parameter, f"unknown distance unit {unit!r}") from None
