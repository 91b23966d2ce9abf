"""The source contract: the behaviour every source kind owes the core.

An engine plugin's test suite subclasses :class:`SourceContract` and provides two fixtures,
``contract_source`` (a connected source) and ``contract_points`` (two routable points in the
source's projection); pytest then runs every contract test against the plugin's engine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar

import pytest

from roadkit.errors import UnsupportedOperation
from roadkit.routing.model import Coord, Cost, IsochroneRequest, MatrixRequest, NearestRequest, RouteRequest
from roadkit.routing.source import Source, SourceState


def _route_cost(source: Source) -> Cost:
    return next(c for c in source.costs() if c.optimization)


class SourceContract:
    """The behaviour every source kind owes the core, run against a real engine.

    ``contract_step_instructions``: None (the default) checks only that each step's instruction is
    a dict, typed (``"type"``) when not empty, as the specification leaves instructions to the
    engine; True for kinds that give every step a typed instruction; False for kinds whose steps
    carry none (the specification says Engine C's are empty): they must then all be ``{}``.

    ``contract_isochrone_values``: two increasing cost values per cost type for the isochrone
    contract (seconds, meters), reachable from the first contract point.
    """

    contract_step_instructions: bool | None = None
    contract_isochrone_values: ClassVar[dict[str, tuple[float, float]]] = {"time": (60.0, 300.0), "distance": (300.0, 1500.0)}

    async def test_contract_source_is_green_once_connected(self, contract_source: Source) -> None:
        assert contract_source.state is SourceState.GREEN
        assert contract_source.health()["state"] == "green"

    async def test_contract_declares_costs(self, contract_source: Source) -> None:
        costs = contract_source.costs()
        assert costs and all(isinstance(c, Cost) for c in costs)
        assert all(c.optimization or c.cost_type for c in costs)

    async def test_contract_route_is_consistent(self, contract_source: Source, contract_points: Sequence[Coord]) -> None:
        start, end = contract_points[0], contract_points[-1]
        if "route" not in contract_source.operations:
            with pytest.raises(UnsupportedOperation):
                await contract_source.route(RouteRequest((start, end), Cost("car", "fastest")))
            return
        middle = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
        result = await contract_source.route(RouteRequest((start, middle, end), _route_cost(contract_source), steps=True))
        assert len(result.portions) == 2
        assert result.distance > 0 and result.duration > 0
        assert sum(p.distance for p in result.portions) == pytest.approx(result.distance, rel=0.01, abs=1.0)
        assert result.portions[0].start == result.start and result.portions[-1].end == result.end
        assert len(result.geometry) >= 2
        for portion in result.portions:
            assert portion.steps, "steps were asked for"
            instructions = [step.instruction for step in portion.steps]
            assert all(isinstance(i, dict) for i in instructions)
            assert all(isinstance(i["type"], str) for i in instructions if i), "a non-empty instruction names its type"
            if self.contract_step_instructions is True:
                assert all(i.get("type") for i in instructions), "this kind types every step's instruction"
            elif self.contract_step_instructions is False:
                assert all(i == {} for i in instructions)
            assert all("name" in step.attributes for step in portion.steps)
        without = await contract_source.route(RouteRequest((start, end), _route_cost(contract_source), steps=False))
        assert all(p.steps == [] for p in without.portions)

    async def test_contract_nearest(self, contract_source: Source, contract_points: Sequence[Coord]) -> None:
        if "nearest" not in contract_source.operations:
            with pytest.raises(UnsupportedOperation):
                await contract_source.nearest(NearestRequest(contract_points[0], 1))
            return
        result = await contract_source.nearest(NearestRequest(contract_points[0], 2))
        assert 1 <= len(result.points) <= 2
        assert all(p.distance >= 0 for p in result.points)

    async def test_contract_operations_are_known_and_the_others_raise_a_typed_error(
        self, contract_source: Source, contract_points: Sequence[Coord]
    ) -> None:
        operations = type(contract_source).operations
        assert operations and operations <= {"route", "isochrone", "nearest", "matrix"}, operations
        point = contract_points[0]
        unsupported: dict[str, Callable[[], Awaitable[object]]] = {
            "route": lambda: contract_source.route(RouteRequest((point, contract_points[-1]), Cost("car", "fastest"))),
            "isochrone": lambda: contract_source.isochrone(IsochroneRequest(point, Cost("car", cost_type="time"), (60.0,))),
            "nearest": lambda: contract_source.nearest(NearestRequest(point, 1)),
            "matrix": lambda: contract_source.matrix(MatrixRequest((point,), (point,), Cost("car", "fastest"))),
        }
        for name, call in unsupported.items():
            if name not in operations:
                with pytest.raises(UnsupportedOperation):
                    await call()

    async def test_contract_isochrone(self, contract_source: Source, contract_points: Sequence[Coord]) -> None:
        if "isochrone" not in contract_source.operations:
            with pytest.raises(UnsupportedOperation):
                await contract_source.isochrone(IsochroneRequest(contract_points[0], Cost("car", cost_type="time"), (60.0,)))
            return
        from shapely.geometry import shape

        costs = [c for c in contract_source.costs() if c.cost_type]
        assert costs, "a kind that computes isochrones declares costs with a cost type"
        point = contract_points[0]
        for cost in costs:
            small, large = self.contract_isochrone_values[str(cost.cost_type)]
            result = await contract_source.isochrone(IsochroneRequest(point, cost, (small, large)))
            assert len(result.geometries) == 2, "one geometry per cost value, in the request's order"
            areas = []
            for geometry in result.geometries:
                assert geometry["type"] in ("Polygon", "MultiPolygon", "Point"), geometry["type"]
                areas.append(shape(geometry).area)
            assert areas[1] > 0, f"{cost}: nothing reachable within {large:g}"
            assert areas[1] >= areas[0] * 0.99, f"{cost}: the larger value reaches less ({areas})"

    async def test_contract_disconnect_leaves_init(self, contract_source: Source) -> None:
        await contract_source.disconnect()
        assert contract_source.state is SourceState.INIT
        await contract_source.connect()
        assert contract_source.health()["state"] == "green"

    async def test_contract_matrix(self, contract_source: Source, contract_points: Sequence[Coord]) -> None:
        if "matrix" not in contract_source.operations:
            with pytest.raises(UnsupportedOperation):
                await contract_source.matrix(MatrixRequest(tuple(contract_points), tuple(contract_points), Cost("car", "fastest")))
            return
        start, end = contract_points[0], contract_points[-1]
        result = await contract_source.matrix(MatrixRequest((start, end), (end,), _route_cost(contract_source)))
        assert len(result.sources) == 2 and len(result.targets) == 1, "one snapped point per requested point"
        assert all(p.distance >= 0 for p in [*result.sources, *result.targets])
        assert [len(row) for row in result.durations] == [1, 1] and [len(row) for row in result.distances] == [1, 1]
        assert result.durations[0][0] is not None and result.durations[0][0] > 0, "the contract points are routable"
        assert result.distances[0][0] is not None and result.distances[0][0] > 0
        assert result.durations[1][0] == pytest.approx(0.0, abs=0.5), "from a point to itself"
