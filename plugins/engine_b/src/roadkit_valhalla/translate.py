"""Valhalla request bodies from roadkit requests, and roadkit responses from Valhalla answers.

Routes are asked in Valhalla's OSRM-compatible output (``directions_options.format = "osrm"``),
so steps carry OSRM's maneuver vocabulary (``depart``, ``turn``, ``rotary``, ``arrive``...) exactly
as the OSRM plugin returns them. Valhalla's own format would be cheaper still, but it lacks what
that vocabulary is computed from (the intersections behind ``end of road``, ``to_stay_on`` behind
``continue``, which names are refs, the exit street of a roundabout) and gives lengths to the
meter only: measured on random Monaco routes, one step in ten would change. Two switches make the
OSRM output cheap instead: ``directions_type = "maneuvers"`` (Valhalla builds no narrative, the
text roadkit never returns) and polyline6 shapes decoded by pypolyline's compiled decoder (the
same coordinates as GeoJSON's six decimals; a third of the answer's size and of its parsing).
The steps' intersections, two thirds of what is left and read by nobody, are cut out of the text
before it is parsed (:func:`without_intersections`). Coordinates are ``(lon, lat)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy
import orjson
import shapely
from pypolyline.cutil import decode_polyline
from shapely.geometry import mapping, shape

from roadkit.contract.sources import (
    Constraint,
    Coord,
    EngineError,
    GeoJSONText,
    IsochroneRequest,
    IsochroneResponse,
    MatrixRequest,
    NearestPoint,
    NearestResponse,
    NoIsochroneFound,
    NoPathFound,
    ParameterInvalid,
    Portion,
    RouteRequest,
    RouteResponse,
    Step,
    Vehicle,
    way_name,
)
from roadkit_valhalla.options import ValhallaCost
from roadkit_valhalla.preferences import PREFERENCES_OF_COSTING, preference_option, preference_value

EARTH_RADIUS_M = 6371008.8


def _location(point: Coord, search_filter: dict[str, Any] | None = None) -> dict[str, Any]:
    location: dict[str, Any] = {"lon": point[0], "lat": point[1]}
    if search_filter:
        location["search_filter"] = search_filter
    return location


#: The search filter of Valhalla's locations that keeps a point off the ways an exclusion bans.
SEARCH_FILTER_OF_EXCLUSION = {
    "exclude_highways": ("max_road_class", "trunk"),
    "exclude_tunnels": ("exclude_tunnel", True),
    "exclude_bridges": ("exclude_bridge", True),
    "exclude_tolls": ("exclude_toll", True),
    "exclude_ferries": ("exclude_ferry", True),
}


def search_filter(constraints: Sequence[Constraint]) -> dict[str, Any]:
    """What keeps the points off the banned ways: Valhalla lets a route start or end on an excluded way.

    With the exclusions (hard: the source allows them, see ``allow_hard_exclusions``), a ban holds
    on the whole route, as OSRM's ``exclude`` does; a point is moved to the nearest allowed way.
    """
    found: dict[str, Any] = {}
    for constraint in constraints:
        if constraint.type == "banned" and constraint.field:
            name, value = _field_setting(constraint.field)
            if value is True and name in SEARCH_FILTER_OF_EXCLUSION:
                key, setting = SEARCH_FILTER_OF_EXCLUSION[name]
                found[key] = setting
    return found


def _field_setting(field: str) -> tuple[str, Any]:
    """``exclude_tolls`` → (exclude_tolls, True); ``use_highways=0`` → (use_highways, 0.0)."""
    name, sep, raw = field.partition("=")
    if not sep:
        return name.strip(), True
    raw = raw.strip()
    if raw in ("true", "false"):
        return name.strip(), raw == "true"
    try:
        return name.strip(), float(raw)
    except ValueError:
        return name.strip(), raw


def costing_options(cost: ValhallaCost, constraints: Sequence[Constraint]) -> dict[str, dict[str, Any]]:
    """The cost's costing options with the constraints applied.

    ``banned`` sets the value's field (an exclusion such as ``exclude_tolls``); ``prefer`` and
    ``avoid`` set the matching ``use_*`` preference from the constraint's cost ratio
    (:mod:`roadkit_valhalla.preferences`). For ``multimodal`` they apply to the walking parts
    (``pedestrian`` options). A preference the cost's costing does not read is a 400, not ignored.
    """
    options = cost.costing_options()
    target = "pedestrian" if cost.costing == "multimodal" else cost.costing
    for constraint in constraints:
        if constraint.type == "banned":
            if constraint.field:
                name, value = _field_setting(constraint.field)
                options.setdefault(target, {})[name] = value
            continue
        option = preference_option(constraint.field)
        if option is None or option not in PREFERENCES_OF_COSTING.get(cost.costing, frozenset()):
            raise ParameterInvalid(
                "constraints",
                f"{constraint.type} {constraint.key}={constraint.value} can't be applied to profile '{cost.profile}' "
                f"(Valhalla costing {cost.costing} has no {option or 'preference'} option)",
            )
        ratio = constraint.ratio if constraint.ratio is not None else (0.8 if constraint.type == "prefer" else 1.2)
        options.setdefault(target, {})[option] = preference_value(option, ratio)
    return options


#: The costings of motor vehicles: a route for a vehicle of a given height or weight is a truck's.
MOTOR_COSTINGS = frozenset({"auto", "bus", "taxi", "truck", "motor_scooter", "motorcycle"})
#: The largest height (metres) and weight (tonnes) Valhalla's truck costing reads (it cuts larger ones down).
TRUCK_LIMITS = {"height": 10.0, "weight": 100.0}
#: Valhalla's default axle load of a truck, in tonnes.
TRUCK_AXLE_LOAD = 9.07


def vehicle_costing(cost: ValhallaCost, options: dict[str, dict[str, Any]], vehicle: Vehicle) -> tuple[str, dict[str, dict[str, Any]]]:
    """Valhalla's truck costing for a vehicle of the request's height and weight, with the cost's own options.

    A dimension not asked is 0 (no limit of that kind holds against it); the axle load is the weight's
    (a vehicle's axles carry no more than it weighs), at most Valhalla's default.
    """
    if cost.costing not in MOTOR_COSTINGS:
        raise ParameterInvalid(
            "vehicle", f"profile '{cost.profile}' is not a motor vehicle (Valhalla costing {cost.costing}): height and weight don't apply"
        )
    truck = {**options.pop(cost.costing, {}), **options.pop("truck", {})}
    weight = vehicle.weight or 0.0
    truck.update(height=vehicle.height or 0.0, weight=weight, axle_load=min(weight, TRUCK_AXLE_LOAD))
    return "truck", {**options, "truck": truck}


def _date_time(body: dict[str, Any], request: RouteRequest | IsochroneRequest | MatrixRequest) -> None:
    if request.date_time is not None:
        body["date_time"] = {"type": 1, "value": request.date_time.strftime("%Y-%m-%dT%H:%M")}


def route_body(request: RouteRequest, cost: ValhallaCost) -> dict[str, Any]:
    """The body of a Valhalla ``route`` call: OSRM-format answer without narrative, polyline6 shapes."""
    costing, options = cost.costing, costing_options(cost, request.constraints)
    if request.vehicle is not None:
        costing, options = vehicle_costing(cost, options, request.vehicle)
    body: dict[str, Any] = {
        "locations": [_location(p, search_filter(request.constraints)) for p in request.points],
        "costing": costing,
        "costing_options": options,
        "directions_options": {"format": "osrm"},
        # Maneuvers without their texts: the steps are the same, the narrative is not built.
        "directions_type": "maneuvers" if request.steps else "none",
        "shape_format": "polyline6",
    }
    _date_time(body, request)
    if request.arrive_by and "date_time" in body:
        body["date_time"]["type"] = 2  # Valhalla's "arrive by"
    if request.avoid:
        body["exclude_polygons"] = [[list(point) for point in ring] for ring in request.avoid]
    return body


def _line(shape: str) -> list[Coord]:
    """The ``(lon, lat)`` coordinates of a polyline6 shape."""
    return [(c[0], c[1]) for c in decode_polyline(shape.encode("ascii"), 6)]


#: The characters that end an encoded value (``?`` to ``^``: no continuation bit); two per point.
_VALUE_ENDS = bytes(range(63, 95))


def _points_in(shape: str) -> int:
    """How many points a polyline holds, without decoding it."""
    data = shape.encode("ascii")
    return (len(data) - len(data.translate(None, _VALUE_ENDS))) // 2


def _instruction(maneuver: dict[str, Any]) -> dict[str, Any]:
    instruction: dict[str, Any] = {"type": maneuver["type"]}
    if maneuver.get("modifier"):
        instruction["modifier"] = maneuver["modifier"]
    if "exit" in maneuver:
        instruction["exit"] = int(maneuver["exit"])
    return instruction


def _step_lines(legs: list[dict[str, Any]], geometry: list[Coord]) -> list[list[list[Coord]]]:
    """Each step's line, sliced from the route's: decoding them all cost more than the rest of the reading.

    The route's line is its legs' lines end to end, each leg after the first without its first
    point (Valhalla assumes it is the previous leg's last one; it is not when a waypoint snaps to
    two edges); within a leg, each step starts where the previous one ended, and an ``arrive``
    step is its leg's last point twice. An answer that does not add up is read step by step.
    """
    lines: list[list[list[Coord]]] = []
    cursor = 0
    for index, leg in enumerate(legs):
        leg_lines = []
        for number, step in enumerate(leg["steps"]):
            if step["maneuver"]["type"] == "arrive":
                leg_lines.append([geometry[cursor], geometry[cursor]] if cursor < len(geometry) else [])
                continue
            count = _points_in(step["geometry"])
            if index and not number:  # the leg's own first point, then the route's
                first = decode_polyline(step["geometry"].encode("ascii"), 6)[0]
                leg_lines.append([(first[0], first[1]), *geometry[cursor + 1 : cursor + count]])
            else:
                leg_lines.append(geometry[cursor : cursor + count])
            cursor += max(count - 1, 0)
        lines.append(leg_lines)
    if cursor != len(geometry) - 1 or any(not line for leg_lines in lines for line in leg_lines):
        return [[_line(step["geometry"]) for step in leg["steps"]] for leg in legs]
    return lines


def _steps(raw: Iterable[dict[str, Any]], lines: list[list[Coord]], with_mode: bool) -> list[Step]:
    steps = []
    for step, line in zip(raw, lines, strict=True):
        attributes: dict[str, Any] = {"name": way_name(step.get("name", ""))}
        if with_mode:
            attributes["mode"] = step.get("mode", "")
        steps.append(
            Step(
                geometry=line,
                distance=step["distance"],
                duration=step["duration"],
                attributes=attributes,
                instruction=_instruction(step["maneuver"]),
            )
        )
    return steps


#: A step of Valhalla's OSRM output starts with its intersections, then its maneuver.
_STEP_START = '{"intersections":['
_INTERSECTIONS_END = '],"maneuver":{'


def without_intersections(answer: str) -> str:
    """Valhalla's OSRM-format route answer without its steps' ``intersections`` (the answer as it is if unsure).

    roadkit reads none of them (Valhalla has already turned them into each step's maneuver), and
    they are two thirds of the answer: cut out of the text, they are never parsed. A step's
    intersections end where its maneuver begins (nothing inside them is named ``maneuver``); a cut
    that would reach past its step (a ``"geometry":`` key, which every step has) leaves the answer whole.
    """
    count = answer.count(_STEP_START)
    if not count or count != answer.count('"maneuver":{'):
        return answer
    parts = []
    position = 0
    while (start := answer.find(_STEP_START, position)) >= 0:
        end = answer.find(_INTERSECTIONS_END, start)
        if end < 0 or answer.find('"geometry":', start, end) >= 0:
            return answer
        parts.append(answer[position : start + 1])
        position = end + 2
    parts.append(answer[position:])
    return "".join(parts)


def read_route(answer: str) -> Any:
    """The parsed route answer, without its steps' intersections."""
    try:
        return orjson.loads(without_intersections(answer))
    except orjson.JSONDecodeError:
        return orjson.loads(answer)


def route_response(answer: dict[str, Any], request: RouteRequest, cost: ValhallaCost) -> RouteResponse:
    """A roadkit route from Valhalla's OSRM-format answer (meters, seconds)."""
    routes = answer.get("routes") or []
    if answer.get("code", "Ok") != "Ok" or not routes:
        raise NoPathFound("No route found")
    waypoints = [(w["location"][0], w["location"][1]) for w in answer["waypoints"]]
    route = routes[0]
    legs = route["legs"]
    if len(legs) != len(waypoints) - 1:
        raise NoPathFound(f"No route found through every point ({len(legs)} legs for {len(waypoints)} points)")
    geometry = _line(route["geometry"])
    with_mode = cost.costing == "multimodal"
    lines = _step_lines(legs, geometry) if request.steps else [[] for _ in legs]
    portions = [
        Portion(
            waypoints[i],
            waypoints[i + 1],
            leg["distance"],
            leg["duration"],
            _steps(leg["steps"], lines[i], with_mode) if request.steps else [],
        )
        for i, leg in enumerate(legs)
    ]
    return RouteResponse(
        start=waypoints[0],
        end=waypoints[-1],
        geometry=geometry,
        distance=route["distance"],
        duration=route["duration"],
        portions=portions,
    )


def isochrone_body(request: IsochroneRequest, cost: ValhallaCost) -> dict[str, Any]:
    """The body of a Valhalla ``isochrone`` call: one contour per cost value (minutes or kilometers)."""
    if request.cost.cost_type == "distance":
        contours = [{"distance": v / 1000.0} for v in request.cost_values]
    else:
        contours = [{"time": v / 60.0} for v in request.cost_values]
    body: dict[str, Any] = {
        "locations": [_location(request.point, search_filter(request.constraints))],
        "costing": cost.costing,
        "costing_options": costing_options(cost, request.constraints),
        "contours": contours,
        "polygons": True,
        "reverse": request.direction == "arrival",
    }
    _date_time(body, request)
    return body


def _without_repeats(ring: list[list[float]]) -> list[list[float]]:
    cleaned = [ring[0]]
    for point in ring[1:]:
        if point != cleaned[-1]:
            cleaned.append(point)
    return cleaned


def _ring_array(ring: list[list[float]]) -> Any:
    """A ring as an array of points; ValueError when they are not numbers of one dimension.

    Pairs (Valhalla's) are filled from a flat iterator, twice as fast as ``numpy.asarray`` on a
    list of lists; anything else goes through ``numpy.asarray``.
    """
    flat = numpy.fromiter(itertools.chain.from_iterable(ring), dtype=numpy.float64)
    if flat.size == 2 * len(ring):
        return flat.reshape(-1, 2)
    return numpy.asarray(ring, dtype=numpy.float64)


def _kept_ring(ring: list[list[float]], array: Any) -> list[list[float]]:
    """The ring without its repeated consecutive points (the same list when it has none, the usual case)."""
    if len(ring) > 1 and bool((array[1:] == array[:-1]).all(axis=1).any()):
        return _without_repeats(ring)
    return ring


def clean_polygon(geometry: dict[str, Any]) -> dict[str, Any] | None:
    """A valid Polygon or MultiPolygon from Valhalla's geometry, or None when it has no area.

    Valhalla's polygons are nearly always valid: they are only checked (and their repeated points
    dropped) without a round trip through shapely; an invalid one is repaired with ``make_valid``.
    """
    if not geometry.get("coordinates"):
        return None
    try:
        if geometry["type"] == "Polygon":
            # Built from arrays: shapely's shape() walks every coordinate in Python.
            arrays = [_ring_array(ring) for ring in geometry["coordinates"]]
            holes = [shapely.linearrings(array) for array in arrays[1:]]
            polygon = shapely.polygons(arrays[0], holes or None)
        else:
            polygon = shape(geometry)
    except (ValueError, TypeError, KeyError, shapely.errors.ShapelyError):
        return None
    if polygon.is_valid and not polygon.is_empty and polygon.area > 0:
        if geometry["type"] == "Polygon":
            rings = geometry["coordinates"]
            return {"type": "Polygon", "coordinates": [_kept_ring(r, a) for r, a in zip(rings, arrays, strict=True)]}
        return {"type": "MultiPolygon", "coordinates": [[_without_repeats(r) for r in p] for p in geometry["coordinates"]]}
    repaired = shapely.make_valid(polygon)
    parts = [g for g in getattr(repaired, "geoms", [repaired]) if g.geom_type in ("Polygon", "MultiPolygon")]
    result = shapely.union_all(parts) if parts else shapely.Polygon()
    if result.is_empty or result.area == 0 or result.geom_type not in ("Polygon", "MultiPolygon"):
        return None
    return dict(mapping(shapely.remove_repeated_points(result)))


def isochrone_response(answer: dict[str, Any], request: IsochroneRequest) -> IsochroneResponse:
    """One geometry per requested value, in the request's order; a Point at the start when empty.

    Valhalla answers one feature per contour, largest first: features and values are paired in
    that order.
    """
    features = [f for f in answer.get("features", []) if f.get("geometry", {}).get("type") in ("Polygon", "MultiPolygon")]
    if len(features) != len(request.cost_values):
        raise NoIsochroneFound(f"No isochrone found ({len(features)} contours for {len(request.cost_values)} values)")
    features.sort(key=lambda f: -float(f.get("properties", {}).get("contour", 0.0)))
    descending = sorted(range(len(request.cost_values)), key=lambda i: -request.cost_values[i])
    geometries: list[Mapping[str, Any]] = [{}] * len(request.cost_values)
    start = {"type": "Point", "coordinates": [request.point[0], request.point[1]]}
    for index, feature in zip(descending, features, strict=True):
        geometries[index] = clean_polygon(feature["geometry"]) or start
    return IsochroneResponse(request.point, geometries)


_GEOMETRY = '"geometry":'
_COORDINATES = '"geometry":{"coordinates":'
_POLYGON_END = ',"type":"Polygon"}'


def written_isochrone(answer: str, request: IsochroneRequest) -> IsochroneResponse | None:
    """The isochrone of one cost value from Valhalla's text, its polygon written back to GeoJSON on the spot.

    Valhalla writes its only contour as ``"geometry":{"coordinates":[[[x,y],...]],"type":"Polygon"}``:
    only those coordinates are parsed, checked by :func:`clean_polygon` as in
    :func:`isochrone_response`, and written by orjson here, while they are fresh in the caches. The
    response inserts that text (:class:`GeoJSONText`) instead of writing each coordinate again; it
    is the same text, byte for byte, that orjson writes for the dict. None for anything else
    (several values, a MultiPolygon, an unexpected text): :func:`isochrone_response` reads it.
    """
    if len(request.cost_values) != 1 or answer.count(_GEOMETRY) != 1:
        return None
    start = answer.find(_COORDINATES)
    end = answer.find(_POLYGON_END, start)
    if start < 0 or end < 0:
        return None
    try:
        rings = orjson.loads(answer[start + len(_COORDINATES) : end])
    except orjson.JSONDecodeError:
        return None
    geometry = clean_polygon({"type": "Polygon", "coordinates": rings})
    if geometry is None:
        return IsochroneResponse(request.point, [{"type": "Point", "coordinates": [request.point[0], request.point[1]]}])
    if geometry["type"] != "Polygon" or not isinstance(geometry["coordinates"], list):
        return IsochroneResponse(request.point, [geometry])  # repaired by shapely (rare): handed over as a dict
    return IsochroneResponse(request.point, [GeoJSONText("Polygon", orjson.dumps(geometry))])


def locate_body(point: Coord, costing: str, radius: int) -> dict[str, Any]:
    """The body of a Valhalla ``locate`` call around ``point``."""
    return {"locations": [{**_location(point), "radius": radius}], "costing": costing, "verbose": False}


def meters(a: Coord, b: Coord) -> float:
    """Great-circle distance between two lon/lat points."""
    lat1, lat2 = math.radians(a[1]), math.radians(b[1])
    dlat, dlon = lat2 - lat1, math.radians(b[0] - a[0])
    h = math.sin(dlat / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin(dlon / 2) ** 2
    return 2 * EARTH_RADIUS_M * math.asin(math.sqrt(min(1.0, h)))


def nearest_response(answer: Any, point: Coord, number: int) -> NearestResponse:
    """The ``number`` distinct snapped points nearest to ``point``, nearest first."""
    edges = answer[0].get("edges") or [] if answer else []
    found: dict[tuple[float, float], NearestPoint] = {}
    for edge in edges:
        located = (edge["correlated_lon"], edge["correlated_lat"])
        if located not in found:
            found[located] = NearestPoint(located, meters(point, located), {"way_id": edge.get("way_id")})
    if not found:
        raise NoPathFound("No graph point found near the coordinates")
    return NearestResponse(sorted(found.values(), key=lambda p: p.distance)[:number])


def matrix_body(request: MatrixRequest, cost: ValhallaCost) -> dict[str, Any]:
    """The body of a Valhalla ``sources_to_targets`` call, in its concise form (two arrays, no cell objects)."""
    body: dict[str, Any] = {
        "sources": [_location(p, search_filter(request.constraints)) for p in request.sources],
        "targets": [_location(p, search_filter(request.constraints)) for p in request.targets],
        "costing": cost.costing,
        "costing_options": costing_options(cost, request.constraints),
        # The verbose answer is 25 times larger (an object per cell) and holds nothing more roadkit returns.
        "verbose": False,
    }
    _date_time(body, request)
    return body


def matrix_cells(answer: Any, sources: int, targets: int) -> tuple[list[list[float | None]], list[list[float | None]]]:
    """The durations (seconds) and distances (meters) of Valhalla's concise matrix answer; null stays None.

    Read with numpy: a 100 x 100 matrix in half a millisecond, where a loop over its cells takes
    several. Raises EngineError when the answer is not ``sources`` rows of ``targets`` numbers.
    """
    cells: Any = answer.get("sources_to_targets") if isinstance(answer, dict) else None
    try:
        # null becomes NaN; kilometers with three decimals, rounded back to whole meters' floats
        seconds = numpy.array(cells["durations"], dtype=numpy.float64)
        meters = numpy.round(numpy.array(cells["distances"], dtype=numpy.float64) * 1000.0, 3)
    except (TypeError, KeyError, ValueError):
        seconds = meters = numpy.empty(0)
    if seconds.shape != (sources, targets) or meters.shape != (sources, targets):
        raise EngineError(f"Valhalla answered a matrix that is not {sources} x {targets}")
    # Valhalla's time-dependent matrix (with a date_time) writes a distance where it found no path
    # in its concise answer (its verbose one has none): a cell without a duration has no distance.
    no_path = numpy.isnan(seconds) | numpy.isnan(meters)
    written = []
    for values in (seconds, meters):
        table = values.astype(object)
        table[no_path] = None
        written.append(table.tolist())
    return written[0], written[1]


def locate_points_body(points: Sequence[Coord], costing: str, constraints: Sequence[Constraint] = ()) -> dict[str, Any]:
    """The body of a Valhalla ``locate`` call for ``points``, each searched as a matrix or route searches it."""
    return {"locations": [_location(p, search_filter(constraints)) for p in points], "costing": costing, "verbose": False}


def snapped_points(answer: Any, points: Sequence[Coord]) -> list[NearestPoint | None]:
    """Where Valhalla snaps each of ``points`` (its first correlated edge, as its matrices and routes do).

    None for a point no edge is near. The snapping distance is in meters.
    """
    if not isinstance(answer, list) or len(answer) != len(points):
        raise EngineError(f"Valhalla located {len(answer) if isinstance(answer, list) else 'no'} points of {len(points)}")
    found: list[NearestPoint | None] = []
    for point, entry in zip(points, answer, strict=True):
        edges = entry.get("edges") if isinstance(entry, dict) else None
        if not edges:
            found.append(None)
            continue
        snapped = (edges[0]["correlated_lon"], edges[0]["correlated_lat"])
        found.append(NearestPoint(snapped, meters(point, snapped)))
    return found
