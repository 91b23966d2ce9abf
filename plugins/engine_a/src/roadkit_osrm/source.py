"""Source kind ``osrm``: OSRM in process through osrm-bindings, one dataset (one cost) per source."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from roadkit.config.files import resolve
from roadkit.config.models import SourceConfig
from roadkit.errors import BadRequest, ConfigurationError, EngineError, NoPathFound, ParameterInvalid
from roadkit.model import (
    Coord,
    Cost,
    NearestPoint,
    NearestRequest,
    NearestResponse,
    Portion,
    RouteRequest,
    RouteResponse,
    Step,
    way_name,
)
from roadkit.source import Progress, Source, SourceState
from roadkit_osrm.native.contract import NativeAnswer, NativeRequest

log = logging.getLogger(__name__)

_EXCLUDE_UNSUPPORTED = "Exclude flag combination is not supported"
#: OSRM's error codes for requests it refuses (osrm/engine/status and api parameter checks).
_REQUEST_ERRORS = ("InvalidValue", "InvalidOptions", "InvalidQuery", "InvalidUrl", "TooBig")


@attrs.frozen
class OsrmStorage:
    """Where the dataset is: the ``.osrm`` base path, and whether it was built for CH or MLD."""

    file: Path
    algorithm: Literal["CH", "MLD"] = "CH"


@attrs.frozen
class OsrmCost:
    """The one cost an OSRM dataset computes."""

    profile: str
    optimization: str


@attrs.frozen
class OsrmPreparation:
    """How ``roadkit prepare`` builds the dataset: from ``osm`` with an OSRM Lua ``profile``.

    ``profile`` is a profile shipped with OSRM (``car``, ``foot``, ``bicycle``) or a path to a Lua
    file; ``weight`` overrides the profile's weight (``distance`` for shortest routes).
    """

    osm: Path
    profile: str = "car"
    weight: Literal["routability", "duration", "distance"] | None = None


@attrs.frozen
class OsrmOptions:
    """The kind-specific part of an ``osrm`` source file."""

    storage: OsrmStorage
    cost: OsrmCost
    preparation: OsrmPreparation | None = None
    max_nearest: int = 100


def _instruction(maneuver: Any) -> dict[str, Any]:
    instruction: dict[str, Any] = {"type": maneuver["type"]}
    if "modifier" in maneuver:
        instruction["modifier"] = maneuver["modifier"]
    if "exit" in maneuver:
        instruction["exit"] = int(maneuver["exit"])
    return instruction


def _coords(geometry: Any) -> list[Coord]:
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


class OsrmSource(Source):
    """OSRM through osrm-bindings. The binding holds the GIL: one engine thread per source."""

    kind = "osrm"
    options_class = OsrmOptions
    operations = frozenset({"route", "nearest"})
    #: services of the native OSRM API this source answers (see roadkit_osrm.native.contract)
    native_services = ("route", "nearest", "table", "trip", "match", "tile")
    options: OsrmOptions

    def __init__(self, config: SourceConfig, options: OsrmOptions, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self.engine: Any = None
        self._exclusions: dict[frozenset[str], bool] = {}

    @classmethod
    def parse_options(cls, config: SourceConfig) -> OsrmOptions:
        options: OsrmOptions = super().parse_options(config)
        storage = attrs.evolve(options.storage, file=resolve(config.path, options.storage.file))
        preparation = options.preparation
        if preparation is not None:
            profile = preparation.profile
            if profile.endswith(".lua"):
                profile = str(resolve(config.path, profile))
            preparation = attrs.evolve(preparation, osm=resolve(config.path, preparation.osm), profile=profile)
        if options.max_nearest < 1:
            raise ConfigurationError([f"{config.path}: max_nearest: expected a positive integer, got {options.max_nearest}"])
        return attrs.evolve(options, storage=storage, preparation=preparation)

    def costs(self) -> Sequence[Cost]:
        return [Cost(self.options.cost.profile, self.options.cost.optimization)]

    def threads(self) -> int:
        return 1

    def constraint_problem(self, constraint_type: str, key_type: str, field: str | None) -> str | None:
        if constraint_type != "banned":
            return "OSRM can only exclude classes of ways (banned); it has no preference weights for prefer or avoid"
        return None

    def supported_bans(self, fields: Collection[str], most: int) -> Collection[frozenset[str]] | None:
        # The dataset excludes only the class sets its profile declared ``excludable``: asked, not guessed.
        engine = self.engine
        if engine is None:
            return None
        distinct = sorted(set(fields))
        return [
            frozenset(combination)
            for size in range(1, min(most, len(distinct)) + 1)
            for combination in itertools.combinations(distinct, size)
            if self._excludes(engine, frozenset(combination))
        ]

    def _excludes(self, engine: Any, classes: frozenset[str]) -> bool:
        """Whether the dataset excludes these classes together (one probe per set, remembered)."""
        import osrm

        known = self._exclusions.get(classes)
        if known is None:
            # A route from a point to itself: the engine checks the exclude set before routing.
            params = osrm.RouteParameters(coordinates=[(0.0, 0.0), (0.0, 0.0)], exclude=sorted(classes), overview="false")
            try:
                engine.Route(params)
                known = True
            except RuntimeError as exc:
                known = _EXCLUDE_UNSUPPORTED not in str(exc)
            self._exclusions[classes] = known
        return known

    @classmethod
    def data_paths(cls, config: SourceConfig, options: OsrmOptions) -> Sequence[Path]:
        from roadkit_osrm.prepare import dataset_files

        return dataset_files(options.storage.file, options.storage.algorithm)

    @classmethod
    def prepare(cls, config: SourceConfig, options: OsrmOptions, *, force: bool, progress: Progress) -> bool:
        from roadkit_osrm.prepare import build_dataset, dataset_ready

        if not force and dataset_ready(options.storage.file, options.storage.algorithm):
            return False
        if options.preparation is None:
            raise ConfigurationError([f"{config.path}: preparation: required to build the missing dataset {options.storage.file}"])
        prep = options.preparation
        build_dataset(prep.osm, options.storage.file, profile=prep.profile, algorithm=options.storage.algorithm, weight=prep.weight, progress=progress)
        return True

    async def connect(self) -> None:
        import osrm

        storage = self.options.storage
        try:
            self.engine = await self.run_blocking(
                lambda: osrm.OSRM(
                    storage_config=str(storage.file),
                    algorithm=storage.algorithm,
                    use_shared_memory=False,
                    max_results_nearest=self.options.max_nearest,
                )
            )
        except Exception as exc:
            self.fail(f"cannot open OSRM dataset {storage.file}: {exc}")
            raise
        self.state = SourceState.GREEN
        self.reason = ""

    async def disconnect(self) -> None:
        self.engine = None
        await super().disconnect()

    def _call(self, engine: Any, method: str, params: Any) -> Any:
        # The answer points into the engine's memory: callers keep ``engine`` alive while reading it.
        if engine is None:
            raise EngineError(f"source {self.id} is not connected", status=503)
        try:
            result = getattr(engine, method)(params)
        except RuntimeError as exc:
            text = str(exc)
            if "NoRoute" in text or "NoSegment" in text or "NoMatch" in text:
                raise NoPathFound() from None
            # The request's fault, not the engine's: a 400, and the source stays as it is.
            if _EXCLUDE_UNSUPPORTED in text:
                raise ParameterInvalid("constraints", f"this combination of banned values can't be applied by the engine ({text})") from None
            if text.startswith(_REQUEST_ERRORS):
                raise BadRequest(f"The engine refused the request: {text}", code="engine_refused") from None
            self.fail(f"OSRM error: {text}")
            raise EngineError(f"OSRM could not answer: {text}") from None
        if self.state is not SourceState.GREEN:
            self.state, self.reason = SourceState.GREEN, ""
        return result

    def _route(self, request: RouteRequest) -> RouteResponse:
        import osrm

        params = osrm.RouteParameters(
            coordinates=list(request.points),
            steps=request.steps,
            geometries="geojson",
            overview="full",
            exclude=sorted({c.field for c in request.constraints if c.type == "banned" and c.field}),
        )
        engine = self.engine
        answer = self._call(engine, "Route", params)
        # Every item access copies the engine's answer below it: read each part once.
        routes = answer["routes"]
        if answer["code"] != "Ok" or len(routes) == 0:
            raise NoPathFound("No route found")
        waypoints = [(w["location"][0], w["location"][1]) for w in answer["waypoints"]]
        route = routes[0]
        geometry = _coords(route["geometry"])
        portions = []
        cursor = 0
        for i, leg in enumerate(route["legs"]):
            steps: list[Step] = []
            if request.steps:
                steps, cursor = _steps(leg["steps"], geometry, cursor)
            portions.append(Portion(waypoints[i], waypoints[i + 1], leg["distance"], leg["duration"], steps))
        return RouteResponse(
            start=waypoints[0],
            end=waypoints[-1],
            geometry=geometry,
            distance=route["distance"],
            duration=route["duration"],
            portions=portions,
        )

    async def route(self, request: RouteRequest) -> RouteResponse:
        return await self.run_blocking(self._route, request)

    def _nearest(self, request: NearestRequest) -> NearestResponse:
        import osrm

        params = osrm.NearestParameters(coordinates=[request.point])
        params.number_of_results = request.number
        engine = self.engine
        answer = self._call(engine, "Nearest", params)
        return NearestResponse(
            [
                NearestPoint((w["location"][0], w["location"][1]), w["distance"], {"name": w["name"]})
                for w in answer["waypoints"]
            ]
        )

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        return await self.run_blocking(self._nearest, request)

    def _native(self, request: NativeRequest) -> NativeAnswer:
        from roadkit_osrm.native.engine import answer

        engine = self.engine
        if engine is None:
            raise EngineError(f"source {self.id} is not connected", status=503)
        return answer(engine, request)

    async def native(self, request: NativeRequest) -> NativeAnswer:
        """osrm-routed's answer to a native request, computed in process."""
        return await self.run_blocking(self._native, request)
