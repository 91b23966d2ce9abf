"""Source kind ``valhalla``: Valhalla in process through pyvalhalla's ``Actor``, several costs per source.

Valhalla's Actor is not thread-safe (two threads sharing one corrupt each other's answers), but it
releases the GIL. So a source creates its Actors once, when it connects: one per engine thread,
kept in a pool that every request borrows from and gives back. No request ever creates an Actor.
"""

from __future__ import annotations

import asyncio
import logging
import queue
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from roadkit.config.models import SourceConfig
from roadkit.errors import (
    ConfigurationError,
    EngineError,
    NoIsochroneFound,
    NoPathFound,
    ParameterInvalid,
    RoadkitError,
    SourceUnavailable,
)
from roadkit.model import (
    Cost,
    IsochroneRequest,
    IsochroneResponse,
    NearestRequest,
    NearestResponse,
    RouteRequest,
    RouteResponse,
)
from roadkit.source import Progress, Source, SourceState
from roadkit_valhalla import translate
from roadkit_valhalla.options import ValhallaCost, ValhallaOptions, parse_options
from roadkit_valhalla.preferences import PREFERENCE_OF_EXCLUSION, PREFERENCES_OF_COSTING, preference_option

log = logging.getLogger(__name__)

_NO_PATH = ("no path could be found", "no suitable edges", "unconnected regions", "no route", "cannot reach destination")


class ResponseTooLarge(RoadkitError):
    """The engine's answer is larger than the source's ``limits.max_response_bytes``."""

    status = 400
    code = "response_too_large"


def engine_error(exc: Exception, operation: str) -> RoadkitError:
    """The roadkit error for a Valhalla failure: no path (404), a limit (400 naming the parameter), or 502."""
    text = str(exc).strip() or type(exc).__name__
    lowered = text.lower()
    if any(marker in lowered for marker in _NO_PATH):
        if operation == "isochrone":
            return NoIsochroneFound(f"No isochrone found: {text}")
        return NoPathFound(f"No path found: {text}")
    if "date" in lowered and "time" in lowered:
        return ParameterInvalid("date_time", text)
    if "exceed" in lowered or "limit" in lowered:
        name = {"isochrone": "costValue", "route": "end", "nearest": "coordinates"}[operation]
        return ParameterInvalid(name, f"beyond what the engine accepts ({text})")
    log.warning("Valhalla %s failed: %s", operation, text)
    return EngineError(f"Valhalla could not answer: {text}")


class ValhallaSource(Source):
    """Valhalla tiles served by a pool of Actors created when the source connects."""

    kind = "valhalla"
    options_class = ValhallaOptions
    operations = frozenset({"route", "isochrone", "nearest"})
    #: services of the OSRM plugin's native API this source answers (see ``native``)
    native_services = ("route", "nearest")
    options: ValhallaOptions

    def __init__(self, config: SourceConfig, options: ValhallaOptions, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self._actors: queue.SimpleQueue[Any] | None = None
        self._route_costs = {(c.profile, c.optimization): c for c in options.costs if c.optimization}
        self._isochrone_costs = {(c.profile, c.cost_type): c for c in options.costs if c.cost_type}

    @classmethod
    def parse_options(cls, config: SourceConfig) -> ValhallaOptions:
        if config.projection != "EPSG:4326":
            raise ConfigurationError([f"{config.path}: projection: Valhalla works in EPSG:4326, got {config.projection!r}"])
        return parse_options(config)

    def costs(self) -> Sequence[Cost]:
        return [Cost(c.profile, c.optimization, c.cost_type) for c in self.options.costs]

    def resolve_cost(self, cost: Cost) -> ValhallaCost:
        """The Valhalla costing of a cost (route key first, then isochrone key)."""
        found = None
        if cost.optimization is not None:
            found = self._route_costs.get((cost.profile, cost.optimization))
        if found is None and cost.cost_type is not None:
            found = self._isochrone_costs.get((cost.profile, cost.cost_type))
        if found is None:
            raise ParameterInvalid("profile", f"source {self.id} has no cost for {cost.profile}/{cost.optimization or cost.cost_type}")
        return found

    def constraint_problem(self, constraint_type: str, key_type: str, field: str | None) -> str | None:
        if constraint_type == "banned":
            return None
        option = preference_option(field)
        if option is None:
            return (
                f"Valhalla weighs only {', '.join(sorted(PREFERENCE_OF_EXCLUSION))} or a use_* costing option; "
                f"field {field!r} has no preference weight (allow only banned for it)"
            )
        costings = {cost.costing for cost in self.options.costs}
        if not any(option in PREFERENCES_OF_COSTING.get(costing, frozenset()) for costing in costings):
            return f"none of the source's costings ({', '.join(sorted(costings))}) reads {option}"
        return None

    def threads(self) -> int:
        return self.options.threads

    @classmethod
    def data_paths(cls, config: SourceConfig, options: ValhallaOptions) -> Sequence[Path]:
        return [options.storage.config, options.storage.tar or options.tile_dir]

    @classmethod
    def prepare(cls, config: SourceConfig, options: ValhallaOptions, *, force: bool, progress: Progress) -> bool:
        from roadkit_valhalla.prepare import prepare_source

        return prepare_source(config, options, force=force, progress=progress)

    def _create_actors(self) -> queue.SimpleQueue[Any]:
        import valhalla

        from roadkit_valhalla.prepare import has_tiles

        path = self.options.storage.config
        try:
            mjolnir = orjson.loads(path.read_bytes())["mjolnir"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EngineError(f"cannot read the Valhalla configuration {path}: {exc}") from None
        tar = Path(mjolnir["tile_extract"]) if mjolnir.get("tile_extract") else None
        if not has_tiles(Path(mjolnir.get("tile_dir") or "."), tar):
            raise EngineError(f"the Valhalla configuration {path} points to no tiles (run 'roadkit prepare')")
        actors: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for _ in range(self.threads()):
            actors.put(valhalla.Actor(str(path)))
        return actors

    async def connect(self) -> None:
        try:
            # Loading is not a request: the request time-out does not bound it.
            self._actors = await asyncio.get_running_loop().run_in_executor(self.executor(), self._create_actors)
        except Exception as exc:
            self._actors = None
            self.fail(f"cannot load Valhalla from {self.options.storage.config}: {exc}")
            raise
        self.state = SourceState.GREEN
        self.reason = ""

    async def disconnect(self) -> None:
        self._actors = None
        await super().disconnect()

    def _call(self, action: str, body: dict[str, Any]) -> Any:
        """One Actor call on a pooled Actor; the answer parsed, after the response-size check."""
        actors = self._actors
        if actors is None:
            raise SourceUnavailable(f"source {self.id} is not connected")
        request = orjson.dumps(body).decode()
        actor = actors.get()
        try:
            answer: str = getattr(actor, action)(request)
        except RuntimeError as exc:
            raise engine_error(exc, action if action != "locate" else "nearest") from None
        finally:
            actors.put(actor)
        limit = self.options.limits.max_response_bytes
        if len(answer) > limit // 4 and len(answer.encode()) > limit:
            raise ResponseTooLarge(
                f"The engine's answer ({len(answer.encode())} bytes) is larger than the {limit} bytes source {self.id} "
                "accepts: ask for less (getSteps=false, fewer intermediates, a smaller costValue)"
            )
        return orjson.loads(answer)

    def _run(self, action: str, body: dict[str, Any], read: Callable[[Any], Any]) -> Any:
        return read(self._call(action, body))

    async def route(self, request: RouteRequest) -> RouteResponse:
        cost = self.resolve_cost(request.cost)
        body = translate.route_body(request, cost)
        result: RouteResponse = await self.run_blocking(self._run, "route", body, lambda a: translate.route_response(a, request, cost))
        return result

    async def isochrone(self, request: IsochroneRequest) -> IsochroneResponse:
        cost = self.resolve_cost(request.cost)
        body = translate.isochrone_body(request, cost)
        result: IsochroneResponse = await self.run_blocking(
            self._run, "isochrone", body, lambda a: translate.isochrone_response(a, request)
        )
        return result

    async def native(self, request: Any) -> Any:
        """A native OSRM request (the OSRM plugin's ``osrm/1.0.0`` API): route and nearest, OSRM-shaped."""
        from roadkit_valhalla import native

        params: dict[str, Any] = request.params
        if request.service not in native.SERVICES:
            return native.error("InvalidService", f"Service {request.service} is not available on this source (engine valhalla)")
        if params.get("format") == "flatbuffers":
            return native.error("InvalidOptions", "The flatbuffers output format is not available on this service")
        problem = native.check_options(request.service, params)
        if problem is not None:
            return problem
        try:
            if request.service == "route":
                body = native.route_body(params, self.resolve_cost(request.cost))
                answer = await self.run_blocking(self._call, "route", body)
                return native.NativeAnswer(200, orjson.dumps(native.shape_route(answer, params)))
            costing = self.resolve_cost(request.cost).costing
            number = int(params.get("number_of_results", 1))
            found = []
            for point in params["coordinates"]:
                located = await self.run_blocking(self._call, "locate", translate.locate_body(point, costing, self.options.limits.nearest_radius))
                found.append(native.nearest_waypoints(located, point, number))
            waypoints = found[0] if len(found) == 1 else found
            return native.NativeAnswer(200, orjson.dumps({"code": "Ok", "waypoints": waypoints}))
        except RoadkitError as exc:
            return native.engine_error(exc)

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        costing = next((c.costing for c in self.options.costs if c.optimization), self.options.costs[0].costing)
        radius = self.options.limits.nearest_radius if request.number > 1 else 0
        body = translate.locate_body(request.point, costing, radius)
        result: NearestResponse = await self.run_blocking(
            self._run, "locate", body, lambda a: translate.nearest_response(a, request.point, request.number)
        )
        return result
