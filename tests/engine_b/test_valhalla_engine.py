"""The Valhalla source on the real engine and the Monaco tiles, against direct ``valhalla.Actor`` calls."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pyproj import Geod
from shapely.geometry import shape
from starlette.testclient import TestClient

from roadkit import hookimpl
from roadkit.config import load_service
from roadkit.errors import ParameterInvalid
from roadkit.plugins import Plugins
from roadkit.routing.model import Constraint, Coord, Cost, IsochroneRequest, NearestRequest, RouteRequest
from roadkit.routing.source import Source, SourceState
from roadkit.serving.app import create_app
from roadkit.testing import SourceContract
from roadkit_valhalla import ValhallaSource
from tests.engine_b.conftest import END, START, VIA, connected, edit_source

GEOD = Geod(ellps="WGS84")
TUNNEL_START, TUNNEL_END = (7.4167, 43.7284), (7.4350, 43.7480)  # Fontvieille → Larvotto, through Tunnel Rocher Palais


def direct_route(actor: Any, points: Sequence[Coord], costing: str, options: dict[str, Any] | None = None, **extra: Any) -> Any:
    body = {"locations": [{"lon": x, "lat": y} for x, y in points], "costing": costing, "costing_options": options or {}, **extra}
    return actor.route(body)["trip"]["summary"]


def direct_isochrone(
    actor: Any, point: Coord, costing: str, contour: dict[str, float], options: dict[str, Any] | None = None, **extra: Any
) -> Any:
    body = {
        "locations": [{"lon": point[0], "lat": point[1]}],
        "costing": costing,
        "costing_options": options or {},
        "contours": [contour],
        "polygons": True,
        **extra,
    }
    return actor.isochrone(body)["features"][0]["geometry"]


def area_m2(geometry: dict[str, Any]) -> float:
    return abs(GEOD.geometry_area_perimeter(shape(geometry))[0])


class TestValhallaContract(SourceContract):
    """The core's source contract, on the Valhalla source."""

    contract_step_instructions = True  # every step carries a typed instruction

    @pytest.fixture
    async def contract_source(self, valhalla_example: Path) -> AsyncIterator[ValhallaSource]:
        source = await connected(valhalla_example)
        yield source
        await source.disconnect()

    @pytest.fixture
    def contract_points(self) -> Sequence[Coord]:
        return [START, END]


def test_plugin_is_discovered_through_its_entry_point() -> None:
    assert Plugins.create().source_kinds()["valhalla"] is ValhallaSource


def test_source_declares_every_cost_of_its_file(source: ValhallaSource) -> None:
    assert set(source.costs()) == {
        Cost("car", "fastest", "time"),
        Cost("car", "shortest", "distance"),
        Cost("pedestrian", "fastest", "time"),
        Cost("pedestrian", "shortest", "distance"),
        Cost("multimodal", "fastest", "time"),
    }
    assert source.resolve_cost(Cost("car", "shortest")).options == {"auto": {"shortest": True}}
    assert source.resolve_cost(Cost("car", cost_type="time")).costing == "auto"
    with pytest.raises(ParameterInvalid):
        source.resolve_cost(Cost("bicycle", "fastest"))


@pytest.mark.parametrize(
    ("profile", "optimization", "costing", "options"),
    [
        ("car", "fastest", "auto", {}),
        ("car", "shortest", "auto", {"auto": {"shortest": True}}),
        ("pedestrian", "fastest", "pedestrian", {"pedestrian": {"walking_speed": 4.0}}),
    ],
)
async def test_route_equals_a_direct_actor_call(
    source: ValhallaSource, actor: Any, profile: str, optimization: str, costing: str, options: dict[str, Any]
) -> None:
    points = (START, VIA, END)
    result = await source.route(RouteRequest(points, Cost(profile, optimization), steps=True))
    expected = direct_route(actor, points, costing, options)
    assert result.distance == pytest.approx(expected["length"] * 1000, rel=0.01)
    assert result.duration == pytest.approx(expected["time"], rel=0.01)
    assert len(result.portions) == 2
    assert sum(p.distance for p in result.portions) == pytest.approx(result.distance, rel=0.001)
    assert result.geometry[0] == pytest.approx(result.start, abs=1e-6)
    assert result.geometry[-1] == pytest.approx(result.end, abs=1e-6)


async def test_steps_have_osrm_instructions_and_way_names(source: ValhallaSource) -> None:
    result = await source.route(RouteRequest((TUNNEL_START, TUNNEL_END), Cost("car", "fastest"), steps=True))
    steps = result.portions[0].steps
    assert steps[0].instruction["type"] == "depart" and steps[-1].instruction["type"] == "arrive"
    vocabulary = {
        "depart",
        "arrive",
        "turn",
        "new name",
        "continue",
        "merge",
        "on ramp",
        "off ramp",
        "fork",
        "end of road",
        "roundabout",
        "rotary",
        "exit roundabout",
        "exit rotary",
        "roundabout turn",
        "notification",
    }
    assert {s.instruction["type"] for s in steps} <= vocabulary
    assert all(set(s.instruction) <= {"type", "modifier", "exit"} for s in steps)
    assert "Tunnel Rocher Palais" in {s.attributes["name"] for s in steps}
    assert sum(s.distance for s in steps) == pytest.approx(result.distance, rel=0.01)
    assert all(len(s.geometry) >= 1 for s in steps)


async def test_route_without_steps_has_the_same_totals(source: ValhallaSource) -> None:
    with_steps = await source.route(RouteRequest((START, END), Cost("car", "fastest"), steps=True))
    without = await source.route(RouteRequest((START, END), Cost("car", "fastest"), steps=False))
    assert without.portions[0].steps == []
    assert without.distance == pytest.approx(with_steps.distance) and without.geometry == with_steps.geometry


async def test_pedestrian_walks_at_4_kmh_by_default(source: ValhallaSource, actor: Any) -> None:
    result = await source.route(RouteRequest((START, END), Cost("pedestrian", "fastest"), steps=False))
    at_valhalla_default = direct_route(actor, (START, END), "pedestrian")
    at_4 = direct_route(actor, (START, END), "pedestrian", {"pedestrian": {"walking_speed": 4.0}})
    assert result.duration == pytest.approx(at_4["time"], rel=0.01)
    assert result.duration > at_valhalla_default["time"] * 1.2  # Valhalla's own default is 5.1 km/h
    assert result.distance / result.duration == pytest.approx(4 / 3.6, rel=0.15)


async def test_walking_speed_is_configurable_per_cost(variant: Path) -> None:
    import tomllib

    costs = tomllib.loads((variant / "sources" / "monaco-valhalla.source").read_text())["costs"]
    for cost in costs:
        if cost["costing"] == "pedestrian":
            cost["walking_speed"] = 6.0
    edit_source(variant, costs=costs)
    fast = await connected(variant)
    result = await fast.route(RouteRequest((START, END), Cost("pedestrian", "fastest"), steps=False))
    await fast.disconnect()
    assert result.distance / result.duration == pytest.approx(6 / 3.6, rel=0.15)


async def test_banned_constraint_changes_the_route_like_a_direct_exclusion(source: ValhallaSource, actor: Any) -> None:
    points = (START, TUNNEL_END)
    free = await source.route(RouteRequest(points, Cost("car", "fastest"), steps=True))
    banned = Constraint("banned", "waytype", "=", "tunnel", field="exclude_tunnels")
    avoided = await source.route(RouteRequest(points, Cost("car", "fastest"), steps=True, constraints=(banned,)))
    assert avoided.geometry != free.geometry
    assert avoided.distance > free.distance * 1.2
    expected = direct_route(actor, points, "auto", {"auto": {"exclude_tunnels": True}})
    assert avoided.distance == pytest.approx(expected["length"] * 1000, rel=0.01)


async def test_loose_constraints_are_refused_naming_the_parameter(source: ValhallaSource) -> None:
    avoid = Constraint("avoid", "waytype", "=", "tunnel", field="exclude_tunnels", ratio=1.2)
    with pytest.raises(ParameterInvalid, match="constraints"):
        await source.route(RouteRequest((START, END), Cost("car", "fastest"), constraints=(avoid,)))


@pytest.mark.parametrize(
    ("profile", "cost_type", "value", "costing", "contour", "options"),
    [
        ("car", "time", 180.0, "auto", {"time": 3.0}, {}),
        ("car", "distance", 1500.0, "auto", {"distance": 1.5}, {"auto": {"shortest": True}}),
        ("pedestrian", "time", 600.0, "pedestrian", {"time": 10.0}, {"pedestrian": {"walking_speed": 4.0}}),
    ],
)
async def test_isochrone_area_equals_a_direct_actor_call(
    source: ValhallaSource,
    actor: Any,
    profile: str,
    cost_type: str,
    value: float,
    costing: str,
    contour: dict[str, float],
    options: dict[str, Any],
) -> None:
    result = await source.isochrone(IsochroneRequest(START, Cost(profile, cost_type=cost_type), (value,)))  # type: ignore[arg-type]
    (geometry,) = result.geometries
    polygon = shape(geometry)
    assert geometry["type"] in ("Polygon", "MultiPolygon") and polygon.is_valid
    assert (
        polygon.contains(shape({"type": "Point", "coordinates": list(START)}))
        or polygon.distance(shape({"type": "Point", "coordinates": list(START)})) < 0.001
    )
    expected = direct_isochrone(actor, START, costing, contour, options)
    assert area_m2(geometry) == pytest.approx(area_m2(expected), rel=0.01)


async def test_several_cost_values_give_nested_polygons_in_the_request_order(source: ValhallaSource) -> None:
    result = await source.isochrone(IsochroneRequest(START, Cost("pedestrian", cost_type="time"), (600.0, 180.0, 900.0)))
    areas = [area_m2(g) for g in result.geometries]
    assert areas[1] < areas[0] < areas[2]
    small, middle, large = (shape(result.geometries[i]) for i in (1, 0, 2))
    assert large.buffer(1e-4).contains(middle) and middle.buffer(1e-4).contains(small)


async def test_a_cost_too_small_for_a_polygon_gives_the_start_point(source: ValhallaSource) -> None:
    result = await source.isochrone(IsochroneRequest(START, Cost("car", cost_type="time"), (0.5, 120.0)))
    assert result.geometries[0] == {"type": "Point", "coordinates": [START[0], START[1]]}
    assert result.geometries[1]["type"] == "Polygon"


async def test_arrival_isochrone_is_a_reverse_expansion(source: ValhallaSource, actor: Any) -> None:
    arrival = await source.isochrone(IsochroneRequest(TUNNEL_START, Cost("car", cost_type="time"), (120.0,), direction="arrival"))
    expected = direct_isochrone(actor, TUNNEL_START, "auto", {"time": 2.0}, reverse=True)
    departure = direct_isochrone(actor, TUNNEL_START, "auto", {"time": 2.0})
    assert area_m2(arrival.geometries[0]) == pytest.approx(area_m2(expected), rel=0.01)
    assert area_m2(arrival.geometries[0]) != pytest.approx(area_m2(departure), rel=0.01)


async def test_date_time_is_sent_as_depart_at(source: ValhallaSource, actor: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []
    call = source._call

    def spy(action: str, body: dict[str, Any]) -> Any:
        sent.append(body)
        return call(action, body)

    monkeypatch.setattr(source, "_call", spy)
    when = datetime(2026, 6, 15, 8, 0)
    await source.route(RouteRequest((START, END), Cost("car", "fastest"), date_time=when))
    await source.isochrone(IsochroneRequest(START, Cost("car", cost_type="time"), (60.0,), date_time=when))
    await source.route(RouteRequest((START, END), Cost("car", "fastest")))
    assert sent[0]["date_time"] == sent[1]["date_time"] == {"type": 1, "value": "2026-06-15T08:00"}
    assert "date_time" not in sent[2]


async def test_nearest_returns_distinct_points_nearest_first(source: ValhallaSource, actor: Any) -> None:
    one = await source.nearest(NearestRequest(START, 1))
    located = actor.locate({"locations": [{"lon": START[0], "lat": START[1]}], "costing": "auto"})[0]["edges"][0]
    assert one.points[0].point == (located["correlated_lon"], located["correlated_lat"])
    several = await source.nearest(NearestRequest(START, 5))
    distances = [p.distance for p in several.points]
    assert len(several.points) == 5 and distances == sorted(distances)
    assert len({p.point for p in several.points}) == 5
    assert distances[0] == pytest.approx(one.points[0].distance) and distances[0] < 5


async def test_disconnect_and_reconnect(source: ValhallaSource) -> None:
    await source.disconnect()
    assert source.state is SourceState.INIT
    await source.connect()
    result = await source.route(RouteRequest((START, END), Cost("car", "fastest")))
    assert result.distance > 0
    assert json.dumps(source.health()) == json.dumps({"id": "monaco-valhalla", "type": "valhalla", "state": "green"})


def test_invalid_engine_polygons_are_repaired_and_empty_ones_dropped() -> None:
    from roadkit_valhalla.translate import clean_polygon

    bowtie = {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 1], [1, 0], [0, 1], [0, 0]]]}
    repaired = clean_polygon(bowtie)
    assert repaired is not None and shape(repaired).is_valid and shape(repaired).area == pytest.approx(0.5)
    square = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]}
    assert clean_polygon(square) == {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]}
    assert clean_polygon({"type": "Polygon", "coordinates": []}) is None
    assert clean_polygon({"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [0, 0]]]}) is None


def test_hook_roadkit_resolve_cost_override_changes_the_route(valhalla_example: Path) -> None:
    """A plugin answering roadkit_resolve_cost is what the engine uses: car/fastest computed as walking."""
    from roadkit_valhalla.options import ValhallaCost

    asked: list[Cost] = []

    class WalkEverywhere:
        @hookimpl
        def roadkit_resolve_cost(self, source: Source, cost: Cost) -> Any:
            asked.append(cost)
            if cost.profile == "car" and cost.optimization == "fastest":
                return ValhallaCost(profile="car", optimization="fastest", cost_type="time", costing="pedestrian")
            return None  # the source's own setting

    params = {
        "resource": "monaco-valhalla",
        "profile": "car",
        "optimization": "fastest",
        "start": "7.41337,43.72956",
        "end": "7.41983,43.73115",
        "timeUnit": "second",
        "distanceUnit": "meter",
    }
    durations = []
    for extra in ([], [WalkEverywhere()]):
        service = load_service(valhalla_example / "service.toml")
        with TestClient(create_app(service, Plugins.create(extra_plugins=extra))) as client:
            response = client.get("/simple/1.0.0/route", params=params)
            assert response.status_code == 200, response.text
            durations.append(response.json()["duration"])
    car, walking = durations
    # Resolved once per declared cost at connection, not per request.
    assert sorted(map(str, asked)) == sorted({str(c) for c in asked}) and len(asked) >= 4
    # 1 km across Monaco: a couple of minutes by car, a quarter of an hour on foot.
    assert walking > 3 * car, (car, walking)
