"""The OSRM source on the real engine and the Monaco datasets, against direct osrm.OSRM calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import osrm
import pytest

from roadkit.config.loader import read_source
from roadkit.errors import EngineTimeout, NoPathFound, SourceUnavailable
from roadkit.plugins import Plugins
from roadkit.routing.model import Constraint, Cost, NearestRequest, RouteRequest
from roadkit.routing.source import SourceState
from roadkit.testing import SourceContract
from roadkit_osrm import OsrmSource
from roadkit_osrm.prepare import dataset_ready

START = (7.41337, 43.72956)
END = (7.41983, 43.73115)
VIA = (7.4246, 43.7383)


async def _source(example: Path, name: str) -> OsrmSource:
    source = OsrmSource.from_config(read_source(example / "sources" / f"monaco-{name}.source"))
    await source.connect()
    return source


def plain(value: Any) -> Any:
    """An osrm answer as plain Python (the answer lives in the engine's memory)."""
    if isinstance(value, osrm.Object):
        return {k: plain(value[k]) for k in value}
    if isinstance(value, osrm.Array):
        return [plain(v) for v in value]
    return value


def _direct(dataset: Path, algorithm: str, points: list[tuple[float, float]], **kwargs: Any) -> Any:
    engine = osrm.OSRM(storage_config=str(dataset), algorithm=algorithm, use_shared_memory=False)
    return plain(engine.Route(osrm.RouteParameters(coordinates=points, geometries="geojson", overview="full", **kwargs)))


def test_plugin_is_discovered_through_its_entry_point() -> None:
    kinds = Plugins.create().source_kinds()
    assert kinds["osrm"] is OsrmSource


def test_prepare_built_every_dataset_with_its_algorithm(osrm_datasets: dict[str, Path]) -> None:
    assert set(osrm_datasets) == {"car-fastest", "car-shortest", "pedestrian-fastest"}
    assert dataset_ready(osrm_datasets["car-fastest"], "CH")
    assert dataset_ready(osrm_datasets["pedestrian-fastest"], "MLD")


def test_prepare_builds_a_dataset_again_when_its_profile_changes(osrm_example: Path, tmp_path: Path) -> None:
    from roadkit.routing.source import Progress

    # A profile of one's own in another folder, that requires the shipped car profile (as the demo's does).
    profile = tmp_path / "profiles" / "car-bans.lua"
    profile.parent.mkdir()
    profile.write_text((osrm_example / "profiles" / "car-bans.lua").read_text())
    source_file = tmp_path / "sources" / "car.source"
    source_file.parent.mkdir()
    source_file.write_text(
        (osrm_example / "sources" / "monaco-car-fastest.source")
        .read_text()
        .replace("../data/osrm/car-fastest/monaco.osrm", "../data/monaco.osrm")
        .replace('"../monaco.osm.pbf"', repr(str((osrm_example / "monaco.osm.pbf").resolve())))
    )
    config = read_source(source_file)
    options = OsrmSource.parse_options(config)
    assert options.preparation is not None and options.preparation.profile == str(profile)
    steps: list[str] = []

    def prepare() -> bool:
        return OsrmSource.prepare(config, options, force=False, progress=Progress(steps.append))

    assert prepare() and dataset_ready(tmp_path / "data" / "monaco.osrm", "CH")
    assert not prepare()  # the same profile: up to date
    profile.write_text(profile.read_text() + "-- changed\n")
    assert prepare()
    assert any("was built with another profile" in step for step in steps), steps
    assert not prepare()
    (tmp_path / "data" / "monaco.osrm.inputs").unlink()  # built by hand: kept as it is
    profile.write_text(profile.read_text() + "-- changed again\n")
    assert not prepare()


@pytest.mark.parametrize(("name", "algorithm"), [("car-fastest", "CH"), ("car-shortest", "CH"), ("pedestrian-fastest", "MLD")])
async def test_route_equals_a_direct_osrm_call(osrm_example: Path, osrm_datasets: dict[str, Path], name: str, algorithm: str) -> None:
    source = await _source(osrm_example, name)
    assert source.state is SourceState.GREEN
    profile, optimization = name.split("-")
    result = await source.route(RouteRequest((START, VIA, END), Cost(profile, optimization), steps=True))
    direct = _direct(osrm_datasets[name], algorithm, [START, VIA, END], steps=True)
    route = direct["routes"][0]
    assert result.distance == pytest.approx(route["distance"])
    assert result.duration == pytest.approx(route["duration"])
    assert result.geometry == [tuple(c) for c in route["geometry"]["coordinates"]]
    assert len(result.portions) == 2
    for portion, leg in zip(result.portions, route["legs"], strict=True):
        assert portion.distance == pytest.approx(leg["distance"])
        assert [s.instruction["type"] for s in portion.steps] == [s["maneuver"]["type"] for s in leg["steps"]]
        assert [s.attributes["name"] for s in portion.steps] == [s["name"] for s in leg["steps"]]
        assert [s.geometry for s in portion.steps] == [[tuple(c) for c in s["geometry"]["coordinates"]] for s in leg["steps"]]
    assert result.start == tuple(direct["waypoints"][0]["location"])
    assert result.end == tuple(direct["waypoints"][-1]["location"])


async def test_shortest_is_never_longer_than_fastest(osrm_example: Path) -> None:
    fastest = await (await _source(osrm_example, "car-fastest")).route(RouteRequest((START, END), Cost("car", "fastest")))
    shortest = await (await _source(osrm_example, "car-shortest")).route(RouteRequest((START, END), Cost("car", "shortest")))
    assert shortest.distance <= fastest.distance
    assert shortest.duration >= fastest.duration


async def test_steps_carry_osrm_maneuvers(osrm_example: Path) -> None:
    result = await (await _source(osrm_example, "car-fastest")).route(RouteRequest((START, END), Cost("car", "fastest")))
    steps = result.portions[0].steps
    assert steps[0].instruction["type"] == "depart"
    assert steps[-1].instruction["type"] == "arrive"
    assert any("modifier" in s.instruction for s in steps)
    roundabouts = [s.instruction for s in steps if s.instruction["type"].startswith("roundabout")]
    assert all(isinstance(i.get("exit"), int) for i in roundabouts if "exit" in i)


async def test_banned_motorway_changes_a_route_that_uses_it(osrm_example: Path) -> None:
    source = await _source(osrm_example, "car-fastest")
    # From above Eze to Monaco, where the fastest way takes the A8 motorway.
    points = ((7.37612, 43.75813), (7.45165, 43.73148))
    free = await source.route(RouteRequest(points, Cost("car", "fastest"), steps=True))
    banned = await source.route(
        RouteRequest(points, Cost("car", "fastest"), constraints=(Constraint("banned", "waytype", "=", "autoroute", field="motorway"),))
    )
    direct = _direct(Path(source.options.storage.file), "CH", list(points), exclude=["motorway"])
    assert banned.distance == pytest.approx(direct["routes"][0]["distance"])
    assert banned.geometry != free.geometry


async def test_nearest_returns_the_number_of_points_asked(osrm_example: Path, osrm_datasets: dict[str, Path]) -> None:
    source = await _source(osrm_example, "car-fastest")
    result = await source.nearest(NearestRequest(START, 3))
    engine = osrm.OSRM(storage_config=str(osrm_datasets["car-fastest"]), algorithm="CH", use_shared_memory=False)
    params = osrm.NearestParameters(coordinates=[START])
    params.number_of_results = 3
    direct = plain(engine.Nearest(params))
    assert [p.point for p in result.points] == [tuple(w["location"]) for w in direct["waypoints"]]
    assert [p.distance for p in result.points] == pytest.approx([w["distance"] for w in direct["waypoints"]])


async def test_a_missing_dataset_leaves_the_source_red(tmp_path: Path) -> None:
    path = tmp_path / "broken.source"
    path.write_text(
        'id = "broken"\ntype = "osrm"\n[storage]\nfile = "nowhere/monaco.osrm"\n[cost]\nprofile = "car"\noptimization = "fastest"\n'
    )
    source = OsrmSource.from_config(read_source(path))
    with pytest.raises(RuntimeError):
        await source.connect()
    assert source.state is SourceState.RED
    assert "nowhere" in source.health()["reason"]


async def test_a_route_made_impossible_by_a_constraint_is_a_no_path_error(osrm_example: Path) -> None:
    source = await _source(osrm_example, "car-fastest")
    # The end snaps to a road that only the motorway reaches within the extract.
    points = ((7.38076, 43.74470), (7.44436, 43.75035))
    assert (await source.route(RouteRequest(points, Cost("car", "fastest")))).distance > 0
    ban = (Constraint("banned", "waytype", "=", "autoroute", field="motorway"),)
    with pytest.raises(NoPathFound):
        await source.route(RouteRequest(points, Cost("car", "fastest"), constraints=ban))


class TestOsrmContract(SourceContract):
    """The core's source contract on the car/fastest Monaco dataset."""

    contract_step_instructions = True  # every step carries a typed instruction

    @pytest.fixture
    async def contract_source(self, osrm_example: Path) -> OsrmSource:
        return await _source(osrm_example, "car-fastest")

    @pytest.fixture
    def contract_points(self) -> list[tuple[float, float]]:
        return [START, END]


async def test_loading_a_dataset_is_not_bounded_by_the_request_time_out(osrm_example: Path) -> None:
    config = read_source(osrm_example / "sources" / "monaco-car-fastest.source")
    # A time-out no engine call meets: loading the dataset still succeeds, a request does not.
    source = OsrmSource.from_config(attrs.evolve(config, timeout=1e-9))
    await source.connect()
    try:
        assert source.state is SourceState.GREEN
        with pytest.raises(EngineTimeout):
            await source.route(RouteRequest((START, END), Cost("car", "fastest")))
    finally:
        await source.disconnect()


async def test_a_source_not_connected_is_unavailable_like_every_engine(osrm_example: Path) -> None:
    source = OsrmSource.from_config(read_source(osrm_example / "sources" / "monaco-car-fastest.source"))
    with pytest.raises(SourceUnavailable) as raised:
        await source.route(RouteRequest((START, END), Cost("car", "fastest")))
    assert (raised.value.status, raised.value.code) == (503, "source_unavailable")


async def test_requests_run_inline_without_a_thread_hand_off(osrm_example: Path) -> None:
    """osrm-bindings holds the GIL: route, nearest and native calls run on the loop, no engine thread is started."""
    from concurrent.futures import ThreadPoolExecutor

    class NoHandOff(ThreadPoolExecutor):
        def submit(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("a request was handed to a thread")

    source = await _source(osrm_example, "car-fastest")
    source._executor = NoHandOff(1)  # loading the dataset used the source's thread; requests must not
    try:
        route = await source.route(RouteRequest((START, END), Cost("car", "fastest")))
        nearest = await source.nearest(NearestRequest(START, 2))
        assert route.distance > 0 and len(nearest.points) == 2
    finally:
        await source.disconnect()


async def test_an_inline_call_longer_than_the_time_out_is_an_engine_timeout() -> None:
    """run_inline keeps run_blocking's meaning: an answer later than the time-out is a 504, a prompt one is returned."""
    import time

    from roadkit.config.models import SourceConfig
    from roadkit.routing.source import Source

    source = Source(SourceConfig(path=Path("x.source"), id="slow", type="test", timeout=0.05), None)
    assert source.run_inline(lambda: "quick") == "quick"
    with pytest.raises(EngineTimeout) as raised:
        source.run_inline(time.sleep, 0.1)
    assert raised.value.status == 504
