"""Native OSRM requests (route, nearest) answered by Valhalla, in Valhalla's own OSRM-format output.

The OSRM plugin's native API (``osrm/1.0.0``) parses the URL as osrm-routed does and hands the parsed
options here (``request.params``, keys named as in osrm-bindings). Routes go to Valhalla with
``directions_options.format = "osrm"``; nearest points come from ``locate``, shaped like OSRM's
``nearest`` waypoints. The request and answer types are core's native OSRM protocol
(:mod:`roadkit.contract.native_osrm`), so this plugin does not depend on the OSRM plugin.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from roadkit.contract.native_osrm import NativeAnswer
from roadkit.contract.sources import RoadkitError
from roadkit_valhalla import translate
from roadkit_valhalla.options import ValhallaCost

SERVICES = ("route", "nearest")
_SHAPES = {"polyline": "polyline5", "polyline6": "polyline6", "geojson": "geojson"}
_SIDES = {"curb": "same", "opposite": "opposite", "unrestricted": "either"}
_MISMATCH = "Number of elements in {} size {} does not match coordinate size {}"


def error(code: str, message: str, status: int = 400) -> NativeAnswer:
    """An answer in osrm-routed's error shape."""
    return NativeAnswer(status, orjson.dumps({"message": message, "code": code}))


def check_options(service: str, params: dict[str, Any]) -> NativeAnswer | None:
    """osrm-routed's option checks (sizes, bearings, at least two points for a route)."""
    if params.get("overview") == "by_legs":
        return error("InvalidOptions", "overview=by_legs is not available on this service")
    size = len(params["coordinates"])
    for name in ("hints", "bearings", "radiuses", "approaches"):
        values = params.get(name) or []
        if values and len(values) != size:
            return error("InvalidOptions", _MISMATCH.format(name, len(values), size))
    for bearing in params.get("bearings") or []:
        if bearing is not None and not (0 <= bearing[0] <= 360 and 0 <= bearing[1] <= 180):
            return error("InvalidOptions", "")
    if service == "nearest" and size == 0:  # a POST body may hold none (a URL always holds one): osrm-routed's answer
        return error("InvalidOptions", "Coordinates are invalid")
    if service == "route" and size < 2:
        return error("InvalidOptions", "Number of coordinates needs to be at least two.")
    # osrm-routed's parameters' IsValid(): waypoints index the coordinates, nearest asks for one point at least
    if service == "route" and any(index >= size for index in params.get("waypoints") or ()):
        return error("InvalidOptions", "")
    if service == "nearest" and params.get("number_of_results", 1) < 1:
        return error("InvalidOptions", "")
    for lon, lat in params["coordinates"]:
        if not (-180 <= lon <= 180 and -90 <= lat <= 90):
            return error("InvalidValue", "Invalid coordinate value.")
    return None


def plugin_refusal(service: str, params: dict[str, Any]) -> NativeAnswer | None:
    """What osrm-routed's plugins refuse once the limits pass: waypoints that leave out the first or the
    last coordinate, and exclude classes its profile does not declare (Valhalla has none: it ignores a
    class, but refuses a name that can't be one, such as a POST body's empty string)."""
    waypoints = params.get("waypoints")
    if service == "route" and waypoints and (waypoints[0] != 0 or waypoints[-1] != len(params["coordinates"]) - 1):
        return error("InvalidValue", "First and last coordinates must be specified as waypoints.")
    if any(not (name.isascii() and name.isalnum()) for name in params.get("exclude") or ()):
        return error("InvalidValue", "Exclude flag combination is not supported.")
    return None


def outside(coordinates: list[tuple[float, float]], box: tuple[float, float, float, float] | None, source_id: str) -> NativeAnswer | None:
    """osrm-routed's NoSegment for the first coordinate outside ``box`` (the source's bbox; None: anywhere)."""
    if box is None:
        return None
    for i, (lon, lat) in enumerate(coordinates):
        if not (box[0] <= lon <= box[2] and box[1] <= lat <= box[3]):
            area = ",".join(f"{v:g}" for v in box)
            return error(
                "NoSegment",
                f"Could not find a matching segment for coordinate {i}: {lon},{lat} is outside {area}, the area of source {source_id}",
            )
    return None


def route_body(params: dict[str, Any], cost: ValhallaCost) -> dict[str, Any]:
    """A Valhalla ``route`` body asking for OSRM-format output."""
    coordinates = params["coordinates"]
    waypoints = set(params.get("waypoints") or range(len(coordinates)))
    locations: list[dict[str, Any]] = []
    for i, (lon, lat) in enumerate(coordinates):
        location: dict[str, Any] = {"lon": lon, "lat": lat}
        if i not in waypoints:
            location["type"] = "through"
        radiuses = params.get("radiuses") or []
        if i < len(radiuses) and radiuses[i] is not None and math.isfinite(radiuses[i]):
            location["radius"] = max(0, int(radiuses[i]))
        bearings = params.get("bearings") or []
        if i < len(bearings) and bearings[i] is not None:
            location["heading"], location["heading_tolerance"] = bearings[i]
        approaches = params.get("approaches") or []
        if i < len(approaches) and approaches[i] is not None:
            location["preferred_side"] = _SIDES[approaches[i]]
        locations.append(location)
    body: dict[str, Any] = {
        "locations": locations,
        "costing": cost.costing,
        "costing_options": translate.costing_options(cost, []),
        "directions_options": {"format": "osrm", "units": "kilometers"},
        "shape_format": _SHAPES[params.get("geometries", "polyline")],
    }
    if params.get("number_of_alternatives"):
        body["alternates"] = params["number_of_alternatives"]
    return body


def shape_route(answer: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """Valhalla's OSRM-format answer adjusted to the OSRM options it has no switch for."""
    answer.setdefault("code", "Ok")
    for route in answer.get("routes", []):
        if params.get("overview") == "false":
            route.pop("geometry", None)
        if not params.get("steps", False):
            for leg in route.get("legs", []):
                leg["steps"] = []
    if params.get("skip_waypoints"):
        answer.pop("waypoints", None)
    return answer


def nearest_waypoints(answer: Any, point: tuple[float, float], number: int) -> list[dict[str, Any]]:
    """OSRM ``nearest`` waypoints from a Valhalla ``locate`` answer: nearest first."""
    response = translate.nearest_response(answer, point, number)
    return [{"location": [p.point[0], p.point[1]], "name": "", "distance": p.distance} for p in response.points]


def engine_error(exc: RoadkitError) -> NativeAnswer:
    """A Valhalla failure under osrm-routed's codes."""
    text = exc.message
    lowered = text.lower()
    if "no suitable edges" in lowered or "no graph point" in lowered:
        return error("NoSegment", text)
    if exc.code == "no_path":
        return error("NoRoute", text)
    if "max locations" in lowered:  # a valhalla-http source without limits.max_locations, or set above its servers'
        return error("TooBig", text)
    if exc.status >= 500:
        return error("EngineError", text, exc.status)
    return error("InvalidValue", text)
