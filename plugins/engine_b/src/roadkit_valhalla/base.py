"""What every Valhalla source does the same way, whoever answers: costs, request bodies, answer reading, errors.

The in-process source (``valhalla``, pyvalhalla Actors) and the remote one (``valhalla-http``,
valhalla_service servers) differ only in how a request body reaches Valhalla and its JSON answer
comes back (:meth:`ValhallaBase.ask`); both build the bodies and read the answers with
:mod:`roadkit_valhalla.translate` and map Valhalla's error messages with :func:`engine_error`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import orjson

from roadkit.contract.native_osrm import NativeAnswer, NativeRequest, NativeSource
from roadkit.contract.sources import (
    ConfigurationError,
    ConstraintKeyType,
    Cost,
    CostTable,
    EngineError,
    IsochroneRequest,
    IsochroneResponse,
    MatrixRequest,
    MatrixResponse,
    NearestPoint,
    NearestRequest,
    NearestResponse,
    NoIsochroneFound,
    NoPathFound,
    ParameterInvalid,
    PointNotSnapped,
    RoadkitError,
    RouteRequest,
    RouteResponse,
    Source,
    SourceConfig,
)
from roadkit_valhalla import translate
from roadkit_valhalla.options import ValhallaCost, ValhallaLimits
from roadkit_valhalla.preferences import PREFERENCE_OF_EXCLUSION, PREFERENCES_OF_COSTING, preference_option

log = logging.getLogger(__name__)
T = TypeVar("T")

_NO_PATH = ("no path could be found", "no suitable edges", "unconnected regions", "no route", "cannot reach destination")


class ResponseTooLarge(RoadkitError):
    """The engine's answer is larger than the source's ``limits.max_response_bytes``."""

    status = 400
    code = "response_too_large"


def too_large(size: int, limit: int, source_id: str) -> ResponseTooLarge:
    """The error for an answer of ``size`` bytes over the source's limit."""
    return ResponseTooLarge(
        f"The engine's answer ({size} bytes) is larger than the {limit} bytes source {source_id} "
        "accepts: ask for less (getSteps=false, fewer intermediates, a smaller costValue)"
    )


def engine_error(text: str, operation: str) -> RoadkitError:
    """The roadkit error for Valhalla's error message: no path (404), a limit (400 naming the parameter), or 502.

    ``text`` is the message an Actor raises, or the ``error`` of valhalla_service's answer: the same.
    """
    lowered = text.lower()
    if any(marker in lowered for marker in _NO_PATH):
        if operation == "isochrone":
            return NoIsochroneFound(f"No isochrone found: {text}")
        return NoPathFound(f"No path found: {text}")
    if "date" in lowered and "time" in lowered:
        return ParameterInvalid("date_time", text)
    if operation == "matrix" and "exceeded max locations" in lowered:
        return ParameterInvalid("sources", f"more cells (sources × targets) than the engine accepts ({text})")
    if "exceed" in lowered or "limit" in lowered:
        name = {"isochrone": "costValue", "route": "end", "nearest": "coordinates", "matrix": "sources"}[operation]
        return ParameterInvalid(name, f"beyond what the engine accepts ({text})")
    log.debug("Valhalla %s failed: %s", operation, text)
    return EngineError(f"Valhalla could not answer: {text}")


def operation_of(action: str) -> str:
    """The roadkit operation of a Valhalla action (``locate`` answers ``nearest``, ``sources_to_targets`` ``matrix``)."""
    return {"locate": "nearest", "sources_to_targets": "matrix"}.get(action, action)


class ValhallaBase(Source, NativeSource):
    """Valhalla's costs and operations; subclasses say how a body reaches Valhalla (:meth:`ask`)."""

    operations = frozenset({"route", "isochrone", "nearest", "matrix"})
    constraint_key_types: ClassVar[Mapping[str, ConstraintKeyType]] = {
        "name-valhalla": ConstraintKeyType(("=",))
    }  # banned values are costing options
    #: services of the OSRM plugin's native API these sources answer (see :meth:`native`)
    native_services: ClassVar[tuple[str, ...]] = ("route", "nearest")
    #: the most locations one route takes, for every costing of the source (Valhalla's service_limits,
    #: read when the source connects; None: not known, Valhalla refuses beyond its own)
    max_locations: int | None = None
    #: Valhalla refuses a date_time of 1900 or before ("Date and time is invalid").
    date_time_years = (1901, 9999)
    avoids_areas = True
    projections = ("EPSG:4326",)

    def __init__(self, config: SourceConfig, options: Any, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        costs: tuple[ValhallaCost, ...] = options.costs
        self.cost_table = CostTable(self.id, costs)

    @property
    def vehicle_limits(self) -> Mapping[str, float]:
        """Routes for a vehicle's height and weight: Valhalla's truck costing (translate.vehicle_costing)."""
        return translate.TRUCK_LIMITS

    @staticmethod
    def check_projection(config: SourceConfig) -> None:
        """Valhalla works in EPSG:4326 only: any other projection is a configuration error."""
        if config.projection != "EPSG:4326":
            raise ConfigurationError([f"{config.path}: projection: Valhalla works in EPSG:4326, got {config.projection!r}"])

    @property
    def valhalla_costs(self) -> tuple[ValhallaCost, ...]:
        costs: tuple[ValhallaCost, ...] = self.options.costs
        return costs

    @property
    def limits(self) -> ValhallaLimits:
        limits: ValhallaLimits = self.options.limits
        return limits

    def costs(self) -> Sequence[Cost]:
        return self.cost_table.costs()

    def resolve_cost(self, cost: Cost) -> ValhallaCost:
        """The Valhalla costing of a cost (route key first, then isochrone key)."""
        return self.cost_table.find(cost)

    def constraint_problem(self, operation: str, constraint_type: str, key_type: str, field: str | None) -> str | None:
        if constraint_type == "banned":
            return None
        option = preference_option(field)
        if option is None:
            return (
                f"Valhalla weighs only {', '.join(sorted(PREFERENCE_OF_EXCLUSION))} or a use_* costing option; "
                f"field {field!r} has no preference weight (allow only banned for it)"
            )
        costings = {cost.costing for cost in self.valhalla_costs}
        if not any(option in PREFERENCES_OF_COSTING.get(costing, frozenset()) for costing in costings):
            return f"none of the source's costings ({', '.join(sorted(costings))}) reads {option}"
        return None

    def cost_constraint_problem(self, cost: Cost, constraint_type: str, key_type: str, field: str | None) -> str | None:
        if constraint_type == "banned":
            return None
        # The same rule as translate.costing_options, which refuses the request if this one misses it.
        costing = self.resolve_cost(cost).costing
        option = preference_option(field)
        if option is None or option not in PREFERENCES_OF_COSTING.get(costing, frozenset()):
            return f"Valhalla costing {costing} has no {option or 'preference'} option"
        return None

    async def ask(
        self, action: str, body: dict[str, Any], read: Callable[[Any], T], read_text: Callable[[str], T | None] | None = None
    ) -> T:
        """Send ``body`` to Valhalla's ``action`` and return ``read`` of its parsed JSON answer.

        ``read_text``, when given, may read the answer's text itself (None: ``read`` reads it
        parsed); a source that has the text anyway tries it first. Raises :func:`engine_error`'s
        error for Valhalla's errors and ResponseTooLarge past ``limits.max_response_bytes``.
        """
        raise NotImplementedError

    async def route(self, request: RouteRequest) -> RouteResponse:
        cost: ValhallaCost = self.setting(request.cost)
        body = translate.route_body(request, cost)
        return await self.ask(
            "route",
            body,
            lambda answer: translate.route_response(answer, request, cost),
            lambda text: translate.route_response(translate.read_route(text), request, cost),
        )

    async def isochrone(self, request: IsochroneRequest) -> IsochroneResponse:
        cost: ValhallaCost = self.setting(request.cost)
        body = translate.isochrone_body(request, cost)
        return await self.ask(
            "isochrone",
            body,
            lambda answer: translate.isochrone_response(answer, request),
            lambda text: translate.written_isochrone(text, request),
        )

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        costs: list[ValhallaCost] = [self.setting(cost) for cost in self.costs()]
        costing = next((c.costing for c in costs if c.optimization), costs[0].costing)
        radius = self.limits.nearest_radius if request.number > 1 else 0
        body = translate.locate_body(request.point, costing, radius)
        return await self.ask("locate", body, lambda answer: translate.nearest_response(answer, request.point, request.number))

    async def matrix(self, request: MatrixRequest) -> MatrixResponse:
        """Valhalla's ``sources_to_targets``, and a ``locate`` call for where the points snap.

        Valhalla's concise matrix answer does not say where the points snapped (its verbose one does,
        at 25 times the size): ``locate``, with the same costing and options, finds the same edges
        (tests/engine_b/test_matrix.py checks it). Both calls run at once, on two engine threads; an
        unsnappable point is named from the ``locate`` answer, whatever the matrix call answered.
        """
        cost: ValhallaCost = self.setting(request.cost)
        if cost.costing == "multimodal":
            raise ParameterInvalid("profile", f"Valhalla computes no matrix for profile {cost.profile!r} (costing multimodal)")
        body = translate.matrix_body(request, cost)
        count = len(request.sources)
        same = request.targets == request.sources
        points = request.sources if same else request.sources + request.targets
        locate = {**translate.locate_points_body(points, cost.costing, request.constraints), "costing_options": body["costing_options"]}
        located, cells = await asyncio.gather(
            self.ask("locate", locate, lambda answer: translate.snapped_points(answer, points)),
            self.ask("sources_to_targets", body, lambda answer: translate.matrix_cells(answer, count, len(request.targets))),
            return_exceptions=True,
        )
        if isinstance(located, BaseException):
            raise located
        snapped: list[NearestPoint] = []
        for index, point in enumerate(located):
            if point is None:
                raise PointNotSnapped("sources", index) if index < count else PointNotSnapped("targets", index - count)
            snapped.append(point)
        if isinstance(cells, BaseException):
            raise cells
        durations, distances = cells
        return MatrixResponse(snapped[:count], list(snapped) if same else snapped[count:], durations, distances)

    @property
    def native_bbox(self) -> tuple[float, float, float, float] | None:
        """The source's ``bbox``: a native coordinate outside it is refused (NoSegment) before Valhalla is asked.

        Valhalla snaps a point only to roads within its search cutoff (35 km) where osrm-routed snaps
        any point; inside the bbox every point snaps (tests/engine_b/test_native_valhalla.py checks it).
        """
        return self.config.bbox

    @property
    def native_limits(self) -> dict[str, int]:
        """osrm-routed's limits the source lowers: a route's coordinates, at most Valhalla's max_locations."""
        return {} if self.max_locations is None else {"max_viaroute_size": self.max_locations}

    async def native(self, request: NativeRequest) -> NativeAnswer:
        """A native OSRM request (the OSRM plugin's ``osrm/1.0.0`` API): route and nearest, OSRM-shaped.

        osrm-routed's order: options, then limits (``request.limits``, these sources' lowered), then the
        plugins' own refusals, the coordinates' area, and only then the engine.
        """
        from roadkit_valhalla import native

        params: dict[str, Any] = request.params
        if request.service not in native.SERVICES:
            return native.error("InvalidService", f"Service {request.service} is not available on this source (engine valhalla)")
        if params.get("format") == "flatbuffers":
            return native.error("InvalidOptions", "The flatbuffers output format is not available on this service")
        problem = native.check_options(request.service, params)
        if problem is None and (exceeded := request.limits.exceeded(request.service, params)) is not None:
            problem = native.error(*exceeded)
        if problem is None:
            problem = native.plugin_refusal(request.service, params)
        if problem is None:
            problem = native.outside(params["coordinates"], self.native_bbox, self.id)
        if problem is not None:
            return problem
        try:
            if request.service == "route":
                body = native.route_body(params, self.setting(request.cost))
                answer = await self.ask("route", body, lambda found: native.shape_route(found, params))
                return NativeAnswer(200, orjson.dumps(answer))
            costing = self.setting(request.cost).costing
            number = int(params.get("number_of_results", 1))
            found: list[list[dict[str, Any]]] = []
            for point in params["coordinates"]:
                body = translate.locate_body(point, costing, self.limits.nearest_radius)
                located: Any = await self.ask("locate", body, lambda answer: answer)
                found.append(native.nearest_waypoints(located, point, number))
            waypoints = found[0] if len(found) == 1 else found
            return NativeAnswer(200, orjson.dumps({"code": "Ok", "waypoints": waypoints}))
        except RoadkitError as exc:
            return native.engine_error(exc)
