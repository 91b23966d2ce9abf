"""The engine-agnostic request and response model.

APIs build requests from HTTP parameters and write responses; engine plugins take requests and
return responses. Coordinates are ``(x, y)`` tuples in the *source's* CRS on the way in and out of a
source; the API reprojects them into the CRS the user asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import attrs
import orjson

Coord = tuple[float, float]
CostType = Literal["time", "distance"]
Direction = Literal["departure", "arrival"]
ConstraintType = Literal["banned", "prefer", "avoid"]


@attrs.frozen
class Cost:
    """What a source can compute: a profile with an optimization (routes) and a cost type (isochrones)."""

    profile: str
    optimization: str | None = None
    cost_type: CostType | None = None


@attrs.frozen
class ConstraintKeyType:
    """A kind of constraint key (``keyType`` in resource files) that a source kind handles.

    ``operators``: what users may send in ``operator``; ``numeric``: the user's value is a number
    applied to the key's ``field`` (Road2's ``numerical-pgr``), not one of the key's ``availableValues``.
    """

    operators: tuple[str, ...] = ("=",)
    numeric: bool = False


@attrs.frozen
class Constraint:
    """A user constraint, resolved against the resource: ``field`` is the engine-side name."""

    type: ConstraintType
    key: str
    operator: str
    value: Any
    field: str | None = None
    condition: Any = None
    ratio: float | None = None

    def echo(self) -> dict[str, Any]:
        """The constraint as the API echoes it back to the user."""
        return {"type": self.type, "key": self.key, "operator": self.operator, "value": self.value}


@attrs.frozen
class Vehicle:
    """The vehicle a route must be passable by (sources whose ``vehicle_limits`` name the dimension): None where not asked."""

    #: Height in metres.
    height: float | None = None
    #: Weight in metric tons (tonnes).
    weight: float | None = None


@attrs.frozen
class RouteRequest:
    """A route through ``points`` (start, intermediates..., end) for one cost of one source."""

    points: tuple[Coord, ...]
    cost: Cost
    steps: bool = True
    ways_attributes: tuple[str, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    date_time: datetime | None = None
    #: Whether ``date_time`` is when the route must arrive rather than leave (sources that read a date_time).
    arrive_by: bool = False
    #: The API writes the route's geometry as a precision-5 polyline in the source's CRS and needs
    #: no coordinates: a source may answer the encoded line in ``RouteResponse.extras["polyline"]``
    #: (the engine's own encoding) and leave ``geometry`` empty.
    polyline: bool = False
    #: Areas the route must not cross: each a polygon's outer ring, in the source's CRS (sources with ``avoids_areas``).
    avoid: tuple[tuple[Coord, ...], ...] = ()
    #: The vehicle's dimensions, None: any vehicle of the cost's profile (sources with ``vehicle_limits``).
    vehicle: Vehicle | None = None

    @property
    def start(self) -> Coord:
        return self.points[0]

    @property
    def end(self) -> Coord:
        return self.points[-1]


@attrs.frozen
class Step:
    """One maneuver of a portion; ``instruction`` has OSRM's shape (type, modifier?, exit?).

    ``geometry``: a list of coordinates, or a :class:`LineText` an engine wrote as GeoJSON."""

    geometry: Sequence[Coord]
    distance: float
    duration: float
    attributes: dict[str, Any] = attrs.field(factory=dict)
    instruction: dict[str, Any] = attrs.field(factory=dict)


def way_name(name: str) -> Any:
    """A way name for step attributes: names that hold JSON (r2gg graphs) parsed, others as they are."""
    if name[:1] in ("{", "["):  # not "" (an unnamed way)
        try:
            return json.loads(name)
        except ValueError:
            pass
    return name


@attrs.frozen
class Portion:
    """The part of a route between two consecutive waypoints (an engine leg)."""

    start: Coord
    end: Coord
    distance: float
    duration: float
    steps: list[Step] = attrs.field(factory=list)


@attrs.frozen
class RouteResponse:
    """A computed route; distances in meters, durations in seconds, geometry in the source CRS.

    ``extras`` carries engine-native fields that a native API (e.g. OSRM v1) may need.
    """

    start: Coord
    end: Coord
    geometry: Sequence[Coord]  # a list, or a LineText
    distance: float
    duration: float
    portions: list[Portion]
    extras: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class NearestRequest:
    """Up to ``number`` graph points nearest to ``point``."""

    point: Coord
    number: int = 1


@attrs.frozen
class NearestPoint:
    """A snapped point and its distance in meters from the requested one."""

    point: Coord
    distance: float
    attributes: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class NearestResponse:
    """The nearest graph points, nearest first."""

    points: list[NearestPoint]


@attrs.frozen
class MatrixRequest:
    """Travel durations and distances from each of ``sources`` to each of ``targets``, for one cost of one source."""

    sources: tuple[Coord, ...]
    targets: tuple[Coord, ...]
    cost: Cost
    constraints: tuple[Constraint, ...] = ()
    date_time: datetime | None = None


@attrs.frozen
class MatrixResponse:
    """One row per source, one column per target: seconds and meters, ``None`` where no path leads.

    ``sources`` and ``targets`` are the points as snapped on the network (source CRS), each with its
    snapping distance in meters.
    """

    sources: list[NearestPoint]
    targets: list[NearestPoint]
    durations: list[list[float | None]]
    distances: list[list[float | None]]


@attrs.frozen
class IsochroneRequest:
    """Areas reachable within each of ``cost_values`` (seconds for time, meters for distance)."""

    point: Coord
    cost: Cost
    cost_values: tuple[float, ...]
    direction: Direction = "departure"
    constraints: tuple[Constraint, ...] = ()
    date_time: datetime | None = None


class GeoJSONText(Mapping[str, Any]):
    """A geometry already written as GeoJSON (exactly as ``orjson.dumps`` writes its dict), read on demand.

    An engine that answers GeoJSON can hand its geometry over without building a Python object per
    coordinate: the GeoJSON output writes ``text`` as it is, and reading it as a mapping (``type``,
    ``coordinates``: reprojection, polyline or WKT output) parses the coordinates on first use.
    """

    __slots__ = ("_coordinates", "text", "type")

    def __init__(self, kind: str, text: str | bytes, coordinates: Any = None) -> None:
        self.type = kind
        self.text = text
        self._coordinates: Any = coordinates  # when already read

    def __getitem__(self, key: str) -> Any:
        if key == "type":
            return self.type
        if key == "coordinates":
            if self._coordinates is None:
                self._coordinates = orjson.loads(self.text)["coordinates"]
            return self._coordinates
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(("type", "coordinates"))

    def __len__(self) -> int:
        return 2

    @property
    def __geo_interface__(self) -> dict[str, Any]:
        return {"type": self.type, "coordinates": self["coordinates"]}

    def __repr__(self) -> str:
        return f"GeoJSONText({self.type!r}, {self.text[:60]!r}...)"


class LineText(Sequence[Coord]):
    """A line's coordinates as an engine wrote them, a GeoJSON ``LineString`` (as ``orjson.dumps`` writes
    its dict), read on demand.

    The GeoJSON output inserts ``text`` as it is (:func:`roadkit.routing.geometry.line`); anything
    else (another CRS, polyline, WKT, a bbox) reads the coordinates, parsed once, as ``(x, y)`` tuples.
    A route of a hundred points then costs no Python object per coordinate when asked in GeoJSON.
    """

    __slots__ = ("_coords", "text")

    def __init__(self, text: str | bytes) -> None:
        self.text = text
        self._coords: list[Coord] | None = None

    @property
    def coords(self) -> list[Coord]:
        if self._coords is None:
            self._coords = list(map(tuple, orjson.loads(self.text)["coordinates"]))
        return self._coords

    def geojson(self) -> GeoJSONText:
        """The line as a GeoJSON geometry: its text, and its coordinates once read."""
        return GeoJSONText("LineString", self.text, self._coords)

    def __getitem__(self, index: Any) -> Any:
        return self.coords[index]

    def __len__(self) -> int:
        return len(self.coords)

    def __iter__(self) -> Iterator[Coord]:
        return iter(self.coords)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self.coords) == list(other)

    def __hash__(self) -> int:
        return hash(tuple(self.coords))

    def __repr__(self) -> str:
        return f"LineText({self.text[:60]!r}...)"


@attrs.frozen
class IsochroneResponse:
    """One GeoJSON-like geometry per cost value, in the order of the request's values.

    A geometry is a ``Polygon``/``MultiPolygon``, or a ``Point`` at the start when the cost value is
    too small to form an area: a dict, or a :class:`GeoJSONText` the engine wrote.
    """

    point: Coord
    geometries: list[Mapping[str, Any]]
