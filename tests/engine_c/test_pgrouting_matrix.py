"""Matrices on pgRouting: every cell against pgRouting run by hand on the pair alone, and against the route."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import asyncpg
import pytest
from starlette.testclient import TestClient

from roadkit.config.loader import read_source
from roadkit.errors import EngineTimeout, NoPathFound, PointNotSnapped
from roadkit.routing.model import Coord, Cost, MatrixRequest, RouteRequest
from roadkit.routing.source import SourceState
from roadkit.testing import service_client
from roadkit_pgrouting import matrices
from roadkit_pgrouting.source import PgRoutingSource
from roadkit_support.pgcluster import PrivateCluster
from tests.engine_c.conftest import END, FAR_END, FAR_START, START, VIA
from tests.engine_c.grid import vertex, write_grid

MATRIX, ROUTE = "/simple/1.0.0/matrix", "/simple/1.0.0/route"
# Two points whose pair pgr_trsp_withPoints gets wrong when a third point lies on edge 1330 (a turn
# restriction's edge), as ON_RESTRICTED does: it then avoids that edge altogether (203 s instead of 171 s).
PAIR = ((7.419817, 43.736237), (7.426064, 43.744718))
ON_RESTRICTED = (7.427127, 43.738618)
SEA = (7.47, 43.711)  # in the resource's box, 4.4 km from the nearest road
COSTS = {
    ("car", "fastest"): ("cost_s_car", "reverse_cost_s_car", True),
    ("car", "shortest"): ("cost_m_car", "reverse_cost_m_car", True),
    ("pedestrian", "fastest"): ("cost_s_pedestrian", "reverse_cost_s_pedestrian", False),
    ("pedestrian", "shortest"): ("cost_m_pedestrian", "reverse_cost_m_pedestrian", False),
}


def wide_source_file(example: Path, folder: Path) -> Path:
    """The Monaco source, its routes searching the whole graph (a box wider than Monaco) as matrices of spread points do."""
    text = (example / "sources" / "monaco-pgrouting.source").read_text()
    text = text.replace('"../pgrouting.database.toml"', json.dumps(str(example / "pgrouting.database.toml")))
    path = folder / "wide.source"
    path.write_text(text.replace("margin = 0.01 ", "margin = 1.0 "))
    return path


@pytest.fixture
async def source(pg_example: Path, tmp_path: Path) -> AsyncIterator[PgRoutingSource]:
    connected = PgRoutingSource.from_config(read_source(wide_source_file(pg_example, tmp_path)))
    assert isinstance(connected, PgRoutingSource) and connected.options.search.margin == 1.0
    await connected.connect()
    yield connected
    await connected.disconnect()


async def direct_cost(dsn: str, start: Coord, end: Coord, cost: str, reverse_cost: str, restricted: bool) -> float | None:
    """pgRouting's own cost from ``start`` to ``end`` on the whole graph, given these two points only (None: no path)."""
    conn = await asyncpg.connect(dsn)
    try:
        snapped = []
        for x, y in (start, end):
            row = await conn.fetchrow(
                f"SELECT id, ST_LineLocatePoint(the_geom, ST_SetSRID(ST_MakePoint($1, $2), 4326)) AS f FROM monaco.ways "
                f"WHERE {cost} > 0 OR {reverse_cost} > 0 ORDER BY the_geom <-> ST_SetSRID(ST_MakePoint($1, $2), 4326) LIMIT 1",
                x,
                y,
            )
            snapped.append((row["id"], min(max(row["f"], 1e-7), 1 - 1e-7)))
        if snapped[0] == snapped[1]:
            return 0.0
        points = " UNION ALL ".join(
            f"SELECT {i + 1} AS pid, {e}::bigint AS edge_id, {f!r}::float8 AS fraction" for i, (e, f) in enumerate(snapped)
        )
        edges = f"SELECT id, source, target, {cost} AS cost, {reverse_cost} AS reverse_cost FROM monaco.ways"
        if restricted:
            sql = "SELECT agg_cost FROM pgr_trsp_withPoints($1, $2, $3, -1, -2, directed => true) WHERE edge = -1"
            args = [edges, "SELECT path, 1e7::float8 AS cost FROM monaco.turn_restrictions", points]
        else:
            sql, args = "SELECT agg_cost FROM pgr_withPoints($1, $2, -1, -2, directed => true) WHERE edge = -1", [edges, points]
        value: float | None = await conn.fetchval(sql, *args)
        return value
    finally:
        await conn.close()


async def check_every_cell(source: PgRoutingSource, dsn: str, points: Sequence[Coord], profile: str, optimization: str) -> None:
    cost, reverse_cost, restricted = COSTS[(profile, optimization)]
    result = await source.matrix(MatrixRequest(tuple(points), tuple(points), Cost(profile, optimization)))
    assert len(result.sources) == len(result.targets) == len(points)
    checked = 0
    for (i, a), (j, b) in itertools.product(enumerate(points), repeat=2):
        duration, distance = result.durations[i][j], result.distances[i][j]
        if i == j:
            assert (duration, distance) == (0.0, 0.0)
            continue
        route = await source.route(RouteRequest((a, b), Cost(profile, optimization), steps=False))
        assert duration == pytest.approx(route.duration, abs=0.1), f"{profile}/{optimization} duration {i} -> {j}"
        assert distance == pytest.approx(route.distance, abs=1.0), f"{profile}/{optimization} distance {i} -> {j}"
        expected = await direct_cost(dsn, a, b, cost, reverse_cost, restricted)
        measure = duration if optimization == "fastest" else distance
        assert measure == pytest.approx(expected, abs=0.1), f"{profile}/{optimization} {i} -> {j} against pgRouting"
        checked += 1
    assert checked == len(points) * (len(points) - 1)


async def test_car_fastest_cells_equal_pgrouting_on_each_pair_and_the_routes(source: PgRoutingSource, pg_dsn: str) -> None:
    await check_every_cell(source, pg_dsn, [*PAIR, ON_RESTRICTED, START, END, FAR_END], "car", "fastest")


@pytest.mark.parametrize(("profile", "optimization"), [("car", "shortest"), ("pedestrian", "fastest"), ("pedestrian", "shortest")])
async def test_other_costs_cells_equal_pgrouting_on_each_pair_and_the_routes(
    source: PgRoutingSource, pg_dsn: str, profile: str, optimization: str
) -> None:
    await check_every_cell(source, pg_dsn, [START, END, VIA, FAR_START], profile, optimization)


async def test_a_point_on_a_restricted_edge_does_not_change_the_other_pairs(source: PgRoutingSource, pg_dsn: str) -> None:
    conn = await asyncpg.connect(pg_dsn)
    try:
        edge = await conn.fetchval(
            "SELECT id FROM monaco.ways WHERE cost_s_car > 0 OR reverse_cost_s_car > 0 "
            "ORDER BY the_geom <-> ST_SetSRID(ST_MakePoint($1, $2), 4326) LIMIT 1",
            *ON_RESTRICTED,
        )
        assert await conn.fetchval("SELECT count(*) FROM monaco.turn_restrictions WHERE $1 = ANY(path)", edge) > 0
    finally:
        await conn.close()
    alone = await source.matrix(MatrixRequest(PAIR[:1], PAIR[1:], Cost("car", "fastest")))
    among = await source.matrix(MatrixRequest((PAIR[0], ON_RESTRICTED), (ON_RESTRICTED, PAIR[1]), Cost("car", "fastest")))
    expected = await direct_cost(pg_dsn, *PAIR, "cost_s_car", "reverse_cost_s_car", restricted=True)
    assert alone.durations[0][0] == pytest.approx(expected, abs=0.1)
    assert among.durations[0][1] == pytest.approx(expected, abs=0.1)
    assert among.distances[0][1] == pytest.approx(alone.distances[0][0], abs=1.0)


async def test_repeated_points_and_rows_follow_the_request(source: PgRoutingSource) -> None:
    result = await source.matrix(MatrixRequest((START, END, START), (END, START), Cost("car", "fastest")))
    assert result.durations[0] == result.durations[2] and result.distances[0] == result.distances[2]
    assert result.durations[0][1] == 0.0 and result.durations[1][0] == 0.0
    assert result.sources[0] == result.sources[2] == result.targets[1]
    assert result.sources[1].point == result.targets[0].point
    assert all(0 <= p.distance < 50 for p in [*result.sources, *result.targets])
    route = await source.route(RouteRequest((START, END), Cost("car", "fastest"), steps=False))
    assert result.durations[0][0] == pytest.approx(route.duration, abs=0.1)
    assert result.sources[0].point == route.start and result.targets[0].point == route.end


@pytest.mark.parametrize(
    ("sources", "targets", "name", "index"), [((START, SEA), (END,), "sources", 1), ((START,), (END, VIA, SEA), "targets", 2)]
)
async def test_a_point_far_from_roads_names_its_parameter_and_index(
    source: PgRoutingSource, sources: tuple[Coord, ...], targets: tuple[Coord, ...], name: str, index: int
) -> None:
    with pytest.raises(PointNotSnapped) as raised:
        await source.matrix(MatrixRequest(sources, targets, Cost("car", "fastest")))
    assert raised.value.parameter == name and raised.value.index == index
    assert f"point {index}" in raised.value.message and "2000 m" in raised.value.message


async def test_statement_time_out_is_an_engine_time_out(source: PgRoutingSource) -> None:
    source.timeout = 0.001
    points = tuple((7.40 + k * 0.001, 43.73 + (k % 7) * 0.002) for k in range(30))
    with pytest.raises(EngineTimeout) as raised:
        await source.matrix(MatrixRequest(points, points, Cost("car", "fastest")))
    assert "monaco" not in raised.value.message.lower().replace("monaco-pgrouting", "")  # no table or SQL text
    assert source.state is SourceState.GREEN


# -- a grid with a trap (vertex 1 has only one-way edges out of it: no path reaches a point on them) and a
# -- one-way block (rows 4 to 6 westwards only, between columns 3 and 8)


@pytest.fixture(scope="module")
def trap_dsn(pg_cluster: PrivateCluster) -> Iterator[str]:
    dsn = pg_cluster.create_database("matrixtrap", ("postgis", "pgrouting"))

    async def build() -> None:
        await write_grid(dsn, "grid", 12)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("UPDATE grid.ways SET reverse_cost_s_car = -1, reverse_cost_m_car = -1 WHERE source = 1")
            # Rows 4 to 6 one-way westwards from column 3 to 8: eastwards on row 5 goes round by row 3 or 7.
            await conn.execute(
                "UPDATE grid.ways SET cost_s_car = -1, cost_m_car = -1 "
                "WHERE target = source + 1 AND (source - 1) / 12 BETWEEN 4 AND 6 AND (source - 1) % 12 BETWEEN 3 AND 7"
            )
        finally:
            await conn.close()

    asyncio.run(build())
    yield dsn


@pytest.fixture
async def trap(trap_dsn: str, tmp_path: Path) -> AsyncIterator[PgRoutingSource]:
    path = tmp_path / "trap.source"
    path.write_text(
        f'id = "trap"\ntype = "pgrouting"\nprojection = "EPSG:4326"\n[storage]\ndsn = "{trap_dsn}"\nschema = "grid"\n'
        "[search]\nmargin = 0.001\nattempts = 1\n"
        '[[costs]]\nprofile = "car"\noptimization = "fastest"\ncost_type = "time"\n'
        'cost_column = "cost_s_car"\nreverse_cost_column = "reverse_cost_s_car"\n'
    )
    source = PgRoutingSource.from_config(read_source(path))
    assert isinstance(source, PgRoutingSource)
    await source.connect()
    yield source
    await source.disconnect()


async def test_a_pair_without_path_is_none_and_the_others_are_found(trap: PgRoutingSource) -> None:
    trapped = ((vertex(0, 0)[0] + vertex(0, 1)[0]) / 2, vertex(0, 0)[1])  # on the one-way edge 1 -> 2
    far = vertex(11, 11)
    result = await trap.matrix(MatrixRequest((far, trapped), (trapped, far), Cost("car", "fastest")))
    assert result.durations[0][0] is None and result.distances[0][0] is None, "nothing leads onto the trap's edges"
    with pytest.raises(NoPathFound):
        await trap.route(RouteRequest((far, trapped), Cost("car", "fastest")))
    assert result.durations[1][1] is not None and result.durations[1][1] > 0, "the trap's edges lead out"
    route = await trap.route(RouteRequest((trapped, far), Cost("car", "fastest"), steps=False))
    assert result.durations[1][1] == pytest.approx(route.duration, abs=0.1)
    assert result.distances[1][1] == pytest.approx(route.distance, abs=1.0)
    assert result.durations[0][1] == 0.0 and result.durations[1][0] == 0.0


def along(i: int, j: int, fraction: float) -> Coord:
    """A point on the edge from vertex (i, j) to vertex (i, j + 1), at ``fraction`` of it."""
    (x0, y0), (x1, _) = vertex(i, j), vertex(i, j + 1)
    return (x0 + (x1 - x0) * fraction, y0)


async def test_points_on_one_edge_travel_the_part_between_them(trap: PgRoutingSource) -> None:
    # A two-way edge both ways, then the one-way edge out of the trap: forwards only (nothing leads back onto it).
    for edge, backwards in (((9, 5), True), ((0, 0), False)):
        near, far = along(*edge, 0.3), along(*edge, 0.7)
        result = await trap.matrix(MatrixRequest((near, far), (near, far), Cost("car", "fastest")))
        route = await trap.route(RouteRequest((near, far), Cost("car", "fastest"), steps=False))
        assert result.distances[0][1] == pytest.approx(route.distance, abs=1.0) and route.distance < 40, "0.4 of a 73 m edge"
        assert result.durations[0][1] == pytest.approx(route.duration, abs=0.1)
        if backwards:
            assert result.distances[1][0] == pytest.approx(route.distance, abs=1.0)
        else:
            assert result.durations[1][0] is None and result.distances[1][0] is None


async def test_a_path_out_of_the_points_box_is_found_on_the_whole_graph(trap: PgRoutingSource, trap_dsn: str) -> None:
    request = MatrixRequest((along(5, 5, 0.5),), (along(5, 6, 0.5),), Cost("car", "fastest"))
    conn = await asyncpg.connect(trap_dsn)
    try:
        sql, args = matrices.matrix_statement(trap, request)
        first = await conn.fetchrow(sql, *args)
    finally:
        await conn.close()
    assert first["ok"] and first["cell_starts"] is None, "no path in the box of the points (rows 4 to 6)"
    result = await trap.matrix(request)
    route = await trap.route(RouteRequest((*request.sources, *request.targets), Cost("car", "fastest"), steps=False))
    assert result.durations[0][0] == pytest.approx(route.duration, abs=0.1)
    assert result.distances[0][0] == pytest.approx(route.distance, abs=1.0)
    assert route.distance > 4 * 99, "two rows up and two down, at least"


# -- the benchmark's direct statement


async def test_the_statement_run_directly_answers_as_the_source(source: PgRoutingSource, pg_dsn: str) -> None:
    points = (START, END, VIA, FAR_START, FAR_END)
    request = MatrixRequest(points, points[:3], Cost("car", "fastest"))
    expected = await source.matrix(request)
    conn = await asyncpg.connect(pg_dsn)
    try:
        sql, args = matrices.matrix_statement(source, request)
        row = await conn.fetchrow(sql, *args)
        direct = await matrices.matrix(source, request, source.setting(request.cost), lambda sql, args: conn.fetchrow(sql, *args))
    finally:
        await conn.close()
    assert row["ok"] and len(row["durations"]) == 5 * 3 - 3, "one cell per pair of distinct points"
    assert direct == expected


# -- the simple API on the Monaco demo's pgRouting resource


@pytest.fixture(scope="module")
def client(pg_example: Path) -> Iterator[TestClient]:
    with service_client(pg_example / "service.toml") as test_client:
        yield test_client


def xy(point: Coord) -> str:
    return f"{point[0]},{point[1]}"


def test_simple_api_matrix_on_pgrouting_equals_its_routes(client: TestClient) -> None:
    points = [START, END, VIA]
    params = {"resource": "monaco-pgrouting", "sources": "|".join(map(xy, points)), "timeUnit": "second"}
    response = client.get(MATRIX, params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["resource"] == "monaco-pgrouting" and body["profile"] == "car" and body["optimization"] == "fastest"
    assert len(body["durations"]) == len(body["distances"]) == 3 and len(body["targets"]) == 3
    for (i, a), (j, b) in itertools.product(enumerate(points), repeat=2):
        if i == j:
            assert body["durations"][i][j] == 0
            continue
        route = client.get(ROUTE, params={"resource": "monaco-pgrouting", "start": xy(a), "end": xy(b), "timeUnit": "second"}).json()
        assert body["durations"][i][j] == pytest.approx(route["duration"], abs=0.1)
        assert body["distances"][i][j] == pytest.approx(route["distance"], abs=1.0)
    posted = client.post(MATRIX, json={**params, "sources": [list(p) for p in points], "distanceUnit": "kilometer"})
    assert posted.status_code == 200, posted.text
    assert posted.json()["durations"] == body["durations"]
    assert posted.json()["distances"][0][1] == pytest.approx(body["distances"][0][1] / 1000)


@pytest.mark.parametrize("kind", ["banned", "avoid"])
def test_simple_api_matrix_on_pgrouting_applies_constraints_as_routes_do(client: TestClient, kind: str) -> None:
    start, end = FAR_END, START  # the fastest car route takes a tunnel
    common = {"resource": "monaco-pgrouting", "timeUnit": "second"}
    without = client.get(MATRIX, params={**common, "sources": xy(start), "targets": xy(end)}).json()
    constraint = json.dumps({"constraintType": kind, "key": "wayType", "operator": "=", "value": "tunnel"})
    response = client.get(MATRIX, params={**common, "sources": xy(start), "targets": xy(end), "constraints": constraint})
    assert response.status_code == 200, response.text
    body = response.json()
    route = client.get(ROUTE, params={**common, "start": xy(start), "end": xy(end), "constraints": constraint}).json()
    assert body["durations"][0][0] == pytest.approx(route["duration"], abs=0.1)
    assert body["distances"][0][0] == pytest.approx(route["distance"], abs=1.0)
    assert abs(body["durations"][0][0] - without["durations"][0][0]) > 1, "the tunnel was on the fastest way"


def test_simple_api_matrix_on_pgrouting_names_the_point_far_from_roads(client: TestClient) -> None:
    params = {"resource": "monaco-pgrouting", "sources": xy(START), "targets": f"{xy(END)}|{xy(SEA)}"}
    response = client.get(MATRIX, params=params)
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert "targets" in message and "point 1" in message


async def turned_pairs(source: PgRoutingSource) -> tuple[MatrixRequest, list[tuple[int, int]]]:
    """A car matrix among points some of whose paths make a restricted turn, and those pairs (its first statement's)."""
    points = (*PAIR, ON_RESTRICTED, START, END, FAR_END)
    request = MatrixRequest(points, points, Cost("car", "fastest"))
    sql, args = matrices.matrix_statement(source, request)
    first = await source.fetchrow(sql, args)
    turned = list(zip(first["turn_starts"] or (), first["turn_ends"] or (), strict=True))
    assert 3 <= len(turned) < len(points) * (len(points) - 1), "some paths make a restricted turn, not all"
    return request, turned


async def test_only_the_pairs_whose_path_makes_a_restricted_turn_are_searched_again_a_few_per_statement(
    source: PgRoutingSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    request, turned = await turned_pairs(source)
    expected = await source.matrix(request)
    statements: list[str] = []
    fetchrow = source.fetchrow

    async def counted(sql: str, args: Sequence[object]) -> object:
        statements.append(sql)
        return await fetchrow(sql, args)

    monkeypatch.setattr(source, "fetchrow", counted)
    monkeypatch.setattr(matrices, "TURN_PAIRS", 2)
    chunked = await source.matrix(request)
    for row, expected_row in zip(chunked.durations + chunked.distances, expected.durations + expected.distances, strict=True):
        assert row == pytest.approx(expected_row, abs=1e-6)  # the same sums, added in another order
    assert len(statements) == 1 + math.ceil(len(turned) / 2), "the first statement, then two turned pairs per statement"
    assert "pgr_trsp_withPoints" not in statements[0] and all("pgr_trsp_withPoints" in s for s in statements[1:])


async def test_a_statement_of_turned_pairs_that_would_end_past_the_time_out_is_not_started(
    source: PgRoutingSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pgRouting's TRSP does not stop when PostgreSQL cancels it: a statement begun near the time-out runs
    # on past it. Here every statement of turned pairs takes a second (as on a large network).
    request, pairs = await turned_pairs(source)
    turned: list[float] = []
    fetchrow = source.fetchrow

    async def slow(sql: str, args: Sequence[object]) -> object:
        row = await fetchrow(sql, args)
        if "pgr_trsp_withPoints" in sql:
            await asyncio.sleep(1.0)
            turned.append(loop.time())
        return row

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(source, "fetchrow", slow)
    monkeypatch.setattr(matrices, "TURN_PAIRS", 1)
    monkeypatch.setattr(source, "timeout", 2.5)
    began = loop.time()
    with pytest.raises(EngineTimeout):
        await source.matrix(request)
    ended = loop.time() - began
    # Statements end at about 1 s and 2 s; the next would end at about 3 s, past the 2.5 s: not started.
    assert ended < 2.5, f"answered {ended:.2f} s after the start: no statement runs past the time-out"
    assert 1 <= len(turned) < len(pairs), turned
