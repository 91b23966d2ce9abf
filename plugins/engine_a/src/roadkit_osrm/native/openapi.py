"""The OpenAPI 3.1 document of the native OSRM API v1 (``osrm/1.0.0``), generated per service.

A request the document calls valid is one the API reads, as far as OpenAPI can say: one path per
resource and OSRM service (and per optimization for Road2's URL), the profiles that reach a source
answering that service, the coordinates as a pattern (``{lon},{lat};...`` in the sources' area, an
encoded polyline, ``tile(x,y,z).mvt``) with osrm-routed's limits on their number, and each option
osrm-routed takes as a query parameter (or a JSON body member for POST) with its syntax and values.

A source may narrow both (``roadkit.contract.native_osrm``): ``native_bbox``, the box outside which it
refuses a coordinate (Valhalla snaps only near its roads; osrm-routed snaps any point, so an OSRM
source has none: anywhere), and ``native_limits`` (Valhalla's max_locations lowers max_viaroute_size).
Where a path's profiles reach several sources, the path describes the narrowest of their rules: the
intersection of their boxes and the lowest of their limits.

Where a domain can't be written as a pattern (decimal ranges, polylines), the pattern describes a
safe part of it, as the simple API's document does (``roadkit.apis.simple.openapi_exact``).

What OpenAPI can't state, osrm-routed checks on the whole request: the number of bearings, radiuses,
hints, approaches or timestamps equals the number of coordinates; indices point at coordinates; a
trace matches the roads; exclude classes are declared by the dataset's profile. Such a request is
answered by osrm-routed's 400 (documented). The answers themselves are osrm-routed's (docs/http.md
of osrm-backend): their schemas stay open.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from roadkit.contract.apis import Resource, ServiceView, Source, decimal_pattern, secure_openapi
from roadkit.contract.native_osrm import NativeLimits, NativeSource
from roadkit_osrm.native.body import POST_SERVICES
from roadkit_osrm.native.query import BASE64_CHARS, HINT_SIZE, SERVICES
from roadkit_osrm.native.settings import NativeSettings
from roadkit_osrm.native.settings import of as native_settings
from roadkit_osrm.native.table import LEFT_OUT, answers, by_matrix, table_limits
from roadkit_osrm.native.url import NAME_CHARS

_JSON = "application/json"
_OSRM_ANSWER = {
    "type": "object",
    "required": ["code"],
    "properties": {
        "code": {"type": "string", "description": "Ok, or an osrm-routed error code (InvalidQuery, NoSegment, TooBig...)"},
        "message": {"type": "string"},
    },
    "additionalProperties": True,
}
#: A box in WGS 84: xmin, ymin, xmax, ymax.
Box = tuple[float, float, float, float]
#: Where coordinates are accepted: anywhere (osrm-routed snaps a point to the nearest road of its data).
WORLD: Box = (-180.0, -90.0, 180.0, 90.0)
#: The zoom levels osrm-routed draws tiles at.
TILE_ZOOMS = range(12, 20)
_BOOLEAN = ["true", "false"]


def _decimal(low: float, high: float, *, integer: bool = False) -> str:
    pattern = decimal_pattern(low, high, integer=integer)
    assert pattern is not None
    return pattern


def _integer(low: int, high: int) -> str:
    return _decimal(low, high, integer=True)


#: osrm-routed's 64-bit and 32-bit unsigned integers (a larger one does not parse)
_UINT = _integer(0, 2**64 - 1)
_UINT32 = _integer(0, 2**32 - 1)
#: a real as osrm-routed reads it (no exponent; no '+': its URL grammar refuses the character)
_REAL = r"(?:\d+(?:\.\d*)?|\.\d+)"
#: a real above 0
_POSITIVE = r"0*(?:[1-9]\d*(?:\.\d*)?|\.0*[1-9]\d*)"


def _list(item: str, *, empty: bool = True) -> str:
    """osrm-routed's ``item % ';'``, each item optional (``-item``) when ``empty`` (anchored)."""
    one = f"(?:{item})?" if empty else f"(?:{item})"
    return f"^{one}(?:;{one})*$"


def _text(pattern: str | None = None, values: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if values is not None:
        schema["enum"] = values
    if pattern is not None:
        schema["pattern"] = pattern
    return schema


# -- options, as query parameters (GET) and as JSON members (POST) -------------------------------


def query_options(service: str, limits: NativeLimits) -> dict[str, tuple[dict[str, Any], str]]:
    """The options ``service`` takes in its query string: name -> (schema, description)."""
    bearing = rf"{_integer(0, 360)},{_integer(0, 180)}"
    base = {
        "bearings": (_text(_list(bearing)), "Per coordinate: `{bearing},{range}` in degrees (0-360, 0-180), or empty."),
        "radiuses": (_text(_list(f"-?{_REAL}|unlimited")), "Per coordinate: the search radius in metres, `unlimited` or empty."),
        "hints": (
            _text(_list(f"(?:[{re.escape(BASE64_CHARS)}]{{{HINT_SIZE}}})+")),
            "Per coordinate: a hint from an earlier answer (base64), or empty.",
        ),
        "approaches": (_text(_list("unrestricted|curb|opposite")), "Per coordinate: the side of the road to arrive on, or empty."),
        "exclude": (_text(r"^[A-Za-z0-9]+(?:,[A-Za-z0-9]+)*$"), "Classes of roads to avoid, as the dataset's profile declares them."),
        "snapping": (_text(values=["default", "any"]), "Which roads a coordinate may snap to."),
        "generate_hints": (_text(values=_BOOLEAN), "Whether the answer carries hints."),
        "skip_waypoints": (_text(values=_BOOLEAN), "Whether the answer leaves the waypoints out."),
    }
    annotations = ("duration", "nodes", "distance", "weight", "datasources", "speed")
    route = {
        "steps": (_text(values=_BOOLEAN), "Turn-by-turn steps."),
        "geometries": (_text(values=["polyline", "polyline6", "geojson"]), "The geometry format."),
        "overview": (_text(values=["simplified", "full", "false"]), "The overview geometry (by_legs: not answered, see the README)."),
        "annotations": (
            _text(f"^(?:true|false|(?:{'|'.join(annotations)})(?:,(?:{'|'.join(annotations)}))*)$"),
            "`true`, `false`, or a comma-separated list of " + ", ".join(annotations) + ".",
        ),
        "waypoints": (_text(_list(_UINT, empty=False)), "Indices of the coordinates that are waypoints (the others are via points)."),
    }
    most = limits.max_alternatives if limits.max_alternatives >= 0 else 2**32 - 1
    options: dict[str, tuple[dict[str, Any], str]] = {}
    if service == "route":
        alternatives = f"^(?:true|false|{_integer(0, most)})$"
        options = {
            **base,
            **route,
            "alternatives": (_text(alternatives), f"Alternative routes: true, false or a number (at most {most})."),
            "continue_straight": (_text(values=["default", *_BOOLEAN]), "Whether to keep straight at waypoints."),
        }
    elif service == "nearest":
        most = limits.max_nearest_size if limits.max_nearest_size > 0 else 2**32 - 1
        options = {**base, "number": (_text(f"^{_integer(1, most)}$"), f"How many road points (1 to {most}).")}
    elif service == "table":
        indices = f"^(?:all|{_UINT}(?:;{_UINT})*)$"
        options = {
            **base,
            "sources": (_text(indices), "`all` or indices of the coordinates the rows start from."),
            "destinations": (_text(indices), "`all` or indices of the coordinates the columns go to."),
            "annotations": (_text("^(?:duration|distance)(?:,(?:duration|distance))*$"), "duration, distance or both."),
            "fallback_speed": (_text(f"^{_POSITIVE}$"), "Speed (m/s, > 0) of the straight-line estimate for unreachable pairs."),
            "fallback_coordinate": (_text(values=["input", "snapped"]), "Which coordinates the estimate starts from."),
            "scale_factor": (_text(f"^{_POSITIVE}$"), "Factor (> 0) applied to the durations."),
        }
    elif service == "trip":
        options = {
            **base,
            **route,
            "roundtrip": (_text(values=_BOOLEAN), "Whether the trip returns to its first point."),
            "source": (_text(values=["any", "first"]), "Where the trip starts."),
            "destination": (_text(values=["any", "last"]), "Where the trip ends."),
        }
    elif service == "match":
        options = {
            **base,
            **route,
            "timestamps": (_text(_list(f"{_UINT32}", empty=False)), "Per coordinate: a UNIX time in seconds."),
            "gaps": (_text(values=["split", "ignore"]), "Whether large gaps split the trace."),
            "tidy": (_text(values=_BOOLEAN), "Whether to remove points too close together."),
        }
        if limits.max_matching_radius > 0:
            options["radiuses"] = (
                options["radiuses"][0],
                f"Per coordinate: the GPS precision in metres (at most {limits.max_matching_radius:g}; larger: 400 TooBig), or empty.",
            )
    if service == "table" and limits.max_table_size > 0:
        schema, text = options["sources"]
        options["sources"] = (schema, f"{text} Sources × destinations: at most {limits.max_table_size**2} (400 TooBig beyond).")
    return options


def _strictly_positive(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "exclusiveMinimum": 0}


def body_schema(service: str, limits: NativeLimits, coordinates: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of a POST for ``service`` (one of :data:`POST_SERVICES`), as ``native.body`` reads it."""
    integer = {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}
    indices = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}}
    boolean = {"type": "boolean"}
    degrees = [{"type": "integer", "minimum": 0, "maximum": 360}, {"type": "integer", "minimum": 0, "maximum": 180}]
    bearing = {"type": "array", "prefixItems": degrees}
    properties: dict[str, Any] = {
        "coordinates": coordinates,
        "bearings": {"type": "array", "items": {"anyOf": [{"type": "null"}, {**bearing, "items": False, "minItems": 2}]}},
        "radiuses": {"type": "array", "items": {"anyOf": [{"type": "null"}, {"type": "number"}, {"const": "unlimited"}]}},
        "hints": {"type": "array", "items": {"type": ["string", "null"]}},
        "approaches": {"type": "array", "items": {"enum": [None, "unrestricted", "curb", "opposite"]}},
        "exclude": {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z0-9]+$"}},
        "generate_hints": boolean,
        "skip_waypoints": boolean,
        "snapping": {"enum": ["default", "any"]},
        "format": {"const": "json"},
    }
    annotations = ["duration", "nodes", "distance", "weight", "datasources", "speed"]
    if service in ("route", "match"):
        most = limits.max_alternatives if limits.max_alternatives >= 0 else 2**32 - 1
        properties |= {
            "steps": boolean,
            "geometries": {"enum": ["polyline", "polyline6", "geojson"]},
            "overview": {"enum": ["simplified", "full", "false"]},
            "annotations": {"anyOf": [boolean, {"type": "array", "items": {"enum": annotations}}]},
            "waypoints": indices,
        }
        if service == "route":
            properties["alternatives"] = {"anyOf": [boolean, {**integer, "maximum": most}]}
            properties["continue_straight"] = {"anyOf": [boolean, {"const": "default"}]}
        else:
            properties["timestamps"] = {"type": "array", "items": integer}
            if limits.max_matching_radius > 0:
                radius = {"type": "number", "maximum": limits.max_matching_radius}
                properties["radiuses"] = {"type": "array", "items": {"anyOf": [{"type": "null"}, radius]}}
            properties["gaps"] = {"enum": ["split", "ignore"]}
            properties["tidy"] = boolean
    elif service == "table":
        properties |= {
            "sources": indices,
            "destinations": indices,
            "annotations": {"anyOf": [boolean, {"type": "array", "items": {"enum": ["duration", "distance"]}}]},
            "fallback_speed": _strictly_positive({"type": "number"}),
            "scale_factor": _strictly_positive({"type": "number"}),
            "fallback_coordinate": {"enum": ["input", "snapped"]},
        }
    elif service == "nearest":
        most = limits.max_nearest_size if limits.max_nearest_size > 0 else 2**32 - 1
        properties["number"] = {"type": "integer", "minimum": 1, "maximum": most}
    return {"type": "object", "required": ["coordinates"], "properties": properties}


# -- coordinates ---------------------------------------------------------------------------------


def count_range(service: str, limits: NativeLimits) -> tuple[int, int | None]:
    """How many coordinates ``service`` takes (osrm-routed's limits; None: no upper bound)."""
    limit = {
        "route": limits.max_viaroute_size,
        "table": limits.max_table_size,
        "trip": limits.max_trip_size,
        "match": limits.max_matching_size,
        "nearest": limits.max_nearest_locations,
    }[service]
    return (1 if service == "nearest" else 2), (limit if limit > 0 else None)


def _zigzag(value: int) -> str:
    """One value of an encoded polyline (Google's algorithm, as OSRM decodes it)."""
    number = ~(value << 1) if value < 0 else value << 1
    out = []
    while number >= 0x20:
        out.append(chr((0x20 | (number & 0x1F)) + 63))
        number >>= 5
    out.append(chr(number + 63))
    return "".join(out)


def polyline_pattern(box: Box, precision: int, least: int, most: int | None) -> str | None:
    """A safe part of ``polyline(...)``: the centre of ``box``, then steps of at most 16 units that stay inside."""
    factor = 10**precision
    lon, lat = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    room = min(box[2] - box[0], box[3] - box[1]) / 2 * factor // 16  # steps before a point could leave the box
    steps = int(room) if most is None else min(int(room), most - 1)
    if steps < least - 1:
        return None
    start = re.escape(_zigzag(round(lat * factor)) + _zigzag(round(lon * factor)))
    step = "[?-^]{2}"  # one character per value: -16 to 15 units
    name = "polyline" if precision == 5 else "polyline6"
    return rf"{name}\({start}(?:{step}){{{least - 1},{steps}}}\)"


def point_pattern(box: Box) -> str:
    """``{lon},{lat}`` inside ``box`` (unanchored): both signs anywhere, the box's side of 0 elsewhere."""
    if box == WORLD:
        return f"-?{_decimal(0, box[2])},-?{_decimal(0, box[3])}"
    return f"{_decimal(box[0], box[2])},{_decimal(box[1], box[3])}"


def coordinates_schema(service: str, limits: NativeLimits, box: Box = WORLD) -> dict[str, Any]:
    """The ``{coordinates}`` path parameter of ``service``: its pattern and description."""
    if service == "tile":
        tiles = "|".join(rf"{_integer(0, 2**z - 1)},{_integer(0, 2**z - 1)},0*{z}" for z in TILE_ZOOMS)
        return {
            "schema": _text(rf"^tile\((?:{tiles})\)\.mvt$"),
            "description": f"`tile({{x}},{{y}},{{z}}).mvt`: a Mapbox vector tile, zoom {TILE_ZOOMS[0]} to {TILE_ZOOMS[-1]}.",
        }
    least, most = count_range(service, limits)
    point = point_pattern(box)
    more = f"{{{least - 1},{'' if most is None else most - 1}}}"
    forms = [f"{point}(?:;{point}){more}"]
    forms += [p for p in (polyline_pattern(box, 5, least, most), polyline_pattern(box, 6, least, most)) if p]
    counted = f"{least}" if most == least else f"{least} to {most}" if most else f"at least {least}"
    where = (
        "anywhere: osrm-routed snaps each to the nearest road"
        if box == WORLD
        else f"inside {','.join(f'{v:g}' for v in box)}: the source refuses a point outside it (NoSegment)"
    )
    return {
        "schema": _text(f"^(?:{'|'.join(forms)})(?:\\.json)?$"),
        "description": (
            f"{counted} coordinates: `{{lon}},{{lat}};{{lon}},{{lat}}...` (WGS 84, {where}), `polyline({{encoded}})` or "
            "`polyline6({encoded})` (described: from the centre of that area, small steps), optionally followed by `.json`."
        ),
    }


# -- the document ----------------------------------------------------------------------------------


def _answers(service: str, *, post: bool) -> dict[str, Any]:
    answer = {"content": {_JSON: {"schema": _OSRM_ANSWER}}}
    ok = (
        {"application/x-protobuf": {"schema": {"type": "string", "format": "binary"}}}
        if service == "tile"
        else {_JSON: {"schema": _OSRM_ANSWER}}
    )
    found: dict[str, Any] = {
        "200": {"description": "osrm-routed's answer" + (" (a Mapbox vector tile)" if service == "tile" else ""), "content": ok},
        "400": {
            "description": (
                "osrm-routed's error answer: a rule across options (their number per coordinate, indices), nothing "
                "found (NoRoute, NoSegment, NoMatch...), or a request outside the document (InvalidUrl, InvalidQuery...)"
            ),
            **answer,
        },
        "503": {"description": "The service is starting, or the resource's settings are invalid", **answer},
        "504": {"description": "The engine took longer than the source's timeout", **answer},
    }
    if post:
        found["413"] = {"description": "The body is larger than the service's limits.max_body_bytes", **answer}
        found["415"] = {"description": "The content type is not application/json (InvalidContentType)", **answer}
    return found


def _path(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema, "description": description}


def _settings(resource: Resource) -> NativeSettings | None:
    return native_settings(resource)


def _answering(
    settings: NativeSettings, resource: Resource, names: list[str], service: str, optimization: str | None
) -> tuple[list[str], list[Source]]:
    """The profile names (of ``names``) whose source answers ``service``, and those sources."""
    found: list[str] = []
    sources: list[Source] = []
    for name in names:
        chosen = settings.choose(resource, name, optimization)
        if chosen is not None and answers(chosen[0], chosen[1], resource, service):
            found.append(name)
            if chosen[0] not in sources:
                sources.append(chosen[0])
    return found, sources


def area(sources: list[Source]) -> Box:
    """Where every one of ``sources`` takes coordinates: the intersection of their ``native_bbox`` (WORLD: none has one)."""
    box = WORLD
    for source in sources:
        own: Box | None = source.native_bbox if isinstance(source, NativeSource) else None
        if own is not None:
            box = (max(box[0], own[0]), max(box[1], own[1]), min(box[2], own[2]), min(box[3], own[3]))
    return box


def resource_paths(resource: Resource, settings: NativeSettings) -> dict[str, Any]:
    """The paths of one resource: per OSRM service, OSRM's URL, Road2's per optimization, and the POST ones."""
    paths: dict[str, Any] = {}
    names = settings.profile_names(resource)
    optimizations = sorted({c.optimization for s in resource.sources for c in s.costs() if c.optimization})
    rid = quote(resource.id, safe="")
    for name in SERVICES:
        forms: list[tuple[str, str, str | None, list[str]]] = [
            (f"/{rid}/{name}/v1/{{profile}}", "", None, [n for n in names if all(c in NAME_CHARS for c in n)])
        ]
        forms += [(f"/{rid}/{{profile}}/{quote(o, safe='')}/{name}/v1/_", f"-{o}", o, names) for o in optimizations]
        for prefix, suffix, optimization, candidates in forms:
            profiles, sources = _answering(settings, resource, candidates, name, optimization)
            box = area(sources)
            if not profiles or box[0] > box[2] or box[1] > box[3]:
                continue  # no profile, or sources without a common area: no request is answered for all of them
            limits = settings.limits_for(sources)
            # A table through a matrix: its limits, and none of the options only OSRM's own table applies.
            matrix = name == "table" and all(by_matrix(s, resource) for s in sources)
            if matrix:
                limits = table_limits(limits, resource)
            coordinates = coordinates_schema(name, limits, box)
            coordinate = _path("coordinates", coordinates["description"], coordinates["schema"])
            options = [
                {"name": key, "in": "query", "required": False, "schema": schema, "description": text}
                for key, (schema, text) in query_options(name, limits).items()
                if not (matrix and key in LEFT_OUT)
            ]
            profile = _path("profile", "A profile of the resource or an alias (see /resources).", _text(values=profiles))
            operation_id = f"{name}-{resource.id}{suffix}"
            paths[f"{prefix}/{{coordinates}}"] = {
                "get": {
                    "operationId": operation_id,
                    "summary": f"{name} on {resource.id}" + (f", optimization {optimization} (Road2's URL)" if optimization else ""),
                    "parameters": [profile, coordinate, *options],
                    "responses": _answers(name, post=False),
                }
            }
            if name in POST_SERVICES:
                body = body_schema(name, limits, _body_coordinates(name, limits, box))
                if matrix:
                    body["properties"] = {k: v for k, v in body["properties"].items() if k not in LEFT_OUT}
                paths[prefix] = {
                    "post": {
                        "operationId": f"{operation_id}-post",
                        "summary": f"{name} on {resource.id}, the options as a JSON body (osrm-routed 26)",
                        "parameters": [profile],
                        "requestBody": {"required": True, "content": {_JSON: {"schema": body}}},
                        "responses": _answers(name, post=True),
                    }
                }
    return paths


def _body_coordinates(service: str, limits: NativeLimits, box: Box = WORLD) -> dict[str, Any]:
    least, most = count_range(service, limits)
    pair = {
        "type": "array",
        "prefixItems": [{"type": "number", "minimum": box[0], "maximum": box[2]}, {"type": "number", "minimum": box[1], "maximum": box[3]}],
        "items": False,
        "minItems": 2,
    }
    points: dict[str, Any] = {"type": "array", "items": pair, "minItems": least}
    if most is not None:
        points["maxItems"] = most
    lines = [p for p in (polyline_pattern(box, 5, least, most), polyline_pattern(box, 6, least, most)) if p]
    return {"anyOf": [points, *({"type": "string", "pattern": f"^{line}$"} for line in lines)]}


def native_openapi(service: ServiceView, base: str) -> dict[str, Any]:
    """The native API's OpenAPI document for ``service``, its server at ``base`` (``.../osrm/1.0.0``)."""
    paths: dict[str, Any] = {
        "/resources": {
            "get": {
                "operationId": "resources",
                "summary": "The resources with their profiles, optimizations, aliases and services.",
                "responses": {
                    "200": {
                        "description": "The resources",
                        "content": {_JSON: {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Resource"}}}},
                    },
                    "503": {"description": "The service is starting", "content": {_JSON: {"schema": _OSRM_ANSWER}}},
                },
            }
        }
    }
    for resource in service.resources.values():
        settings = _settings(resource)
        if settings is not None:
            paths |= resource_paths(resource, settings)
    # With [access], the document states the credentials the API takes (the service's security schemes).
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "roadkit native OSRM API",
            "version": "1.0.0",
            "description": (
                "osrm-routed's HTTP API v1 on roadkit's resources: same URLs (under a resource), options, limits, answers and "
                "errors. A POST on a URL with coordinates is a 405 (GET only); a GET on a POST URL (no coordinates) too."
            ),
        },
        "servers": [{"url": base}],
        "paths": paths,
        "components": {"schemas": {"Resource": _RESOURCE}},
    }
    return secure_openapi(document, service.config.access)


_RESOURCE = {
    "type": "object",
    "required": ["id", "description", "profiles", "services"],
    "properties": {
        "id": {"type": "string"},
        "description": {"type": "string"},
        "services": {"type": "array", "items": {"type": "string", "enum": list(SERVICES)}},
        "profiles": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "optimizations", "aliases"],
                "properties": {
                    "id": {"type": "string"},
                    "optimizations": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
                    "aliases": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "limits": {
            "type": "object",
            "description": "osrm-routed's limits on this resource (-1: unlimited); a request past one is a 400 TooBig.",
            "additionalProperties": {"type": "number"},
        },
    },
}
