"""The ``straight`` source kind: answers computed in straight lines, for tests without an engine.

A route is the straight line through its points: its distance is the great-circle length of the
line (a sphere of radius :data:`EARTH_RADIUS` meters), its duration that distance at the speed of
the request's cost; each leg is a portion with two steps (``depart`` along the leg, ``arrive`` at
its end). An isochrone is a circle around the point whose radius is the speed times the time (or
the distance itself), a :data:`CIRCLE_VERTICES`-gon; a value of 0 reaches only the point (a
``Point``). The nearest points are the point itself, as many times as asked, at distance 0. A
matrix holds the great-circle distances between its points and their durations at the cost's speed,
every point snapped where it is (distance 0).

A ``.source`` file of the kind (lon/lat sources only, ``projection = "EPSG:4326"``)::

    id = "straight"
    type = "straight"
    projection = "EPSG:4326"

    [[costs]]
    profile = "car"
    optimization = "fastest"   # routes of (car, fastest)
    cost_type = "time"         # isochrones of (car, time)
    speed = 36.0               # km/h (10 m/s; the default)

    [[costs]]
    profile = "pedestrian"
    optimization = "fastest"
    speed = 3.6

    [limits]                   # optional: the largest isochrones (Source.isochrone_limit)
    isochrone_time = 3600      # seconds
    isochrone_distance = 50000 # meters

The kind is no installed plugin: production services never see it. This module is the plugin
object (its ``roadkit_source_kinds`` hook implementation) that test code registers as an extra
plugin, as :func:`roadkit.testing.plugins_for_tests` and the ``roadkit_plugins`` fixture do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import attrs

from roadkit import hookimpl
from roadkit.config.convert import structure
from roadkit.config.models import SourceConfig
from roadkit.errors import ConfigurationError
from roadkit.routing.model import (
    Coord,
    Cost,
    IsochroneRequest,
    IsochroneResponse,
    MatrixRequest,
    MatrixResponse,
    NearestPoint,
    NearestRequest,
    NearestResponse,
    Portion,
    RouteRequest,
    RouteResponse,
    Step,
)
from roadkit.routing.source import CostTable, Source

#: The radius of the sphere on which distances are measured (the mean Earth radius, meters).
EARTH_RADIUS = 6_371_008.8
#: The vertices of an isochrone's circle (the ring closes with a copy of the first).
CIRCLE_VERTICES = 64
DEFAULT_SPEED = 36.0  # km/h: 10 m/s


@attrs.frozen
class StraightCost:
    """One cost: a profile with an optimization (routes) and/or a cost type (isochrones), at ``speed`` km/h."""

    profile: str
    optimization: str | None = None
    cost_type: Literal["time", "distance"] | None = None
    speed: float = DEFAULT_SPEED

    @property
    def meters_per_second(self) -> float:
        return self.speed / 3.6


@attrs.frozen
class StraightLimits:
    """The largest isochrones the kind computes: seconds and meters (None: no limit)."""

    isochrone_time: float | None = None
    isochrone_distance: float | None = None


@attrs.frozen
class StraightOptions:
    """The kind-specific part of a ``straight`` source file."""

    costs: tuple[StraightCost, ...] = (
        StraightCost("car", "fastest", "time"),
        StraightCost("car", "shortest", "distance"),
    )
    limits: StraightLimits = StraightLimits()


def _problems(config: SourceConfig, options: StraightOptions) -> list[str]:
    problems: list[str] = []
    if config.projection != "EPSG:4326":
        problems.append(
            f"{config.path}: projection: the straight kind measures lon/lat lines, expected 'EPSG:4326', got {config.projection!r}"
        )
    if not options.costs:
        problems.append(f"{config.path}: costs: expected at least one cost")
    seen: set[tuple[str, str]] = set()
    for i, cost in enumerate(options.costs):
        where = f"{config.path}: costs[{i}]"
        if cost.optimization is None and cost.cost_type is None:
            problems.append(f"{where}: expected an optimization (routes) or a cost_type (isochrones), got neither")
        if not cost.speed > 0:
            problems.append(f"{where}.speed: expected km/h above 0, got {cost.speed}")
        keys = [f"optimization {cost.optimization}" if cost.optimization else "", f"cost_type {cost.cost_type}" if cost.cost_type else ""]
        for key in filter(None, keys):
            if (cost.profile, key) in seen:
                problems.append(f"{where}: profile {cost.profile!r} with {key} is declared twice")
            seen.add((cost.profile, key))
    for name, value in attrs.asdict(options.limits).items():
        if value is not None and not value > 0:
            problems.append(f"{config.path}: limits.{name}: expected a positive number, got {value}")
    return problems


def great_circle(a: Coord, b: Coord) -> float:
    """The great-circle distance in meters between two lon/lat points (haversine, on :data:`EARTH_RADIUS`)."""
    lon1, lat1, lon2, lat2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * EARTH_RADIUS * math.asin(min(1.0, math.sqrt(h)))


def destination(start: Coord, bearing: float, distance: float) -> Coord:
    """The lon/lat point ``distance`` meters from ``start`` at ``bearing`` degrees (clockwise from north)."""
    lon, lat, theta, delta = math.radians(start[0]), math.radians(start[1]), math.radians(bearing), distance / EARTH_RADIUS
    lat2 = math.asin(math.sin(lat) * math.cos(delta) + math.cos(lat) * math.sin(delta) * math.cos(theta))
    lon2 = lon + math.atan2(math.sin(theta) * math.sin(delta) * math.cos(lat), math.cos(delta) - math.sin(lat) * math.sin(lat2))
    return (math.degrees(lon2) + 540) % 360 - 180, math.degrees(lat2)


def circle(center: Coord, radius: float) -> dict[str, Any]:
    """A GeoJSON polygon of :data:`CIRCLE_VERTICES` points ``radius`` meters around ``center`` (a Point for 0)."""
    if radius <= 0:
        return {"type": "Point", "coordinates": [center[0], center[1]]}
    ring = [list(destination(center, 360.0 * i / CIRCLE_VERTICES, radius)) for i in range(CIRCLE_VERTICES)]
    return {"type": "Polygon", "coordinates": [[*ring, ring[0]]]}


class StraightSource(Source):
    """Answers in straight lines at each cost's speed: the core's behaviour, tested without an engine."""

    kind = "straight"
    options_class = StraightOptions
    operations = frozenset({"route", "isochrone", "nearest", "matrix"})

    def __init__(self, config: SourceConfig, options: StraightOptions, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self.table = CostTable(config.id, options.costs)

    @classmethod
    def parse_options(cls, config: SourceConfig) -> StraightOptions:
        options = structure(config.options, StraightOptions, config.path)
        problems = _problems(config, options)
        if problems:
            raise ConfigurationError(problems)
        return options

    def costs(self) -> Sequence[Cost]:
        return self.table.costs()

    def resolve_cost(self, cost: Cost) -> StraightCost:
        return self.table.find(cost)

    def isochrone_limit(self, cost_type: str) -> float | None:
        limits: StraightLimits = self.options.limits
        return limits.isochrone_time if cost_type == "time" else limits.isochrone_distance

    async def route(self, request: RouteRequest) -> RouteResponse:
        speed = self._cost(request.cost).meters_per_second
        portions = []
        for a, b in zip(request.points, request.points[1:], strict=False):
            distance = great_circle(a, b)
            duration = distance / speed
            steps = (
                [
                    Step([a, b], distance, duration, {"name": ""}, {"type": "depart"}),
                    Step([b, b], 0.0, 0.0, {"name": ""}, {"type": "arrive"}),
                ]
                if request.steps
                else []
            )
            portions.append(Portion(a, b, distance, duration, steps))
        return RouteResponse(
            request.start,
            request.end,
            list(request.points),
            sum(p.distance for p in portions),
            sum(p.duration for p in portions),
            portions,
        )

    async def isochrone(self, request: IsochroneRequest) -> IsochroneResponse:
        cost = self._cost(request.cost)
        per_unit = cost.meters_per_second if request.cost.cost_type == "time" else 1.0
        return IsochroneResponse(request.point, [circle(request.point, value * per_unit) for value in request.cost_values])

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        return NearestResponse([NearestPoint(request.point, 0.0) for _ in range(request.number)])

    async def matrix(self, request: MatrixRequest) -> MatrixResponse:
        speed = self._cost(request.cost).meters_per_second
        meters = [[great_circle(a, b) for b in request.targets] for a in request.sources]
        durations: list[list[float | None]] = [[d / speed for d in row] for row in meters]
        distances: list[list[float | None]] = [list(row) for row in meters]
        return MatrixResponse(
            [NearestPoint(p, 0.0) for p in request.sources], [NearestPoint(p, 0.0) for p in request.targets], durations, distances
        )

    def _cost(self, cost: Cost) -> StraightCost:
        setting = self.setting(cost)
        return setting if isinstance(setting, StraightCost) else self.table.find(cost)


@hookimpl
def roadkit_source_kinds() -> Sequence[type[Source]]:
    """The ``straight`` kind (this module is the plugin object tests register)."""
    return [StraightSource]
