"""The native ``table`` service answered by any source that computes matrices (Valhalla, pgRouting...).

OSRM sources answer ``table`` with their own engine (:mod:`roadkit_osrm.native.engine`). A source of
another kind answers it through ``Source.matrix`` when its resource offers the simple API's
``matrix``, within that operation's limits (most sources, targets and cells), shaped
as osrm-routed shapes its table: durations rounded to 0.1 s (times ``scale_factor``), distances to
0.1 m, ``sources`` and ``destinations`` waypoints at their snapped locations, members in
osrm-routed's order. The request is refused as osrm-routed refuses it (limits, indexes). The
options only OSRM's own snapping and fallbacks know (:data:`LEFT_OUT`) are not in the API's document
for such a table, and a value that asks something of them is a 400 naming the option; hints are
read by OSRM only and ignored here, as ``fallback_coordinate`` is without ``fallback_speed``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from roadkit.contract.apis import Resource
from roadkit.contract.native_osrm import NativeAnswer, NativeLimits, NativeRequest, NativeSource
from roadkit.contract.sources import Coord, Cost, MatrixRequest, MatrixResponse, NearestPoint, PointNotSnapped, Source
from roadkit_osrm.native.engine import refusal
from roadkit_osrm.native.render import error_body

_number = "{:.10g}".format
#: The options of OSRM's snapping and fallbacks that a table through a matrix cannot apply (as the
#: document names them: ``fallback_coordinate`` is parsed as ``fallback_coordinate_type``).
LEFT_OUT = ("bearings", "radiuses", "approaches", "exclude", "fallback_speed", "fallback_coordinate", "snapping")
_UNAVAILABLE = ("bearings", "radiuses", "approaches", "exclude", "fallback_speed", "snapping")

Transform = Callable[[Sequence[Coord], str, str], list[Coord]]


def native_services(source: Source, resource: Resource) -> tuple[str, ...]:
    """The native services ``source`` answers: its own, and ``table`` through its matrix (see :func:`by_matrix`)."""
    own: tuple[str, ...] = source.native_services if isinstance(source, NativeSource) else ()
    return (*own, "table") if by_matrix(source, resource) else own


def by_matrix(source: Source, resource: Resource) -> bool:
    """Whether ``table`` on ``source`` goes through its matrix: no table of its own, and a resource offering ``matrix``."""
    own: tuple[str, ...] = source.native_services if isinstance(source, NativeSource) else ()
    return "table" not in own and "matrix" in type(source).operations and "matrix" in resource.operations


def answers(source: Source, cost: Cost, resource: Resource, service: str) -> bool:
    """Whether ``source`` answers ``service`` for ``cost``: a table through a matrix takes only the profiles
    and optimizations the resource's matrix lists (a Valhalla matrix has no multimodal profile)."""
    if service not in native_services(source, resource):
        return False
    if service != "table" or not by_matrix(source, resource):
        return True
    parameters = resource.operations["matrix"].parameters
    return all(
        value in getattr(parameters.get(name), "values", (value,))
        for name, value in (("profile", cost.profile), ("optimization", cost.optimization))
    )


def table_limits(limits: NativeLimits, resource: Resource) -> NativeLimits:
    """``limits`` with the largest table the resource's matrix allows: osrm-routed bounds sources x destinations
    by ``max_table_size`` squared, so the square root of the most cells (and at most the most sources or targets)."""
    most = resource.operations["matrix"].limits
    return limits.narrowed({"max_table_size": min(most["sources"], most["targets"], math.isqrt(most["cells"]))})


def _asks_nothing(name: str, value: Any) -> bool:
    if name == "radiuses":
        return all(r is None or math.isinf(r) for r in value)
    if name in ("bearings", "approaches"):
        return all(v is None for v in value)
    if name == "snapping":
        return value in ("default", "")
    return not value if name == "exclude" else False


def _unavailable(params: dict[str, Any]) -> NativeAnswer | None:
    for name in _UNAVAILABLE:
        if name in params and not _asks_nothing(name, params[name]):
            return NativeAnswer(400, error_body("InvalidOptions", f"{name} is not available on this service"))
    return None


def _outside(source: Source, coordinates: Sequence[Coord]) -> NativeAnswer | None:
    """osrm-routed's NoSegment for the first coordinate outside the source's area, if any."""
    box = source.native_bbox if isinstance(source, NativeSource) else None
    if box is None:
        return None
    for index, (lon, lat) in enumerate(coordinates):
        if not (box[0] <= lon <= box[2] and box[1] <= lat <= box[3]):
            return _no_segment(index)
    return None


def _no_segment(index: int) -> NativeAnswer:
    return NativeAnswer(400, error_body("NoSegment", f"Could not find a matching segment for coordinate {index}"))


async def table(source: Source, resource: Resource, request: NativeRequest, transform: Transform) -> NativeAnswer:
    """osrm-routed's answer to a native ``table`` request, computed by ``source.matrix`` (``request.limits``
    narrowed by :func:`table_limits`)."""
    _, refused = refusal(request)
    if refused is not None:
        return refused
    params = request.params
    refused = _unavailable(params) or _outside(source, params["coordinates"])
    if refused is not None:
        return refused
    coordinates: list[Coord] = [(float(x), float(y)) for x, y in params["coordinates"]]
    rows: list[int] = list(params.get("sources") or range(len(coordinates)))
    columns: list[int] = list(params.get("destinations") or range(len(coordinates)))
    most = resource.operations["matrix"].limits
    if len(rows) > most["sources"] or len(columns) > most["targets"]:
        return NativeAnswer(400, error_body("TooBig", "Too many table coordinates"))
    projected = transform(coordinates, "EPSG:4326", source.projection)
    try:
        answer = await source.matrix(MatrixRequest(tuple(projected[i] for i in rows), tuple(projected[j] for j in columns), request.cost))
    except PointNotSnapped as exc:
        return _no_segment((rows if exc.parameter == "sources" else columns)[exc.index])
    return NativeAnswer(200, _render(answer, params, transform, source.projection).encode())


def _render(answer: MatrixResponse, params: dict[str, Any], transform: Transform, projection: str) -> str:
    annotations = params.get("annotations") or ["duration"]
    scale = float(params.get("scale_factor", 1.0))
    members = ['"code":"Ok"']
    if "distance" in annotations:
        members.append('"distances":' + _matrix(answer.distances, 1.0))
    waypoints = not params.get("skip_waypoints", False)
    if waypoints:
        members.append('"destinations":' + _waypoints(answer.targets, transform, projection))
    if "duration" in annotations:
        members.append('"durations":' + _matrix(answer.durations, scale))
    if waypoints:
        members.append('"sources":' + _waypoints(answer.sources, transform, projection))
    return "{" + ",".join(members) + "}"


def _matrix(values: list[list[float | None]], factor: float) -> str:
    return "[" + ",".join("[" + ",".join("null" if v is None else _number(round(v * factor, 1)) for v in row) + "]" for row in values) + "]"


def _waypoints(points: list[NearestPoint], transform: Transform, projection: str) -> str:
    located = transform([p.point for p in points], projection, "EPSG:4326")
    return (
        "["
        + ",".join(
            f'{{"distance":{_number(p.distance)},"name":"","location":[{_number(round(xy[0], 6))},{_number(round(xy[1], 6))}]}}'
            for p, xy in zip(points, located, strict=True)
        )
        + "]"
    )
