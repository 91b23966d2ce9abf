"""The pgRouting source on a real PostgreSQL/pgRouting and the Monaco graph, against direct SQL."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from shapely.geometry import LineString, Point

from roadkit.config.loader import read_source
from roadkit.errors import NoIsochroneFound, NoPathFound, ParameterInvalid, SourceUnavailable
from roadkit.plugins import Plugins
from roadkit.routing.model import Coord, Cost, IsochroneRequest, NearestRequest, RouteRequest
from roadkit.routing.source import SourceState
from roadkit.testing import SourceContract
from roadkit_pgrouting import queries
from roadkit_pgrouting.source import PgRoutingSource
from tests.engine_c.conftest import END, FAR_END, FAR_START, START, VIA


def source_file(example: Path) -> Path:
    return example / "sources" / "monaco-pgrouting.source"


async def connected(example: Path) -> PgRoutingSource:
    source = PgRoutingSource.from_config(read_source(source_file(example)))
    assert isinstance(source, PgRoutingSource)
    await source.connect()
    return source


@pytest.fixture
async def source(pg_example: Path) -> AsyncIterator[PgRoutingSource]:
    connected_source = await connected(pg_example)
    yield connected_source
    await connected_source.disconnect()


class TestPgRoutingContract(SourceContract):
    contract_step_instructions = False  # the specification: empty instructions for Engine C

    @pytest.fixture
    async def contract_source(self, source: PgRoutingSource) -> PgRoutingSource:
        return source

    @pytest.fixture
    def contract_points(self) -> Sequence[Coord]:
        return [START, END]


def test_pgrouting_kind_is_discoverable_through_its_entry_point() -> None:
    assert Plugins.create().source_kinds()["pgrouting"] is PgRoutingSource


def test_road2_pgr_type_is_accepted(pg_example: Path, tmp_path: Path) -> None:
    text = source_file(pg_example).read_text().replace('type = "pgrouting"', 'type = "pgr"')
    (tmp_path / "x.source").write_text(text.replace('"../pgrouting.database.toml"', f'"{pg_example / "pgrouting.database.toml"}"'))
    assert read_source(tmp_path / "x.source").type == "pgrouting"


async def _direct_route(dsn: str, points: Sequence[Coord], cost: str, rcost: str) -> tuple[float, list[int]]:
    """The route as one hand-written pgRouting call on the whole graph: (total cost, edge ids)."""
    conn = await asyncpg.connect(dsn)
    try:
        snapped = []
        for x, y in points:
            row = await conn.fetchrow(
                f"SELECT id, ST_LineLocatePoint(the_geom, ST_SetSRID(ST_MakePoint($1, $2), 4326)) AS f FROM monaco.ways "
                f"WHERE {cost} > 0 OR {rcost} > 0 ORDER BY the_geom <-> ST_SetSRID(ST_MakePoint($1, $2), 4326) LIMIT 1",
                x,
                y,
            )
            snapped.append((row["id"], min(max(row["f"], 1e-7), 1 - 1e-7)))
        points_sql = " UNION ALL ".join(
            f"SELECT {i + 1} AS pid, {e}::bigint AS edge_id, {f!r}::float8 AS fraction" for i, (e, f) in enumerate(snapped)
        )
        via = ", ".join(f"-{i + 1}" for i in range(len(points)))
        rows = await conn.fetch(
            "SELECT edge, route_agg_cost FROM pgr_trspVia_withPoints($1, $2, $3, ARRAY[" + via + "]::bigint[], directed => true)",
            f"SELECT id, source, target, {cost} AS cost, {rcost} AS reverse_cost FROM monaco.ways",
            "SELECT path, 1e7::float8 AS cost FROM monaco.turn_restrictions",
            points_sql,
        )
    finally:
        await conn.close()
    return rows[-1]["route_agg_cost"], [r["edge"] for r in rows if r["edge"] > 0]


@pytest.mark.parametrize(
    ("profile", "optimization", "columns", "measure"),
    [
        ("car", "fastest", ("cost_s_car", "reverse_cost_s_car"), "duration"),
        ("car", "shortest", ("cost_m_car", "reverse_cost_m_car"), "distance"),
        ("pedestrian", "fastest", ("cost_s_pedestrian", "reverse_cost_s_pedestrian"), "duration"),
        ("pedestrian", "shortest", ("cost_m_pedestrian", "reverse_cost_m_pedestrian"), "distance"),
    ],
)
@pytest.mark.parametrize("points", [(START, END), (START, VIA, END), (FAR_START, FAR_END)], ids=["short", "via", "long"])
async def test_route_equals_direct_pgrouting_call(
    source: PgRoutingSource, pg_dsn: str, profile: str, optimization: str, columns: tuple[str, str], measure: str, points: tuple[Coord, ...]
) -> None:
    expected, _ = await _direct_route(pg_dsn, points, *columns)
    result = await source.route(RouteRequest(points, Cost(profile, optimization)))
    assert getattr(result, measure) == pytest.approx(expected, rel=1e-3, abs=0.5)
    assert len(result.portions) == len(points) - 1
    assert result.distance > 0 and result.duration > 0


async def test_requests_of_one_shape_share_one_statement_and_get_their_own_answers(source: PgRoutingSource, pg_dsn: str) -> None:
    for points in [(START, END), (END, VIA), (VIA, START), (FAR_START, FAR_END)]:
        expected, _ = await _direct_route(pg_dsn, points, "cost_s_car", "reverse_cost_s_car")
        result = await source.route(RouteRequest(points, Cost("car", "fastest")))
        assert result.duration == pytest.approx(expected, rel=1e-3, abs=0.5)
    assert len(source._statements) == 1, "one statement built for the four requests"


async def test_route_geometry_follows_travel_order_and_is_cut_at_the_points(source: PgRoutingSource) -> None:
    result = await source.route(RouteRequest((START, VIA, END), Cost("car", "fastest"), steps=True))
    line = LineString(result.geometry)
    # Starts and ends on the snapped points, not on the edges' vertices.
    assert result.geometry[0] == pytest.approx(result.start, abs=1e-6)
    assert result.geometry[-1] == pytest.approx(result.end, abs=1e-6)
    assert Point(result.start).distance(Point(START)) < 0.0005 and Point(result.end).distance(Point(END)) < 0.0005
    # Every step continues where the previous one ended.
    steps = [s for p in result.portions for s in p.steps]
    for before, after in itertools.pairwise(steps):
        assert before.geometry[-1] == pytest.approx(after.geometry[0], abs=1e-6)
    # The geometry's length matches the route's distance (metres, roughly at Monaco's latitude).
    assert line.length * 80_000 == pytest.approx(result.distance, rel=0.3)
    # The intermediate point lies on the route.
    assert line.distance(Point(result.portions[0].end)) < 1e-6


async def test_steps_merge_edges_of_one_way_and_carry_asked_attributes(source: PgRoutingSource) -> None:
    result = await source.route(
        RouteRequest((FAR_START, FAR_END), Cost("car", "fastest"), steps=True, ways_attributes=("highway", "tunnel"))
    )
    steps = result.portions[0].steps
    assert all(s.instruction == {} for s in steps)
    assert all(set(s.attributes) == {"name", "highway", "tunnel"} for s in steps)
    for before, after in itertools.pairwise(steps):
        assert before.attributes != after.attributes, "consecutive edges of the same way are one step"
    assert sum(s.distance for s in steps) == pytest.approx(result.distance, rel=1e-6)
    without = await source.route(RouteRequest((FAR_START, FAR_END), Cost("car", "fastest"), steps=True))
    assert all(set(s.attributes) == {"name"} for s in without.portions[0].steps)


async def test_an_attribute_asked_twice_is_given_once(source: PgRoutingSource) -> None:
    result = await source.route(RouteRequest((START, END), Cost("car", "fastest"), ways_attributes=("tunnel", "name", "tunnel", "name")))
    assert all(set(s.attributes) == {"name", "tunnel"} for s in result.portions[0].steps)


async def test_one_way_streets_give_different_routes_each_way(source: PgRoutingSource) -> None:
    there = await source.route(RouteRequest((START, VIA), Cost("car", "shortest")))
    back = await source.route(RouteRequest((VIA, START), Cost("car", "shortest")))
    walk_there = await source.route(RouteRequest((START, VIA), Cost("pedestrian", "shortest")))
    walk_back = await source.route(RouteRequest((VIA, START), Cost("pedestrian", "shortest")))
    assert there.distance != pytest.approx(back.distance, rel=0.01)
    assert walk_there.distance == pytest.approx(walk_back.distance, rel=0.02)
    assert walk_there.distance < there.distance


async def test_pedestrian_walks_at_4_kmh(source: PgRoutingSource) -> None:
    result = await source.route(RouteRequest((START, END), Cost("pedestrian", "fastest")))
    assert result.distance / result.duration * 3.6 == pytest.approx(4.0, rel=1e-3)


async def test_nearest_honours_nb_points(source: PgRoutingSource) -> None:
    one = await source.nearest(NearestRequest(START, 1))
    five = await source.nearest(NearestRequest(START, 5))
    assert len(one.points) == 1 and len(five.points) == 5
    assert [p.distance for p in five.points] == sorted(p.distance for p in five.points)
    assert five.points[0].point == one.points[0].point
    assert one.points[0].distance < 20
    assert "name" in one.points[0].attributes


async def test_unknown_cost_is_a_400_naming_the_profile(source: PgRoutingSource) -> None:
    with pytest.raises(ParameterInvalid, match="profile"):
        await source.route(RouteRequest((START, END), Cost("bicycle", "fastest")))


async def test_point_far_from_any_road_is_no_path(source: PgRoutingSource) -> None:
    with pytest.raises(NoPathFound):
        await source.route(RouteRequest((START, (7.6, 43.5)), Cost("car", "fastest")))


async def test_an_isochrone_from_a_point_far_from_any_road_is_no_isochrone(source: PgRoutingSource) -> None:
    # Its own answer (Road2's "No iso found"), not a route's "No path found".
    with pytest.raises(NoIsochroneFound, match=r"^No isochrone found: no road within [0-9]+ m of point 7\.6,43\.5$"):
        await source.isochrone(IsochroneRequest((7.6, 43.5), Cost("car", cost_type="time"), (60.0,)))


async def test_wrong_column_makes_the_source_red_naming_it(pg_example: Path, tmp_path: Path) -> None:
    text = source_file(pg_example).read_text().replace('cost_column = "cost_m_car"', 'cost_column = "cost_m_carr"')
    text = text.replace('"../pgrouting.database.toml"', json.dumps(str(pg_example / "pgrouting.database.toml")))
    (tmp_path / "bad.source").write_text(text)
    bad = PgRoutingSource.from_config(read_source(tmp_path / "bad.source"))
    with pytest.raises(SourceUnavailable):
        await bad.connect()
    assert bad.state is SourceState.RED
    assert "cost_m_carr" in bad.health()["reason"]
    await bad.disconnect()


async def test_the_sessions_plan_each_statement_for_its_values_and_compile_none(source: PgRoutingSource) -> None:
    # PostgreSQL's JIT would spend most of a small matrix's time compiling its statement, and a generic
    # plan (kept after five runs) does not know the size of the search box.
    sql = "SELECT current_setting('jit') AS jit, current_setting('plan_cache_mode') AS plans, current_setting('application_name') AS name"
    row = await source.fetchrow(sql, [])
    assert (row["jit"], row["plans"], row["name"]) == ("off", "force_custom_plan", "roadkit-pgrouting")


async def test_sources_naming_one_database_share_one_pool(pg_example: Path) -> None:
    first, second = await connected(pg_example), await connected(pg_example)
    try:
        assert first._database is second._database
        assert first._database is not None and first._database.pool.get_max_size() == 4
    finally:
        await first.disconnect()
        await second.disconnect()


async def test_turn_restrictions_are_honoured(source: PgRoutingSource, pg_dsn: str) -> None:
    """From the middle of a restriction's first edge to the middle of its second: never the forbidden turn."""
    conn = await asyncpg.connect(pg_dsn)
    try:
        rows = await conn.fetch("""
            SELECT r.id_from, r.id_to,
                   ST_X(ST_LineInterpolatePoint(f.the_geom, 0.5)) AS fx, ST_Y(ST_LineInterpolatePoint(f.the_geom, 0.5)) AS fy,
                   ST_X(ST_LineInterpolatePoint(t.the_geom, 0.5)) AS tx, ST_Y(ST_LineInterpolatePoint(t.the_geom, 0.5)) AS ty
            FROM monaco.turn_restrictions r JOIN monaco.ways f ON f.id = r.id_from JOIN monaco.ways t ON t.id = r.id_to
            WHERE (f.cost_m_car > 0 OR f.reverse_cost_m_car > 0) AND (t.cost_m_car > 0 OR t.reverse_cost_m_car > 0)""")
        lengthened = 0
        for row in rows:
            points = ((row["fx"], row["fy"]), (row["tx"], row["ty"]))
            free = await conn.fetchval(
                "SELECT max(agg_cost) FROM pgr_withPointsVia($1, $2, ARRAY[-1, -2]::bigint[], directed => true)",
                "SELECT id, source, target, cost_m_car AS cost, reverse_cost_m_car AS reverse_cost FROM monaco.ways",
                f"SELECT 1 AS pid, {row['id_from']}::bigint AS edge_id, 0.5::float8 AS fraction UNION ALL SELECT 2, {row['id_to']}, 0.5",
            )
            try:
                restricted = await source.route(RouteRequest(points, Cost("car", "shortest")))
            except NoPathFound:
                lengthened += 1
                continue
            assert free is None or restricted.distance >= free - 0.5
            lengthened += free is not None and restricted.distance > free + 1
    finally:
        await conn.close()
    assert rows and lengthened > 0, "some restricted turns must change the route"


async def test_search_box_is_widened_until_a_path_is_found(pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.engine_c.conftest import make_pg_example
    from tests.engine_c.test_pgrouting_failures import _source

    example = make_pg_example(tmp_path / "example", pg_dsn)
    narrow = _source(example, **{"margin = 0.01": "margin = 0.00002", "attempts = 2": "attempts = 3"})
    await narrow.connect()
    scales: list[float | None] = []
    original = queries._statement

    def recording(source: PgRoutingSource, key: Any, inputs: dict[str, Any], build: Any) -> Any:
        scales.append(inputs["scale"])  # the box of the snapped points is padded by the margin times this scale
        return original(source, key, inputs, build)

    monkeypatch.setattr(queries, "_statement", recording)
    points = ((7.4234, 43.73564), (7.4237, 43.73622))  # 70 m apart, 525 m by car (one-ways)
    try:
        expected, _ = await _direct_route(pg_dsn, points, "cost_s_car", "reverse_cost_s_car")
        result = await narrow.route(RouteRequest(points, Cost("car", "fastest")))
        assert result.duration == pytest.approx(expected, rel=1e-3)
        assert len(scales) >= 2, "the first box held no path"
        assert scales[0] == 1 and (scales[1] is None or scales[1] > scales[0])
    finally:
        await narrow.disconnect()


def test_road2_db_config_and_password_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from roadkit.errors import ConfigurationError
    from roadkit_pgrouting.options import read_database_file

    path = tmp_path / "db.json"
    path.write_text(
        json.dumps(
            {
                "host": "db",
                "database": "pgrouting",
                "user": "u",
                "port": "5433",
                "max": 3,
                "statement_timeout": 20000,
                "password_env": "RK_TEST_PG_PASSWORD",
            }
        )
    )
    with pytest.raises(ConfigurationError, match=r"db\.json: password_env: the environment variable 'RK_TEST_PG_PASSWORD' is not set"):
        read_database_file(path)
    monkeypatch.setenv("RK_TEST_PG_PASSWORD", "s3cret")
    settings = read_database_file(path)
    assert (settings.host, settings.port, settings.pool_size, settings.password) == ("db", 5433, 3, "s3cret")


def test_road2_json_source_is_read(tmp_path: Path, pg_example: Path) -> None:
    road2 = {
        "id": "bduni-pgr",
        "type": "pgr",
        "projection": "EPSG:4326",
        "bbox": "7.3,43.7,7.5,43.8",
        "storage": {
            "base": {
                "dbConfig": str(pg_example / "pgrouting.database.toml"),
                "schema": "monaco",
                "attributes": [
                    {"key": "name", "column": "name", "default": "true"},
                    {"key": "nature", "column": "highway", "default": "false"},
                ],
            }
        },
        "costs": [
            {
                "profile": "car",
                "optimization": "fastest",
                "costType": "time",
                "costColumn": "cost_s_car",
                "rcostColumn": "reverse_cost_s_car",
            }
        ],
    }
    (tmp_path / "x.source").write_text(json.dumps(road2))
    source = PgRoutingSource.from_config(read_source(tmp_path / "x.source"))
    assert source.kind == "pgrouting"
    assert [(a.key, a.column, a.default) for a in source.options.storage.attributes] == [
        ("name", "name", True),
        ("nature", "highway", False),
    ]
    assert source.resolve_cost(Cost("car", cost_type="time")).cost_column == "cost_s_car"


def test_column_names_must_be_identifiers(tmp_path: Path, pg_example: Path) -> None:
    from roadkit.errors import ConfigurationError

    text = source_file(pg_example).read_text().replace('cost_column = "cost_s_car"', 'cost_column = "cost_s_car; DROP TABLE x"')
    text = text.replace('"../pgrouting.database.toml"', json.dumps(str(pg_example / "pgrouting.database.toml")))
    (tmp_path / "bad.source").write_text(text)
    with pytest.raises(ConfigurationError, match=r"costs\[0\]\.cost_column: expected an SQL identifier"):
        PgRoutingSource.from_config(read_source(tmp_path / "bad.source"))


@pytest.mark.parametrize(
    "value",
    ["it's", "motorway%", "%s %1$L %% %I", "$rk$; DROP SCHEMA monaco CASCADE; $rk$", "\\'; SELECT pg_sleep(5); --", "é ü\t\n"],
)
async def test_values_reach_the_sql_pgrouting_runs_quoted_by_postgresql(pg_dsn: str, value: str) -> None:
    """The SQL texts pgRouting runs get values only through format('%L'): read back, each is the same value."""
    from roadkit_pgrouting.sql import Binder

    binder = Binder()
    inner = binder.text(f"SELECT {binder.ref(value, 'text')} AS v, {binder.ref(2.5, 'float8')} AS f, {binder.expr('41 + 1', 'int8')} AS n")
    conn = await asyncpg.connect(pg_dsn)
    try:
        text = await conn.fetchval(binder.statement(f"SELECT {inner}"), *binder.args)
        row = await conn.fetchrow(text)
    finally:
        await conn.close()
    assert (row["v"], row["f"], row["n"]) == (value, 2.5, 42)
