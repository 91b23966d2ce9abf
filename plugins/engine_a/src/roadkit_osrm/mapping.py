"""OSRM requests from roadkit requests, and roadkit responses from OSRM answers: one mapping for every OSRM source.

The in-process source (``osrm``) and the remote one (``osrm-http``) ask the same questions and read
the same answers. A query builds either the binding's parameters or osrm-routed's URL; the readers
take any JSON-like answer: the binding's ``osrm.Object`` (read in place, without a copy: every item
access copies the part below it, so each part is read once) or the dict of a parsed HTTP answer.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, ClassVar

import attrs
from pypolyline.cutil import decode_polyline

from roadkit.contract.apis import BadRequest
from roadkit.contract.sources import (
    ConstraintKeyType,
    Coord,
    Cost,
    EngineError,
    MatrixRequest,
    MatrixResponse,
    NearestPoint,
    NearestRequest,
    NearestResponse,
    NoPathFound,
    ParameterInvalid,
    PointNotSnapped,
    Portion,
    RoadkitError,
    RouteRequest,
    RouteResponse,
    Step,
    way_name,
)

# OSRM's answer codes meaning "nothing connects these points" (404), as opposed to a failure.
NO_PATH_CODES = frozenset({"NoRoute", "NoSegment", "NoMatch", "NoTrips", "NoTable"})
#: OSRM's error codes for requests it refuses (osrm/engine/status and api parameter checks).
REQUEST_ERROR_CODES = frozenset({"InvalidValue", "InvalidOptions", "InvalidQuery", "InvalidUrl", "TooBig"})
#: The message of a ban combination the dataset's profile did not declare excludable.
EXCLUDE_UNSUPPORTED = "Exclude flag combination is not supported"
#: OSRM's message for a coordinate it snaps to no segment (NoSegment), with the coordinate's index.
_UNSNAPPED = re.compile(r"for coordinate (\d+)")


def _lonlat(point: Coord) -> str:
    return f"{point[0]!r},{point[1]!r}"


class OsrmKind:
    """What every OSRM source kind declares and answers alike, in process (``osrm``) or over HTTP (``osrm-http``)."""

    operations = frozenset({"route", "nearest", "matrix"})
    #: banned values are OSRM exclude classes
    constraint_key_types: ClassVar[Mapping[str, ConstraintKeyType]] = {"name-osrm": ConstraintKeyType(("=",))}
    #: services of the native OSRM API these sources answer (see roadkit.contract.native_osrm)
    native_services: ClassVar[tuple[str, ...]] = ("route", "nearest", "table", "trip", "match", "tile")
    options: Any

    def costs(self) -> Sequence[Cost]:
        return [Cost(self.options.cost.profile, self.options.cost.optimization)]

    def constraint_problem(self, operation: str, constraint_type: str, key_type: str, field: str | None) -> str | None:
        return constraint_problem(constraint_type)


@attrs.frozen
class RouteQuery:
    """An OSRM route request: full GeoJSON overview, steps when asked, excluded classes."""

    coordinates: tuple[Coord, ...]
    steps: bool
    exclude: tuple[str, ...] = ()
    #: the API wants OSRM's own precision-5 polyline of the route, not its coordinates
    polyline: bool = False

    @classmethod
    def of(cls, request: RouteRequest) -> RouteQuery:
        """The query of a roadkit route request (banned constraints become OSRM exclude classes)."""
        exclude = tuple(sorted({c.field for c in request.constraints if c.type == "banned" and c.field}))
        return cls(tuple(request.points), request.steps, exclude, polyline=request.polyline and not request.steps)

    def parameters(self) -> Any:
        """The osrm-bindings parameters of this query."""
        import osrm

        # polyline6: the engine writes a string instead of building an object per coordinate, and
        # decoding it (compiled) gives exactly the GeoJSON coordinates (both are OSRM's 1e-6 fixed
        # point: checked equal on every Monaco route of the benchmarks); a third of the engine's cost.
        params = osrm.RouteParameters(
            coordinates=list(self.coordinates),
            steps=self.steps,
            geometries="polyline" if self.polyline else "polyline6",
            overview="full",
            exclude=list(self.exclude),
        )
        params.generate_hints = False  # nobody reads them: the engine neither writes nor copies them
        return params

    def path(self, profile: str) -> str:
        """osrm-routed's path of this query (the profile segment is osrm-routed's, not a roadkit cost)."""
        return f"/route/v1/{profile}/" + ";".join(_lonlat(p) for p in self.coordinates)

    def params(self) -> dict[str, str]:
        """osrm-routed's query string of this query."""
        params = {"steps": "true" if self.steps else "false", "geometries": "polyline" if self.polyline else "geojson", "overview": "full"}
        if self.exclude:
            params["exclude"] = ",".join(self.exclude)
        return params


@attrs.frozen
class NearestQuery:
    """An OSRM nearest request: the ``number`` graph points nearest to ``point``."""

    point: Coord
    number: int = 1

    @classmethod
    def of(cls, request: NearestRequest) -> NearestQuery:
        return cls(request.point, request.number)

    def parameters(self) -> Any:
        """The osrm-bindings parameters of this query."""
        import osrm

        params = osrm.NearestParameters(coordinates=[self.point])
        params.number_of_results = self.number
        params.generate_hints = False
        return params

    def path(self, profile: str) -> str:
        return f"/nearest/v1/{profile}/{_lonlat(self.point)}"

    def params(self) -> dict[str, str]:
        return {"number": str(self.number)}


@attrs.frozen
class TableQuery:
    """An OSRM table request: durations and distances from the sources to the targets, excluded classes.

    A square matrix (the targets are the sources) sends its points once; otherwise the sources come
    first, then the targets, each indexed by OSRM's ``sources`` and ``destinations``.
    """

    sources: tuple[Coord, ...]
    targets: tuple[Coord, ...]
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, request: MatrixRequest) -> TableQuery:
        exclude = tuple(sorted({c.field for c in request.constraints if c.type == "banned" and c.field}))
        return cls(tuple(request.sources), tuple(request.targets), exclude)

    @property
    def square(self) -> bool:
        # OSRM refuses a table of one coordinate: one point is sent as its own source and target.
        return self.sources == self.targets and len(self.sources) > 1

    def coordinates(self) -> list[Coord]:
        return list(self.sources) if self.square else [*self.sources, *self.targets]

    def indexes(self) -> tuple[list[int], list[int]]:
        """OSRM's ``sources`` and ``destinations`` (empty lists: every coordinate, for a square matrix)."""
        if self.square:
            return [], []
        n = len(self.sources)
        return list(range(n)), list(range(n, n + len(self.targets)))

    def parameters(self) -> Any:
        """The osrm-bindings parameters of this query."""
        import osrm

        sources, destinations = self.indexes()
        params = osrm.TableParameters(
            coordinates=self.coordinates(),
            sources=sources,
            destinations=destinations,
            annotations=["duration", "distance"],
            exclude=list(self.exclude),
        )
        params.generate_hints = False
        return params

    def path(self, profile: str) -> str:
        return f"/table/v1/{profile}/" + ";".join(_lonlat(p) for p in self.coordinates())

    def params(self) -> dict[str, str]:
        """osrm-routed's query string of this query."""
        params = {"annotations": "duration,distance", "generate_hints": "false"}
        sources, destinations = self.indexes()
        if sources:
            params["sources"] = ";".join(map(str, sources))
            params["destinations"] = ";".join(map(str, destinations))
        if self.exclude:
            params["exclude"] = ",".join(self.exclude)
        return params

    def error(self, code: str, message: str) -> RoadkitError:
        """The roadkit error for OSRM's error answer: a point snapped nowhere names its parameter and index."""
        found = _UNSNAPPED.search(message) if code == "NoSegment" else None
        if found is not None:
            index = int(found.group(1))
            if self.square or index < len(self.sources):
                return PointNotSnapped("sources", index)
            return PointNotSnapped("targets", index - len(self.sources))
        return engine_error(code, message)


def table(engine: Any, query: TableQuery) -> MatrixResponse:
    """The matrix of ``query`` computed by an ``osrm.OSRM`` engine (in the engine's child process)."""
    try:
        answer = engine.Table(query.parameters())
    except RuntimeError as exc:
        raise query.error(*split_error(str(exc))) from None
    return matrix_response(answer, query)


def matrix_response(answer: Any, query: TableQuery) -> MatrixResponse:
    """A roadkit matrix from OSRM's table answer (binding object or parsed JSON)."""
    if answer["code"] != "Ok":
        raise NoPathFound("No table found")
    sources = [NearestPoint((w["location"][0], w["location"][1]), w["distance"]) for w in answer["sources"]]
    targets = (
        sources if query.square else [NearestPoint((w["location"][0], w["location"][1]), w["distance"]) for w in answer["destinations"]]
    )
    return MatrixResponse(sources, targets, [list(row) for row in answer["durations"]], [list(row) for row in answer["distances"]])


def engine_error(code: str, message: str) -> RoadkitError:
    """The roadkit error for an OSRM error answer: no path (404), a refused request (400) or a failure (502)."""
    text = f"{code} - {message}" if message else code
    if code in NO_PATH_CODES:
        return NoPathFound()
    # The request's fault, not the engine's: a 400, and the source stays as it is.
    if EXCLUDE_UNSUPPORTED in message:
        return ParameterInvalid("constraints", f"this combination of banned values can't be applied by the engine ({text})")
    if code in REQUEST_ERROR_CODES:
        return BadRequest(f"The engine refused the request: {text}", code="engine_refused")
    return EngineError(f"OSRM could not answer: {text}")


def constraint_problem(constraint_type: str) -> str | None:
    """Why an OSRM source never applies this constraint type (None: it does)."""
    if constraint_type != "banned":
        return "OSRM can only exclude classes of ways (banned); it has no preference weights for prefer or avoid"
    return None


def ban_probe(classes: frozenset[str]) -> RouteQuery:
    """A route from a point to itself: the engine checks the exclude set before routing."""
    return RouteQuery(((0.0, 0.0), (0.0, 0.0)), steps=False, exclude=tuple(sorted(classes)))


def ban_combinations(fields: Collection[str], most: int, excludes: Callable[[frozenset[str]], bool]) -> list[frozenset[str]]:
    """Every set of at most ``most`` of ``fields`` that ``excludes`` says the dataset bans together."""
    distinct = sorted(set(fields))
    return [
        frozenset(combination)
        for size in range(1, min(most, len(distinct)) + 1)
        for combination in itertools.combinations(distinct, size)
        if excludes(frozenset(combination))
    ]


def split_error(text: str) -> tuple[str, str]:
    """The code and message of the binding's error text (``"NoRoute - No route found between points"``)."""
    code, sep, message = text.partition(" - ")
    return (code.strip(), message.strip()) if sep else (text.strip(), "")


def _instruction(maneuver: Any) -> dict[str, Any]:
    instruction: dict[str, Any] = {"type": maneuver["type"]}
    if "modifier" in maneuver:
        instruction["modifier"] = maneuver["modifier"]
    if "exit" in maneuver:
        instruction["exit"] = int(maneuver["exit"])
    return instruction


def _coords(geometry: Any) -> list[Coord]:
    """The coordinates of a GeoJSON geometry, or of a polyline6 string (the in-process engine's)."""
    if isinstance(geometry, str):
        return [(c[0], c[1]) for c in decode_polyline(geometry.encode("ascii"), 6)]
    return [(c[0], c[1]) for c in geometry["coordinates"]]


def _steps(raw_steps: Any, geometry: list[Coord], cursor: int) -> tuple[list[Step], int]:
    """The steps of a leg, their geometries sliced from the route's full geometry.

    With ``overview=full`` the route geometry is the concatenation of the step geometries and
    every step starts at its maneuver location: slicing it is several times cheaper than reading
    each step's geometry out of the engine's answer. A location not found falls back to that.
    """
    locations: list[Coord] = []
    raw = list(raw_steps)
    for step in raw:
        location = step["maneuver"]["location"]
        locations.append((location[0], location[1]))
    starts: list[int | None] = []
    position = cursor
    for location in locations:
        try:
            position = geometry.index(location, position)
            starts.append(position)
        except ValueError:
            starts.append(None)
    steps = []
    for k, step in enumerate(raw):
        start = starts[k]
        end = starts[k + 1] if k + 1 < len(raw) else None
        if k + 1 == len(raw) and start is not None:
            coords = [geometry[start], geometry[start]]  # OSRM's arrive step: the end point twice
        elif start is not None and end is not None and end >= start:
            coords = geometry[start : end + 1]
        else:
            coords = _coords(step["geometry"])
        steps.append(
            Step(
                geometry=coords,
                distance=step["distance"],
                duration=step["duration"],
                attributes={"name": way_name(step["name"])},
                instruction=_instruction(step["maneuver"]),
            )
        )
    last = next((x for x in reversed(starts) if x is not None), cursor)
    return steps, last


def route_response(answer: Any, query: RouteQuery) -> RouteResponse:
    """A roadkit route from OSRM's route answer (binding object or parsed JSON)."""
    if answer["code"] != "Ok":
        raise NoPathFound("No route found")
    routes = answer["routes"]
    if len(routes) == 0:
        raise NoPathFound("No route found")
    waypoints = [(w["location"][0], w["location"][1]) for w in answer["waypoints"]]
    route = routes[0]
    extras: dict[str, Any] = {}
    if query.polyline:
        # OSRM's own precision-5 polyline goes to the answer as it is: no coordinates read or written.
        extras["polyline"] = str(route["geometry"])
        geometry: list[Coord] = []
    else:
        geometry = _coords(route["geometry"])
    portions = []
    cursor = 0
    for i, leg in enumerate(route["legs"]):
        steps: list[Step] = []
        if query.steps:
            steps, cursor = _steps(leg["steps"], geometry, cursor)
        portions.append(Portion(waypoints[i], waypoints[i + 1], leg["distance"], leg["duration"], steps))
    return RouteResponse(
        start=waypoints[0],
        end=waypoints[-1],
        geometry=geometry,
        distance=route["distance"],
        duration=route["duration"],
        portions=portions,
        extras=extras,
    )


def nearest_response(answer: Any) -> NearestResponse:
    """The snapped points of OSRM's nearest answer (binding object or parsed JSON), nearest first."""
    if answer["code"] != "Ok":
        raise NoPathFound("No graph point found near the coordinates")
    return NearestResponse(
        [NearestPoint((w["location"][0], w["location"][1]), w["distance"], {"name": w["name"]}) for w in answer["waypoints"]]
    )
