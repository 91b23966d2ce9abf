"""Valhalla matrices (``sources_to_targets``) against valhalla_service's own answers on the Monaco tiles.

Both source kinds (in process and ``valhalla-http``) must answer, for the same points, what
valhalla_service answers to the same request: durations within 0.1 s, distances within 1 m, the
same cells without a path, and the points where Valhalla snapped them (its verbose answer's). So must
the simple API's matrix on the demo's Valhalla resource. Also: the errors (a point no road is near,
multimodal, Valhalla's own cell limit) and the matrix limits ``roadkit prepare`` writes into valhalla.json.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from roadkit.config.loader import read_source
from roadkit.errors import ParameterInvalid, PointNotSnapped
from roadkit.routing.model import Constraint, Coord, Cost, MatrixRequest, MatrixResponse
from roadkit.routing.source import Progress
from roadkit_valhalla import ValhallaSource
from roadkit_valhalla.base import ValhallaBase
from roadkit_valhalla.prepare import MATRIX_LOCATION_PAIRS, TIMEDEP_DISTANCE_MATRIX, refresh_matrix_limits
from roadkit_valhalla.translate import meters
from tests.engine_b.conftest import connected, edit_source
from tests.engine_b.test_valhalla_http import remote
from tests.engine_servers import EngineServer, running, valhalla_service

TUNNELS = Constraint("banned", "waytype", "=", "tunnel", field="exclude_tunnels")
MORNING = datetime(2026, 6, 15, 8, 0)
NOWHERE = (2.3522, 48.8566)  # Paris: no Monaco road within Valhalla's search


def monaco_points(count: int, seed: int) -> list[Coord]:
    """Random points over Monaco (some in the sea or on a one-way street: cells without a path happen)."""
    rng = random.Random(seed)
    return [(round(rng.uniform(7.409, 7.439), 6), round(rng.uniform(43.725, 43.751), 6)) for _ in range(count)]


@pytest.fixture(scope="module")
def served(valhalla_config: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineServer]:
    """valhalla_service on the Monaco tiles and valhalla.json the in-process source loads."""
    with running(valhalla_service(valhalla_config, tmp_path_factory.mktemp("valhalla-service"))) as (server,):
        yield server


@pytest.fixture
async def sources(valhalla_example: Path, tmp_path: Path, served: EngineServer) -> AsyncIterator[list[ValhallaBase]]:
    """The demo source in process and the same file as a ``valhalla-http`` source on ``served``."""
    in_process = ValhallaSource.from_config(read_source(valhalla_example / "sources" / "monaco-valhalla.source"))
    assert isinstance(in_process, ValhallaSource)
    await in_process.connect()
    over_http = await remote(valhalla_example, tmp_path, [served.url])
    yield [in_process, over_http]
    await in_process.disconnect()
    await over_http.disconnect()


def engine_answer(server: EngineServer, body: dict[str, Any]) -> dict[str, Any]:
    """valhalla_service's own verbose answer to ``body`` (an object per cell, the snapped points)."""
    response = httpx.post(f"{server.url}/sources_to_targets", json={**body, "verbose": True}, timeout=60)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def assert_equal_to_engine(found: MatrixResponse, answer: dict[str, Any], request: MatrixRequest) -> None:
    """``found`` is the engine's ``answer``: cells (0.1 s, 1 m), cells without a path, snapped points."""
    cells = answer["sources_to_targets"]
    assert len(found.durations) == len(found.distances) == len(request.sources)
    for row, (durations, distances) in enumerate(zip(found.durations, found.distances, strict=True)):
        assert len(durations) == len(distances) == len(request.targets)
        for column, (duration, distance) in enumerate(zip(durations, distances, strict=True)):
            cell = cells[row][column]
            if cell["time"] is None:
                assert duration is None and distance is None, (row, column)
            else:
                assert duration == pytest.approx(cell["time"], abs=0.1), (row, column)
                assert distance == pytest.approx(cell["distance"] * 1000, abs=1.0), (row, column)
    for name, points, asked in (("sources", found.sources, request.sources), ("targets", found.targets, request.targets)):
        assert len(points) == len(answer[name]) == len(asked), name
        for point, snapped, where in zip(points, answer[name], asked, strict=True):
            assert point.point == pytest.approx((snapped["lon"], snapped["lat"]), abs=1e-6), name
            assert point.distance == pytest.approx(meters(where, point.point), abs=0.01)


def body_of(request: MatrixRequest, costing: str, costing_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The request as one would write it to valhalla_service by hand."""
    # A banned way type also keeps the points off those ways (a hard ban: Valhalla lets a path start on one).
    kept_off = {"search_filter": {"exclude_tunnel": True}} if TUNNELS in request.constraints else {}
    body: dict[str, Any] = {
        "sources": [{"lon": x, "lat": y, **kept_off} for x, y in request.sources],
        "targets": [{"lon": x, "lat": y, **kept_off} for x, y in request.targets],
        "costing": costing,
    }
    if costing_options:
        body["costing_options"] = costing_options
    if request.date_time is not None:
        body["date_time"] = {"type": 1, "value": request.date_time.strftime("%Y-%m-%dT%H:%M")}
    return body


CASES = [
    # (profile, optimization, costing, costing options of the source file and the constraints, constraints, date_time)
    ("car", "fastest", "auto", None, (), None),
    ("car", "shortest", "auto", {"auto": {"shortest": True}}, (), None),
    ("pedestrian", "fastest", "pedestrian", {"pedestrian": {"walking_speed": 4.0}}, (), None),
    ("car", "fastest", "auto", {"auto": {"exclude_tunnels": True}}, (TUNNELS,), None),
    ("car", "fastest", "auto", None, (), MORNING),
]


@pytest.mark.parametrize(("profile", "optimization", "costing", "options", "constraints", "date_time"), CASES)
async def test_matrices_equal_valhalla_services_own_answer(
    sources: list[ValhallaBase],
    served: EngineServer,
    profile: str,
    optimization: str,
    costing: str,
    options: dict[str, Any] | None,
    constraints: tuple[Constraint, ...],
    date_time: datetime | None,
) -> None:
    points = monaco_points(20, seed=10)
    request = MatrixRequest(tuple(points[:8]), tuple(points[8:]), Cost(profile, optimization), constraints, date_time)
    answer = engine_answer(served, body_of(request, costing, options))
    for source in sources:
        assert_equal_to_engine(await source.matrix(request), answer, request)
    nulls = sum(cell["time"] is None for row in answer["sources_to_targets"] for cell in row)
    assert nulls < len(request.sources) * len(request.targets)  # the comparison compared numbers


async def test_a_square_matrix_of_100_points_is_valhallas_own(sources: list[ValhallaBase], served: EngineServer) -> None:
    """Sources × sources (no targets) at the size the benchmark asks, beyond Valhalla's own default of 2500 cells."""
    points = tuple(monaco_points(100, seed=7))
    request = MatrixRequest(points, points, Cost("car", "fastest"))
    answer = engine_answer(served, body_of(request, "auto"))
    found = await sources[0].matrix(request)
    assert_equal_to_engine(found, answer, request)
    assert all(found.durations[i][i] == 0 for i in range(len(points)))
    assert any(cell is None for row in found.durations for cell in row)  # Monaco's one-way streets and islands


async def test_date_time_is_taken_into_account(served: EngineServer) -> None:
    """With a date_time Valhalla computes another matrix (time-dependent): the date_time case above can fail."""
    points = monaco_points(20, seed=10)  # the points of CASES
    timed, plain = (
        engine_answer(served, body_of(MatrixRequest(tuple(points[:8]), tuple(points[8:]), Cost("car", "fastest"), date_time=at), "auto"))
        for at in (MORNING, None)
    )
    assert timed["algorithm"] == "timedistancematrix" and plain["algorithm"] == "costmatrix"
    assert not timed.get("warnings")  # valhalla.json's max_timedep_distance_matrix lets it through
    assert [[c["time"] for c in row] for row in timed["sources_to_targets"]] != [
        [c["time"] for c in row] for row in plain["sources_to_targets"]
    ]


@pytest.mark.parametrize(("name", "index"), [("sources", 1), ("targets", 2)])
async def test_a_point_no_road_is_near_is_named_with_its_index(sources: list[ValhallaBase], name: str, index: int) -> None:
    points = monaco_points(4, seed=11)
    asked = {"sources": points[:3], "targets": points[1:]}
    asked[name][index] = NOWHERE
    request = MatrixRequest(tuple(asked["sources"]), tuple(asked["targets"]), Cost("car", "fastest"))
    for source in sources:
        with pytest.raises(PointNotSnapped) as raised:
            await source.matrix(request)
        assert raised.value.status == 400 and raised.value.code == "point_not_snapped"
        assert raised.value.parameter == name and raised.value.index == index
        assert f"point {index}" in str(raised.value)


async def test_multimodal_has_no_matrix_and_says_so(sources: list[ValhallaBase]) -> None:
    points = tuple(monaco_points(2, seed=5))
    for source in sources:
        with pytest.raises(ParameterInvalid, match="no matrix") as raised:
            await source.matrix(MatrixRequest(points, points, Cost("multimodal", "fastest")))
        assert raised.value.parameter == "profile"


async def test_valhallas_own_cell_limit_is_a_400_naming_sources(variant: Path, valhalla_config: Path, tmp_path: Path) -> None:
    """A valhalla.json whose max_matrix_location_pairs is lower than the resource's limits: the engine's refusal, named."""
    config = json.loads(valhalla_config.read_text())
    config["service_limits"]["auto"]["max_matrix_location_pairs"] = 100
    lowered = tmp_path / "valhalla.json"
    lowered.write_text(json.dumps(config))
    source = await connected(edit_source(variant, storage={"config": str(lowered)}).parent.parent)
    try:
        points = tuple(monaco_points(11, seed=2))
        assert len((await source.matrix(MatrixRequest(points[:10], points[:10], Cost("car", "fastest")))).durations) == 10
        with pytest.raises(ParameterInvalid) as raised:
            await source.matrix(MatrixRequest(points, points[:10], Cost("car", "fastest")))
        assert raised.value.parameter == "sources" and "more cells (sources × targets) than the engine accepts" in str(raised.value)
    finally:
        await source.disconnect()


def test_prepare_raises_the_matrix_limits_of_an_earlier_valhalla_json(valhalla_config: Path, tmp_path: Path) -> None:
    config = json.loads(valhalla_config.read_text())
    assert config["service_limits"]["auto"]["max_matrix_location_pairs"] == MATRIX_LOCATION_PAIRS
    assert config["service_limits"]["max_timedep_distance_matrix"] == TIMEDEP_DISTANCE_MATRIX
    config["service_limits"]["auto"]["max_matrix_location_pairs"] = 2500  # valhalla_build_config's defaults
    config["service_limits"]["max_timedep_distance_matrix"] = 0
    path = tmp_path / "valhalla.json"
    path.write_text(json.dumps(config))
    assert refresh_matrix_limits(path, Progress())
    refreshed = json.loads(path.read_text())
    assert refreshed["service_limits"]["auto"]["max_matrix_location_pairs"] == MATRIX_LOCATION_PAIRS
    assert refreshed["service_limits"]["max_timedep_distance_matrix"] == TIMEDEP_DISTANCE_MATRIX
    assert refreshed["service_limits"]["multimodal"]["max_matrix_location_pairs"] == 0  # no matrices: stays so
    assert not refresh_matrix_limits(path, Progress())


MATRIX = "/simple/1.0.0/matrix"
TUNNEL = '{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}'


def text(points: list[Coord]) -> str:
    return "|".join(f"{x},{y}" for x, y in points)


def assert_answered_as_engine(body: dict[str, Any], answer: dict[str, Any]) -> None:
    """The simple API's matrix (seconds, meters, EPSG:4326) against valhalla_service's verbose answer."""
    for name in ("sources", "targets"):
        assert [p["geometry"] for p in body[name]] == [[p["lon"], p["lat"]] for p in answer[name]]
    for row, cells in zip(body["durations"], answer["sources_to_targets"], strict=True):
        assert len(row) == len(cells)
        for duration, cell in zip(row, cells, strict=True):
            assert (duration is None) == (cell["time"] is None)
            if duration is not None:
                assert abs(duration - cell["time"]) <= 0.1
    assert any(duration for row in body["durations"] for duration in row)  # numbers were compared, not only nulls
    for row, cells in zip(body["distances"], answer["sources_to_targets"], strict=True):
        for distance, cell in zip(row, cells, strict=True):
            assert (distance is None) == (cell["distance"] is None)
            if distance is not None:
                assert abs(distance - cell["distance"] * 1000) <= 1.0


def test_the_simple_apis_matrix_is_valhallas_own_answer(client: Any, served: EngineServer) -> None:
    """GET with targets, a banned tunnel and a date_time, on the demo's Valhalla resource."""
    points = monaco_points(20, seed=10)
    sources, targets = points[:8], points[8:]
    params = {"resource": "monaco-valhalla", "sources": text(sources), "targets": text(targets), "timeUnit": "second"}
    params |= {"constraints": TUNNEL, "date_time": "2026-06-15T08:00"}
    response = client.get(MATRIX, params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["resource"], body["profile"], body["optimization"], body["distanceUnit"]) == ("monaco-valhalla", "car", "fastest", "meter")
    request = MatrixRequest(tuple(sources), tuple(targets), Cost("car", "fastest"), (TUNNELS,), date_time=MORNING)
    assert_answered_as_engine(body, engine_answer(served, body_of(request, "auto", {"auto": {"exclude_tunnels": True}})))
    for point, asked in zip(body["sources"], sources, strict=True):
        assert point["distance"] == pytest.approx(meters(asked, tuple(point["geometry"])), abs=0.01)


def test_the_largest_square_matrix_the_resource_allows_is_valhallas_own(client: Any, served: EngineServer) -> None:
    """POST, no targets: 100 x 100 pedestrian, the resource's default limits."""
    points = monaco_points(100, seed=12)
    response = client.post(MATRIX, json={"resource": "monaco-valhalla", "sources": [list(p) for p in points], "profile": "pedestrian"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["targets"] == body["sources"]
    request = MatrixRequest(tuple(points), tuple(points), Cost("pedestrian", "fastest"))
    assert_answered_as_engine(body, engine_answer(served, body_of(request, "pedestrian", {"pedestrian": {"walking_speed": 4.0}})))


def test_the_simple_api_has_no_multimodal_matrix(client: Any) -> None:
    response = client.get(
        MATRIX, params={"resource": "monaco-valhalla", "sources": text(monaco_points(2, seed=1)), "profile": "multimodal"}
    )
    assert response.status_code == 400
    assert "'profile'" in response.json()["error"]["message"]
