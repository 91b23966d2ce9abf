"""A synthetic road grid in Road2's pgRouting schema, for the benchmark's scale runs and the tests of long routes.

``n`` x ``n`` vertices ``STEP`` degrees apart (about 100 m north-south, 65 m east-west at 44° N) from
(7.0, 44.0), an edge between neighbours (2 n (n - 1) edges), both ways. Every tenth street (lines 0, 10,
20...) is a main road: ``importance`` 1, 70 km/h; the others importance 5, 30 to 50 km/h (by edge id).
"""

from __future__ import annotations

import math

import asyncpg

STEP = 0.0009
ORIGIN = (7.0, 44.0)

GRID_SQL = """
DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};
CREATE TABLE {schema}.ways_vertices_pgr AS
  SELECT i * {n} + j + 1 AS id, ST_SetSRID(ST_MakePoint(7.0 + j * {step}, 44.0 + i * {step}), 4326) AS the_geom
  FROM generate_series(0, {n} - 1) i, generate_series(0, {n} - 1) j;
CREATE TABLE {schema}.ways AS
  WITH e AS (
    SELECT i * {n} + j + 1 AS source, i * {n} + j + 2 AS target, i AS line FROM generate_series(0, {n} - 1) i, generate_series(0, {n} - 2) j
    UNION ALL
    SELECT i * {n} + j + 1, (i + 1) * {n} + j + 1, j FROM generate_series(0, {n} - 2) i, generate_series(0, {n} - 1) j
  )
  SELECT row_number() OVER () AS id, e.source, e.target, 'street ' || e.line AS name,
         CASE WHEN e.line % 10 = 0 THEN 1 ELSE 5 END AS importance,
         ST_MakeLine(s.the_geom, t.the_geom) AS the_geom
  FROM e JOIN {schema}.ways_vertices_pgr s ON s.id = e.source JOIN {schema}.ways_vertices_pgr t ON t.id = e.target;
ALTER TABLE {schema}.ways ADD COLUMN length_m float8, ADD COLUMN cost_s_car float8, ADD COLUMN reverse_cost_s_car float8,
  ADD COLUMN cost_m_car float8, ADD COLUMN reverse_cost_m_car float8;
UPDATE {schema}.ways SET length_m = ST_Length(the_geom::geography);
UPDATE {schema}.ways SET cost_m_car = length_m, reverse_cost_m_car = length_m,
  cost_s_car = length_m * 3.6 / (CASE WHEN importance = 1 THEN 70 ELSE 30 + (id % 5) * 5 END),
  reverse_cost_s_car = length_m * 3.6 / (CASE WHEN importance = 1 THEN 70 ELSE 30 + (id % 5) * 5 END);
ALTER TABLE {schema}.ways ADD PRIMARY KEY (id);
ALTER TABLE {schema}.ways_vertices_pgr ADD PRIMARY KEY (id);
CREATE INDEX ON {schema}.ways USING gist (the_geom);
CREATE INDEX ON {schema}.ways (importance);
CREATE INDEX ON {schema}.ways_vertices_pgr USING gist (the_geom);
ANALYZE {schema}.ways; ANALYZE {schema}.ways_vertices_pgr;
"""


def grid_side(edges: int) -> int:
    """The side (vertices) of the grid with about ``edges`` edges."""
    return max(10, round(math.sqrt(edges / 2)))


def vertex(i: int, j: int) -> tuple[float, float]:
    """The coordinates of the vertex on row ``i`` (north-south) and column ``j`` (east-west)."""
    return (ORIGIN[0] + j * STEP, ORIGIN[1] + i * STEP)


async def write_grid(dsn: str, schema: str, n: int) -> int:
    """Write the grid of side ``n`` into ``schema`` (replaced); its number of edges."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(GRID_SQL.format(schema=schema, n=n, step=STEP))
        return int(await conn.fetchval(f"SELECT count(*) FROM {schema}.ways"))
    finally:
        await conn.close()
