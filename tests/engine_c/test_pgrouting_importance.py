"""Long routes search the importance network (bounded), short ones their box: both give pgRouting's route on the whole graph.

A synthetic grid (``tests/engine_c/grid.py``, about 29 000 edges, a main road every tenth street) in the
session's private cluster. What the source hands pgRouting is read in the database itself: a function
``spy.pgr_withPointsVia``, first on the database's search path, records the edges its edge SQL gives
and calls pgRouting's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from roadkit.config.loader import read_source
from roadkit.routing.model import Coord, Cost, RouteRequest
from roadkit_pgrouting.source import PgRoutingSource
from roadkit_support.pgcluster import PrivateCluster
from tests.engine_c.grid import STEP, vertex, write_grid

SIDE = 120  # 28 560 edges, about 8.6 km x 11.9 km
IMPORTANCE_FROM = 5_000.0  # metres (straight line): routes longer than this search the main network
MARGIN = 0.01  # degrees: the source's default search margin

SPY = """
CREATE SCHEMA spy;
CREATE TABLE spy.searched (n serial, edges_sql text, ids bigint[]);
CREATE FUNCTION spy.pgr_withPointsVia(edges_sql text, points_sql text, via anyarray, directed boolean DEFAULT true,
    strict boolean DEFAULT false, u_turn_on_edge boolean DEFAULT true, driving_side char DEFAULT 'b', details boolean DEFAULT false)
RETURNS TABLE(seq integer, path_id integer, path_seq integer, start_vid bigint, end_vid bigint, node bigint, edge bigint,
              cost double precision, agg_cost double precision, route_agg_cost double precision)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE ids bigint[];
BEGIN
  EXECUTE format('SELECT array_agg(id) FROM (%s) e', edges_sql) INTO ids;
  INSERT INTO spy.searched (edges_sql, ids) VALUES (edges_sql, ids);
  RETURN QUERY SELECT * FROM public.pgr_withPointsVia(edges_sql, points_sql, via, directed, strict, u_turn_on_edge, driving_side, details);
END $$;
ALTER DATABASE grid SET search_path = spy, public;
"""


@pytest.fixture(scope="module")
def grid_dsn(pg_cluster: PrivateCluster) -> Iterator[str]:
    dsn = pg_cluster.create_database("grid", ("postgis", "pgrouting"))

    async def build() -> None:
        await write_grid(dsn, "grid", SIDE)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(SPY)
        finally:
            await conn.close()

    asyncio.run(build())
    yield dsn


@pytest.fixture
async def grid_source(grid_dsn: str, tmp_path: Path) -> AsyncIterator[PgRoutingSource]:
    path = tmp_path / "grid.source"
    path.write_text(
        f'id = "grid"\ntype = "pgrouting"\nprojection = "EPSG:4326"\n[storage]\ndsn = "{grid_dsn}"\nschema = "grid"\n'
        f'importance_column = "importance"\n[search]\nimportance_from = {IMPORTANCE_FROM}\nmargin = {MARGIN}\n'
        '[[costs]]\nprofile = "car"\noptimization = "fastest"\ncost_type = "time"\n'
        'cost_column = "cost_s_car"\nreverse_cost_column = "reverse_cost_s_car"\n'
    )
    source = PgRoutingSource.from_config(read_source(path))
    assert isinstance(source, PgRoutingSource)
    await source.connect()
    yield source
    await source.disconnect()


def on_street(i: float, j: float) -> Coord:
    """A point of the grid at row ``i``, column ``j`` (a fraction: between two vertices)."""
    return vertex(0, 0)[0] + j * STEP, vertex(0, 0)[1] + i * STEP


async def searched(dsn: str, call: object) -> tuple[str, list[int]]:
    """The edge SQL pgRouting got from the source while awaiting ``call`` (the last one), and its edges."""
    conn = await asyncpg.connect(dsn)
    try:
        before = await conn.fetchval("SELECT coalesce(max(n), 0) FROM spy.searched")
        await call  # type: ignore[misc]
        row = await conn.fetchrow("SELECT edges_sql, ids FROM spy.searched WHERE n > $1 ORDER BY n DESC LIMIT 1", before)
    finally:
        await conn.close()
    assert row is not None, "the source did not call pgr_withPointsVia"
    return str(row["edges_sql"]), list(row["ids"])


async def unbounded(dsn: str, points: tuple[Coord, ...]) -> float:
    """The fastest car time between the points, pgRouting on the whole grid (points snapped as the source does)."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = []
        for x, y in points:
            rows.append(
                await conn.fetchrow(
                    "SELECT id, least(greatest(ST_LineLocatePoint(the_geom, p), 1e-7), 1 - 1e-7) AS f "
                    "FROM grid.ways, ST_SetSRID(ST_MakePoint($1, $2), 4326) p ORDER BY the_geom <-> p LIMIT 1",
                    x,
                    y,
                )
            )
        points_sql = " UNION ALL ".join(
            f"SELECT {k + 1} AS pid, {r['id']}::bigint AS edge_id, {r['f']!r}::float8 AS fraction" for k, r in enumerate(rows)
        )
        via = ", ".join(f"-{k + 1}" for k in range(len(points)))
        total = await conn.fetchval(
            f"SELECT max(route_agg_cost) FROM public.pgr_withPointsVia($1, $2, ARRAY[{via}]::bigint[], directed => true)",
            "SELECT id, source, target, cost_s_car AS cost, reverse_cost_s_car AS reverse_cost FROM grid.ways",
            points_sql,
        )
    finally:
        await conn.close()
    return float(total)


async def count(dsn: str, sql: str, *args: object) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(sql, *args))
    finally:
        await conn.close()


async def test_long_route_searches_the_main_network_and_local_streets_near_its_points(grid_dsn: str, grid_source: PgRoutingSource) -> None:
    start, end = on_street(3, 4.5), on_street(114, 113.5)  # ~13.6 km apart: SW corner to NE corner, off the main roads
    request = RouteRequest((start, end), Cost("car", "fastest"))
    sql, ids = await searched(grid_dsn, grid_source.route(request))
    result = await grid_source.route(request)
    assert result.duration == pytest.approx(await unbounded(grid_dsn, (start, end)), rel=1e-9)

    minor_far = await count(
        grid_dsn,
        "SELECT count(*) FROM grid.ways WHERE id = ANY($6) AND importance > 1"
        " AND NOT ST_DWithin(the_geom, ST_SetSRID(ST_MakePoint($1, $2), 4326), $5)"
        " AND NOT ST_DWithin(the_geom, ST_SetSRID(ST_MakePoint($3, $4), 4326), $5)",
        *start,
        *end,
        2 * MARGIN,
        ids,
    )
    main = await count(grid_dsn, "SELECT count(*) FROM grid.ways WHERE importance = 1")
    everything = await count(grid_dsn, "SELECT count(*) FROM grid.ways")
    assert minor_far == 0, "streets of the main network only, away from the points"
    assert main < len(ids) < everything / 3, (main, len(ids), everything)
    assert "importance" in sql
    conn = await asyncpg.connect(grid_dsn)
    try:  # the level is compared in the column's type (integer): PostgreSQL can use its index, not a cast column's
        await conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN {sql}"))
    finally:
        await conn.close()
    assert "ways_importance_idx" in plan, plan


async def test_short_route_searches_every_street_of_its_box(grid_dsn: str, grid_source: PgRoutingSource) -> None:
    start, end = on_street(50, 40.5), on_street(77, 65.5)  # ~3.5 km apart
    request = RouteRequest((start, end), Cost("car", "fastest"))
    sql, ids = await searched(grid_dsn, grid_source.route(request))
    result = await grid_source.route(request)
    assert result.duration == pytest.approx(await unbounded(grid_dsn, (start, end)), rel=1e-9)
    assert "importance" not in sql
    middle = on_street(63.5, 53)  # half-way, 1.2 km from both points: minor streets there are searched too
    minor_middle = await count(
        grid_dsn,
        "SELECT count(*) FROM grid.ways WHERE id = ANY($3) AND importance > 1"
        " AND ST_DWithin(the_geom, ST_SetSRID(ST_MakePoint($1, $2), 4326), 0.002)",
        *middle,
        ids,
    )
    assert minor_middle > 0


async def test_long_route_through_an_intermediate_point_is_pgroutings(grid_dsn: str, grid_source: PgRoutingSource) -> None:
    points = (on_street(3, 4.5), on_street(100, 20.5), on_street(20, 110.5))
    result = await grid_source.route(RouteRequest(points, Cost("car", "fastest")))
    assert result.duration == pytest.approx(await unbounded(grid_dsn, points), rel=1e-9)
    assert len(result.portions) == 2
