"""The route, isochrone, nearest and matrix operations of the simple API: parse, compute, write."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from roadkit.apis.simple.inputs import Inputs
from roadkit.errors import EngineError, ParameterInvalid, ParameterMissing
from roadkit.routing.constraints import check_bans
from roadkit.routing.geometry import bbox, line, slice_between, write_geometry
from roadkit.routing.model import Coord, Cost, IsochroneRequest, MatrixRequest, NearestPoint, NearestRequest, RouteRequest
from roadkit.routing.units import STANDARD

if TYPE_CHECKING:
    from roadkit.routing.resources import Resource
    from roadkit.routing.source import Source
    from roadkit.web.view import ServiceView


def _resource(service: ServiceView, params: dict[str, Any], op: str) -> Resource:
    rid = params.get("resource")
    if rid is None:
        raise ParameterMissing("resource")
    if not isinstance(rid, str):
        raise ParameterInvalid("resource", "expected a resource id (a string)")
    resource = service.resource(rid)
    resource.operation(op)
    return resource


def _xy(point: Coord) -> str:
    return f"{point[0]:.7g},{point[1]:.7g}" if abs(point[0]) < 1000 else f"{point[0]:.2f},{point[1]:.2f}"


def _engine_date(value: datetime | None, source: Source) -> datetime | None:
    """``value`` when the source's engine reads its year (a 400 naming ``date_time`` otherwise)."""
    first, last = source.date_time_years
    if value is not None and not first <= value.year <= last:
        raise ParameterInvalid("date_time", f"expected a year from {first} to {last} (what the engine reads), got {value.year}")
    return value


async def route(service: ServiceView, params: dict[str, Any]) -> dict[str, Any]:
    """Validate a route request in Road2's order, compute it and write the response."""
    resource = _resource(service, params, "route")
    inputs = Inputs(params, resource.operation("route"), service.projections)
    crs = inputs.value("crs")
    start = inputs.point("start", crs)
    end = inputs.point("end", crs)
    profile = inputs.value("profile")
    optimization = inputs.value("optimization")
    source = resource.source_for_route(profile, optimization)
    intermediates = inputs.points("intermediates", crs)
    steps = inputs.value("getSteps")
    ways_attributes = inputs.values("waysAttributes")
    fmt = inputs.value("geometryFormat")
    get_bbox = inputs.value("getBbox")
    time_unit = inputs.value("timeUnit")
    distance_unit = inputs.value("distanceUnit")
    date_time = _engine_date(inputs.date_time(), source)
    constraints = inputs.values("constraints")
    check_bans(
        resource.operation("route")["constraints"],
        source,
        constraints,
        Cost(profile, optimization),
        f"profile '{profile}' and optimization '{optimization}'",
    )

    points = service.projections.transform([start, *intermediates, end], crs, source.projection)
    # Nothing needs the coordinates: the engine may write the polyline itself (OSRM does).
    encoded = fmt == "polyline" and not get_bbox and not steps and crs == source.projection
    request = RouteRequest(
        points=tuple(points),
        cost=Cost(profile, optimization),
        steps=bool(steps),
        ways_attributes=tuple(ways_attributes),
        constraints=tuple(constraints),
        date_time=date_time,
        polyline=encoded,
    )
    result = await source.route(request)

    units = service.units
    project = service.projections
    engine_crs = source.projection
    geometry = project.transform(result.geometry, engine_crs, crs)
    distance_of, duration_of = units.writer(distance_unit), units.writer(time_unit)
    portions = []
    cursor = 0
    for portion in result.portions:
        p_start, p_end = project.transform([portion.start, portion.end], engine_crs, crs)
        entry: dict[str, Any] = {
            "start": _xy(p_start),
            "end": _xy(p_end),
            "distance": distance_of(portion.distance),
            "duration": duration_of(portion.duration),
        }
        if get_bbox:
            if len(result.portions) == 1:
                entry["bbox"] = bbox(geometry)
            else:
                part, cursor = slice_between(geometry, p_start, p_end, cursor)
                entry["bbox"] = bbox(part)
        entry["steps"] = [
            {
                "geometry": write_geometry(line(project.transform(step.geometry, engine_crs, crs)), fmt),
                "attributes": step.attributes,
                "distance": distance_of(step.distance),
                "duration": duration_of(step.duration),
                "instruction": step.instruction,
            }
            for step in portion.steps
        ]
        portions.append(entry)
    start_out, end_out = project.transform([result.start, result.end], source.projection, crs)
    body: dict[str, Any] = {
        "resource": resource.id,
        "resourceVersion": source.data_version or resource.config.version,
        "start": _xy(start_out),
        "end": _xy(end_out),
        "profile": profile,
        "optimization": optimization,
        "geometry": result.extras["polyline"] if encoded and "polyline" in result.extras else write_geometry(line(geometry), fmt),
        "crs": crs,
        "distanceUnit": distance_unit,
        "timeUnit": time_unit,
    }
    if get_bbox:
        body["bbox"] = bbox(geometry)
    body["distance"] = units.from_engine(distance_unit, result.distance)
    body["duration"] = units.from_engine(time_unit, result.duration)
    body["constraints"] = [c.echo() for c in constraints]
    body["portions"] = portions
    return body


async def nearest(service: ServiceView, params: dict[str, Any]) -> dict[str, Any]:
    """The graph points nearest to ``coordinates``; distances in meters."""
    resource = _resource(service, params, "nearest")
    inputs = Inputs(params, resource.operation("nearest"), service.projections)
    crs = inputs.value("crs")
    point = inputs.point("coordinates", crs)
    number = inputs.value("nbPoints") or 1
    source = resource.source_for_nearest()
    (engine_point,) = service.projections.transform([point], crs, source.projection)
    result = await source.nearest(NearestRequest(engine_point, int(number)))
    located = service.projections.transform([p.point for p in result.points], source.projection, crs)
    return {
        "resource": resource.id,
        "resourceVersion": source.data_version or resource.config.version,
        "coordinates": params["coordinates"] if isinstance(params["coordinates"], str) else _xy(point),
        "crs": crs,
        "points": [
            {"id": str(i), "geometry": [xy[0], xy[1]], "distance": p.distance, **({"attributes": p.attributes} if p.attributes else {})}
            for i, (p, xy) in enumerate(zip(result.points, located, strict=True))
        ],
    }


async def isochrone(service: ServiceView, params: dict[str, Any]) -> dict[str, Any]:
    """Validate an isochrone request in Road2's order, compute it and write the response."""
    resource = _resource(service, params, "isochrone")
    inputs = Inputs(params, resource.operation("isochrone"), service.projections)
    crs = inputs.value("crs")
    point = inputs.point("point", crs)
    cost_type = inputs.value("costType")
    unit_name = "timeUnit" if cost_type == "time" else "distanceUnit"
    unit = inputs.value(unit_name)
    other = "distanceUnit" if cost_type == "time" else "timeUnit"
    if inputs.raw(other) is not None:
        inputs.value(other)  # not used by this cost type, still checked: a wrong value is a 400 whatever the cost type
    values = inputs.values("costValue")
    profile = inputs.value("profile")
    direction = inputs.value("direction")
    fmt = inputs.value("geometryFormat")
    source = resource.source_for_isochrone(profile, cost_type)
    date_time = _engine_date(inputs.date_time(), source)
    limit = source.isochrone_limit(cost_type)
    if limit is not None:
        most = service.units.largest(unit, limit, cost_type)
        if any(v > most for v in values):
            raise ParameterInvalid("costValue", f"expected at most {most:g} ({unit}): the engine computes no larger {cost_type} isochrone")
    constraints = inputs.values("constraints")
    check_bans(
        resource.operation("isochrone")["constraints"],
        source,
        constraints,
        Cost(profile, cost_type=cost_type),
        f"profile '{profile}' and costType '{cost_type}'",
    )
    asked = [service.units.to_engine(unit, round(v, 1), cost_type, parameter=unit_name) for v in values]
    # The engine computes each value once (a value given twice, or two that round alike, share a contour):
    # the document can't say "distinct" of a '|'-separated text, so the same value twice is no error.
    engine_values = tuple(dict.fromkeys(asked))
    (engine_point,) = service.projections.transform([point], crs, source.projection)
    result = await source.isochrone(
        IsochroneRequest(engine_point, Cost(profile, cost_type=cost_type), engine_values, direction, tuple(constraints), date_time)
    )
    computed = dict(zip(engine_values, (_reproject(service, g, source.projection, crs) for g in result.geometries), strict=True))
    geometries = [computed[v] for v in asked]
    body: dict[str, Any] = {
        "point": params["point"] if isinstance(params["point"], str) else _xy(point),
        "resource": resource.id,
        "resourceVersion": source.data_version or resource.config.version,
        "costType": cost_type,
        "costValue": values[0] if len(values) == 1 else values,
        unit_name: unit,
        "profile": profile,
        "direction": direction,
        "crs": crs,
        "geometry": write_geometry(geometries[0], fmt),
        "constraints": [c.echo() for c in constraints],
    }
    if len(values) > 1:
        body["contours"] = [
            {"costValue": v, "geometry": write_geometry(g, fmt), "reachable": g["type"] != "Point"}
            for v, g in zip(values, geometries, strict=True)
        ]
    body["reachable"] = geometries[0]["type"] != "Point"
    return body


def _reproject(service: ServiceView, geometry: Mapping[str, Any], source: str, target: str) -> Mapping[str, Any]:
    kind = geometry["type"]
    if source == target and kind in ("Point", "Polygon", "MultiPolygon"):
        return geometry  # written as it is: no copy of every coordinate
    coords = geometry["coordinates"]
    tr = service.projections.transform
    if kind == "Point":
        (xy,) = tr([coords], source, target)
        return {"type": kind, "coordinates": list(xy)}
    if kind == "Polygon":
        return {"type": kind, "coordinates": [[list(c) for c in tr(ring, source, target)] for ring in coords]}
    if kind == "MultiPolygon":
        return {"type": kind, "coordinates": [[[list(c) for c in tr(ring, source, target)] for ring in poly] for poly in coords]}
    # The engine's answer, not the request, is wrong: a bad gateway, never the user's 400.
    raise EngineError(f"The engine answered an isochrone geometry of unexpected type {kind!r}")


async def matrix(service: ServiceView, params: dict[str, Any]) -> dict[str, Any]:
    """Durations and distances from each source to each target (the sources when no target is given)."""
    resource = _resource(service, params, "matrix")
    operation = resource.operation("matrix")
    inputs = Inputs(params, operation, service.projections)
    crs = inputs.value("crs")
    sources = inputs.listed_points("sources", crs)
    targets = inputs.listed_points("targets", crs)
    most = operation.limits["cells"]
    cells = len(sources) * len(targets or sources)
    if cells > most:
        name = "targets" if targets else "sources"
        raise ParameterInvalid(
            name, f"{len(sources)} sources x {len(targets or sources)} targets make {cells} cells: expected at most {most} on this resource"
        )
    profile = inputs.value("profile")
    optimization = inputs.value("optimization")
    source = resource.source_for_route(profile, optimization)
    time_unit = inputs.value("timeUnit")
    distance_unit = inputs.value("distanceUnit")
    date_time = _engine_date(inputs.date_time(), source)
    constraints = inputs.values("constraints")
    check_bans(
        operation["constraints"], source, constraints, Cost(profile, optimization), f"profile '{profile}' and optimization '{optimization}'"
    )

    project = service.projections.transform
    engine_sources = tuple(project(sources, crs, source.projection))
    engine_targets = tuple(project(targets, crs, source.projection)) if targets else engine_sources
    result = await source.matrix(MatrixRequest(engine_sources, engine_targets, Cost(profile, optimization), tuple(constraints), date_time))
    rows, columns = len(engine_sources), len(engine_targets)
    if (
        len(result.sources) != rows
        or len(result.targets) != columns
        or not _shaped(result.durations, rows, columns)
        or not _shaped(result.distances, rows, columns)
    ):
        # The engine's answer, not the request, is wrong: a bad gateway, never the user's 400.
        raise EngineError(f"The engine answered a matrix of another shape than {rows} x {columns}")
    distance_of = service.units.writer(distance_unit)

    def snapped(points: list[NearestPoint]) -> list[dict[str, Any]]:
        located = project([p.point for p in points], source.projection, crs)
        return [{"geometry": [xy[0], xy[1]], "distance": distance_of(p.distance)} for p, xy in zip(points, located, strict=True)]

    return {
        "resource": resource.id,
        "resourceVersion": source.data_version or resource.config.version,
        "profile": profile,
        "optimization": optimization,
        "crs": crs,
        "timeUnit": time_unit,
        "distanceUnit": distance_unit,
        "sources": snapped(result.sources),
        "targets": snapped(result.targets),
        "durations": _written(service, time_unit, result.durations),
        "distances": _written(service, distance_unit, result.distances),
        "constraints": [c.echo() for c in constraints],
    }


def _shaped(values: list[list[float | None]], rows: int, columns: int) -> bool:
    return len(values) == rows and all(len(row) == columns for row in values)


def _written(service: ServiceView, unit: str, values: list[list[float | None]]) -> list[list[Any]]:
    """Seconds or meters in ``unit``, ``None`` (no path) kept."""
    if unit != STANDARD and service.units[unit].factor == 1.0:
        return values  # written as they are: no work per cell
    write = service.units.writer(unit)
    return [[None if value is None else write(value) for value in row] for row in values]
