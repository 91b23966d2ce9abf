"""A route definition (the body of ``POST {apiURI}/routes``) read and checked against what the resource offers."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

import attrs

from roadkit.apis.ogcapi_routes.offer import MAX_OBSTACLES, MAX_RING, MAX_WAYPOINTS, Offer
from roadkit.errors import BadRequest, ParameterInvalid, ParameterMissing, RoadkitError
from roadkit.routing.model import Coord

MAX_NAME = 200
#: No control character nor space: explicit code points, as Python's ``\s`` and ECMA's (the schema's) differ.
CALLBACK = r"^https?://[^\x00-\x20\x7f]+$"
#: A date-time in UTC, as RFC 3339 writes it (the time class asks for time zone "Z").
TIMESTAMP = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"


@attrs.frozen
class Definition:
    """A valid route definition."""

    waypoints: tuple[Coord, ...]
    preference: str
    mode: str
    name: str | None
    #: The time of ``when``, in UTC (the time class): the departure, or the arrival when ``arrival``.
    departure: datetime | None
    #: ``successUri``/``failedUri`` called when an asynchronous route is done.
    subscriber: dict[str, str] = attrs.field(factory=dict)
    #: The obstacles' outer rings (longitude, latitude).
    obstacles: tuple[tuple[Coord, ...], ...] = ()
    #: The vehicle's height in metres and weight in tonnes (the height and weight classes).
    height: float | None = None
    weight: float | None = None
    #: Whether the route must arrive at ``departure`` rather than leave then.
    arrival: bool = False


class NotRoutable(RoadkitError):
    """A valid request the resource can't route (a waypoint outside its area or off its network, no path)."""

    status = 422
    code = "not_routable"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ParameterInvalid(where, "expected a JSON object")
    return value


def _waypoints(inputs: dict[str, Any]) -> tuple[Coord, ...]:
    if "waypoints" not in inputs:
        raise ParameterMissing("inputs.waypoints")
    wrapper = _object(inputs["waypoints"], "inputs.waypoints")
    if "value" not in wrapper:
        raise ParameterMissing("inputs.waypoints.value")
    value = _object(wrapper["value"], "inputs.waypoints.value")
    if value.get("type") != "MultiPoint":
        raise ParameterInvalid("inputs.waypoints.value.type", "expected 'MultiPoint'")
    coordinates = value.get("coordinates")
    if not isinstance(coordinates, list) or not 2 <= len(coordinates) <= MAX_WAYPOINTS:
        raise ParameterInvalid("inputs.waypoints.value.coordinates", f"expected an array of 2 to {MAX_WAYPOINTS} positions")
    points = []
    for index, position in enumerate(coordinates):
        if not isinstance(position, list) or not 2 <= len(position) <= 3 or not all(_number(v) for v in position):
            raise ParameterInvalid(f"inputs.waypoints.value.coordinates[{index}]", "expected a position [longitude, latitude] of numbers")
        lon, lat = float(position[0]), float(position[1])
        if not (-180 <= lon <= 180 and -180 <= lat <= 180):
            # A latitude beyond 90 (and up to 180) is outside every resource's area: a 422 (compute.py).
            raise ParameterInvalid(
                f"inputs.waypoints.value.coordinates[{index}]", "expected numbers from -180 to 180 (longitude, latitude)"
            )
        points.append((lon, lat))
    return tuple(points)


def _choice(inputs: dict[str, Any], key: str, values: tuple[str, ...]) -> str:
    raw = inputs.get(key, values[0])
    if not isinstance(raw, str) or raw not in values:
        raise ParameterInvalid(f"inputs.{key}", f"expected one of {', '.join(values)}")
    return raw


def _departure(raw: Any, where: str) -> tuple[datetime, bool]:
    """The moment of a ``when`` member, in UTC, and whether it is the arrival's."""
    wrapper = _object(raw, where)
    if "value" not in wrapper:
        raise ParameterMissing(f"{where}.value")
    value = _object(wrapper["value"], f"{where}.value")
    timestamp = value.get("timestamp")
    if not isinstance(timestamp, str):
        raise ParameterMissing(f"{where}.value.timestamp")
    expected = "expected an RFC 3339 date-time in UTC (time zone Z), e.g. 2026-06-01T08:00:00Z"
    if not re.match(TIMESTAMP, timestamp):
        raise ParameterInvalid(f"{where}.value.timestamp", expected)
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        raise ParameterInvalid(f"{where}.value.timestamp", expected) from None
    kind = value.get("type", "departure")
    if kind not in ("departure", "arrival"):
        raise ParameterInvalid(f"{where}.value.type", "expected 'departure' or 'arrival'")
    return moment.astimezone(UTC), kind == "arrival"


def _known(members: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in members:
        if key in allowed:
            continue
        if key in ("height", "weight", "obstacles", "when"):
            raise ParameterInvalid(f"{where}{key}", "not supported on this resource (its conformance declaration lists what it does)")
        raise ParameterInvalid(f"{where}{key[:100]}", f"unknown member: expected one of {', '.join(allowed)}")


def _subscriber(raw: Any) -> dict[str, str]:
    subscriber = _object(raw, "subscriber")
    for key, url in subscriber.items():
        if key not in ("successUri", "failedUri"):
            raise ParameterInvalid(f"subscriber.{key[:100]}", "unknown member: expected successUri or failedUri")
        if not isinstance(url, str) or not re.fullmatch(CALLBACK, url):
            raise ParameterInvalid(f"subscriber.{key}", "expected an http:// or https:// URL")
    return subscriber


def read_definition(body: Any, offer: Offer) -> Definition:
    """The definition of ``body``; a 400 naming the member (a JSON pointer's path) and what was expected."""
    if not isinstance(body, dict):
        raise BadRequest("Invalid request body: expected a JSON object with 'inputs'", code="invalid_body")
    limits = offer.vehicle_limits
    timed = (*limits, *(("obstacles",) if offer.obstacles else ()), *(("when",) if offer.time else ()))
    _known(body, ("inputs", "name", "subscriber", *timed), "")
    if "inputs" not in body:
        raise ParameterMissing("inputs")
    inputs = dict(_object(body["inputs"], "inputs"))
    _known(inputs, ("waypoints", "preference", "mode", "name", *timed), "inputs.")
    waypoints = _waypoints(inputs)
    preference = _choice(inputs, "preference", offer.preferences)
    mode = _choice(inputs, "mode", offer.modes)
    # A member beside "inputs" is checked as one inside it; the one inside wins when both are given.
    names = [_name(holder["name"], where) for holder, where in ((inputs, "inputs.name"), (body, "name")) if "name" in holder]
    departures = [_departure(holder["when"], where) for holder, where in ((inputs, "inputs.when"), (body, "when")) if "when" in holder]
    obstacles = [
        _obstacles(holder["obstacles"], where)
        for holder, where in ((inputs, "inputs.obstacles"), (body, "obstacles"))
        if "obstacles" in holder
    ]
    vehicle: dict[str, float] = {}
    for key in limits:
        for holder, where in ((inputs, f"inputs.{key}"), (body, key)):
            if key in holder:
                vehicle.setdefault(key, _dimension(holder[key], where, limits[key]))
    subscriber = _subscriber(body["subscriber"]) if "subscriber" in body else {}
    if (mode, preference) not in offer.resource.route_index:
        raise NotRoutable(f"mode '{mode}' has no preference '{preference}' on this resource")
    return Definition(
        waypoints,
        preference,
        mode,
        next(iter(names), None),
        next(iter(departures), (None, False))[0],
        subscriber,
        next(iter(obstacles), ()),
        vehicle.get("height"),
        vehicle.get("weight"),
        arrival=next(iter(departures), (None, False))[1],
    )


def _obstacles(raw: Any, where: str) -> tuple[tuple[Coord, ...], ...]:
    """A MultiPolygon, in its ``value`` wrapper or not: each polygon's outer ring (holes are avoided too)."""
    value = _object(raw, where)
    if "value" in value:
        where, value = f"{where}.value", _object(value["value"], f"{where}.value")
    if value.get("type") != "MultiPolygon":
        raise ParameterInvalid(f"{where}.type", "expected 'MultiPolygon'")
    polygons = value.get("coordinates")
    if not isinstance(polygons, list) or not 1 <= len(polygons) <= MAX_OBSTACLES:
        raise ParameterInvalid(f"{where}.coordinates", f"expected an array of 1 to {MAX_OBSTACLES} polygons")
    outer = []
    for index, polygon in enumerate(polygons):
        if not isinstance(polygon, list) or not 1 <= len(polygon) <= MAX_OBSTACLES:
            raise ParameterInvalid(f"{where}.coordinates[{index}]", f"expected a polygon: an array of 1 to {MAX_OBSTACLES} linear rings")
        for number, ring in enumerate(polygon):
            if (
                not isinstance(ring, list)
                or not 4 <= len(ring) <= MAX_RING
                or not all(isinstance(p, list) and 2 <= len(p) <= 3 and all(_number(v) and -180 <= v <= 180 for v in p) for p in ring)
            ):
                raise ParameterInvalid(
                    f"{where}.coordinates[{index}][{number}]", f"expected a linear ring of 4 to {MAX_RING} positions [longitude, latitude]"
                )
        # The outer ring (closed when its last position is not its first): the holes are avoided too.
        outer.append(tuple((float(p[0]), float(p[1])) for p in [*polygon[0], polygon[0][0]]))
    return tuple(outer)


def _dimension(raw: Any, where: str, most: float) -> float:
    """A vehicle's height (metres) or weight (tonnes): no larger than the engine reads, so that none is cut down unsaid."""
    unit = "metres" if where.endswith("height") else "tonnes"
    if not _number(raw) or not 0 <= raw <= most:
        raise ParameterInvalid(where, f"expected a number of {unit} from 0 to {most:g}")
    return float(raw)


def _name(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or len(raw) > MAX_NAME:
        raise ParameterInvalid(where, f"expected a string of at most {MAX_NAME} characters")
    return raw
