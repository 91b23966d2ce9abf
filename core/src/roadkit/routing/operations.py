"""The operations of the simple API and their parameters (service level, shared by resources)."""

from __future__ import annotations

from typing import Literal

import attrs

ParameterType = Literal["point", "enumeration", "boolean", "float", "integer", "string", "constraint"]


@attrs.frozen
class ParameterSpec:
    """A parameter of an operation: its type, whether it is required or multi-valued, its help text.

    ``min``/``max`` bound the number of values of a multi-valued parameter (``|``-separated in GET,
    a JSON array in POST).
    """

    name: str
    type: ParameterType
    description: str
    example: str = ""
    required: bool = False
    defaulted: bool = False
    multi: bool = False
    min: int = 0
    max: int = 1


_POINT_HELP = "A point 'x,y' in the request's crs (lon,lat in EPSG:4326), inside the resource's bbox."
_CONSTRAINT_HELP = (
    'Constraints as JSON objects {"constraintType": "banned"|"prefer"|"avoid", "key", "operator", '
    "\"value\"}; in GET several are separated by '|', in POST a JSON array. The keys, types, operators and "
    "values a resource allows are listed in its capabilities."
)

RESOURCE = ParameterSpec(
    "resource", "enumeration", "The resource to use (see the resources of the capabilities).", "monaco-osrm", required=True, min=1
)
PROFILE = ParameterSpec("profile", "enumeration", "The transport profile (car, pedestrian...).", "car", defaulted=True)
CRS_PARAM = ParameterSpec(
    "crs", "enumeration", "The CRS of the input points and of the output geometries and points.", "EPSG:4326", defaulted=True
)
GEOMETRY_FORMAT = ParameterSpec(
    "geometryFormat", "enumeration", "The format of output geometries: geojson, polyline (precision 5) or wkt.", "geojson", defaulted=True
)
TIME_UNIT = ParameterSpec(
    "timeUnit", "enumeration", "The unit of durations: hour, minute, second, or standard (HH:MM:SS).", "minute", defaulted=True
)
DISTANCE_UNIT = ParameterSpec("distanceUnit", "enumeration", "The unit of distances: meter or kilometer.", "meter", defaulted=True)
CONSTRAINTS = ParameterSpec(
    "constraints",
    "constraint",
    _CONSTRAINT_HELP,
    '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}',
    multi=True,
    min=0,
    max=3,
)
DATE_TIME = ParameterSpec(
    "date_time",
    "string",
    "Departure date and time 'YYYY-MM-DDTHH:mm', used by engines that know time-dependent costs (Valhalla).",
    "2026-11-22T08:30",
)
OPTIMIZATION = ParameterSpec("optimization", "enumeration", "What to minimise: fastest or shortest.", "fastest", defaulted=True)

#: The default limits of a matrix, per resource (``[operations.matrix.limits]``): on the demo machine
#: a 100 x 100 Monaco matrix takes milliseconds on OSRM and well under a second on the other engines.
MATRIX_MOST_SOURCES = 100
MATRIX_MOST_TARGETS = 100
MATRIX_MOST_CELLS = 10_000

ROUTE = (
    RESOURCE,
    ParameterSpec("start", "point", "The start of the route. " + _POINT_HELP, "7.41337,43.72956", required=True, min=1),
    ParameterSpec("end", "point", "The end of the route. " + _POINT_HELP, "7.41983,43.73115", required=True, min=1),
    ParameterSpec(
        "intermediates",
        "point",
        "Points to pass through, in order, '|'-separated (0 to 10). Each starts a new portion.",
        "7.4167,43.7340|7.4189,43.7380",
        multi=True,
        min=0,
        max=10,
    ),
    PROFILE,
    OPTIMIZATION,
    DATE_TIME,
    ParameterSpec(
        "getSteps",
        "boolean",
        "Whether to return the steps of each portion. A step has a geometry, a distance, a duration, attributes "
        "(the way name and any waysAttributes asked for) and an instruction {type, modifier?, exit?} following the "
        "engine's maneuver (depart, turn, new name, roundabout, arrive...); false gives empty step lists.",
        "true",
        defaulted=True,
    ),
    ParameterSpec(
        "waysAttributes", "enumeration", "Attributes of the ways to return on each step, '|'-separated.", "name", multi=True, min=0, max=10
    ),
    GEOMETRY_FORMAT,
    ParameterSpec("getBbox", "boolean", "Whether to return the bbox of the route and of each portion.", "true", defaulted=True),
    CRS_PARAM,
    TIME_UNIT,
    DISTANCE_UNIT,
    CONSTRAINTS,
)

ISOCHRONE = (
    RESOURCE,
    ParameterSpec("point", "point", "The departure (or arrival) point. " + _POINT_HELP, "7.41337,43.72956", required=True, min=1),
    # Road2 marks costType required although the resource always supplies a default: it is optional here.
    ParameterSpec(
        "costType", "enumeration", "time (isochrone) or distance (isodistance); the resource's default when absent.", "time", defaulted=True
    ),
    ParameterSpec(
        "costValue",
        "float",
        "The cost to reach, in timeUnit or distanceUnit, within the resource's min and max. Several values "
        "('|'-separated, or a JSON array) give nested polygons, one per value.",
        "300",
        required=True,
        multi=True,
        min=1,
        max=5,
    ),
    PROFILE,
    ParameterSpec(
        "direction",
        "enumeration",
        "departure (the point is the origin) or arrival (the point is the destination).",
        "departure",
        defaulted=True,
    ),
    DATE_TIME,
    CRS_PARAM,
    GEOMETRY_FORMAT,
    TIME_UNIT,
    DISTANCE_UNIT,
    CONSTRAINTS,
)

NEAREST = (
    RESOURCE,
    ParameterSpec("coordinates", "point", "The point to snap to the graph. " + _POINT_HELP, "7.41337,43.72956", required=True, min=1),
    ParameterSpec("nbPoints", "integer", "How many nearest points to return.", "1", defaulted=True),
    CRS_PARAM,
)

MATRIX = (
    RESOURCE,
    ParameterSpec(
        "sources",
        "point",
        "The points the rows start from, '|'-separated (a JSON array in POST). " + _POINT_HELP,
        "7.41337,43.72956|7.41983,43.73115",
        required=True,
        multi=True,
        min=1,
        max=MATRIX_MOST_SOURCES,
    ),
    ParameterSpec(
        "targets",
        "point",
        "The points the columns end at, as sources; the sources themselves when absent. " + _POINT_HELP,
        "7.4246,43.7383|7.4200,43.7350",
        multi=True,
        min=1,
        max=MATRIX_MOST_TARGETS,
    ),
    PROFILE,
    OPTIMIZATION,
    DATE_TIME,
    CRS_PARAM,
    TIME_UNIT,
    DISTANCE_UNIT,
    CONSTRAINTS,
)

OPERATIONS: dict[str, tuple[ParameterSpec, ...]] = {"route": ROUTE, "isochrone": ISOCHRONE, "nearest": NEAREST, "matrix": MATRIX}

DESCRIPTIONS = {
    "route": "Compute a route between a start and an end, through intermediate points.",
    "isochrone": "Compute the area reachable from (or to) a point within a time or a distance.",
    "nearest": "Find the points of the graph nearest to a point.",
    "matrix": "Compute the durations and distances from each of several sources to each of several targets.",
}
