"""Matrices on pgRouting: every path between the points in one many-to-many run, the travelled part of
each edge summed per pair; with turn restrictions, the pairs whose path makes a restricted turn
searched again, ``TURN_PAIRS`` per statement (see :func:`matrix`). The snapping, search box and
graph SQL are the routes' (:mod:`roadkit_pgrouting.queries`).
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from roadkit.contract.sources import Coord, EngineError, MatrixRequest, MatrixResponse, NearestPoint, PointNotSnapped, RoadkitError
from roadkit_pgrouting.options import PgCost, quote
from roadkit_pgrouting.queries import _graph, _names, _points, _restricted, _search_area, _snap_cte, _statement, _usable
from roadkit_pgrouting.sql import Binder, banned

if TYPE_CHECKING:
    from roadkit_pgrouting.source import PgRoutingSource

TURN_PAIRS = 50  # pairs of a matrix searched again with the turn restrictions per statement (see matrix)

#: Runs a statement and returns its one row: the source's pool by default (the benchmark passes its own connection's).
type FetchRow = Callable[[str, Sequence[Any]], Awaitable[Any]]


async def matrix(source: PgRoutingSource, request: MatrixRequest, cost: PgCost, fetchrow: FetchRow | None = None) -> MatrixResponse:
    """Durations and distances from every source to every target, as the routes between them would have.

    One statement: the points snapped as for routes, one many-to-many ``pgr_withPoints`` on the
    edges of a box around them, and the travelled part of every edge summed per pair (see
    :func:`_matrix_sql`). A pair without a path in the box makes a second statement on the whole
    graph (not the route's gradual widening: each statement computes the whole matrix), where it is
    ``None``.

    Turn restrictions: the first statement ignores them and names the pairs whose path makes a
    restricted turn. Every other pair's path is also the best that respects them (the best path of
    all breaks none), so only those pairs are computed again with them (``pgr_trsp_withPoints``),
    ``TURN_PAIRS`` per statement. ``pgr_trsp_withPoints`` searches once per pair and does not answer
    PostgreSQL's cancel: on a whole 100 x 100 matrix over a million edges it ran 26 minutes past
    its time-out. In statements of at most ``TURN_PAIRS`` pairs, the source's time-out stops a matrix
    within one of them; and a statement is not started when the time-out would come before the
    slowest one so far had ended: the matrix is a 504 at once, with no work left running.

    ``fetchrow`` runs a statement (default: the source's pool; the benchmark passes its own
    connection's to time the same SQL directly).
    """
    run = fetchrow or source.fetchrow
    points, starts, ends, pairs = _matrix_points(request)
    row, cells = await _matrix_cells(source, request, cost, points, pairs, run, turns=False)
    places = row["places"]  # the place (one per edge and fraction) of every point: its number, or the first's on the same place
    turned = list(zip(row["turn_starts"] or (), row["turn_ends"] or (), strict=True))
    slowest = 0.0  # seconds of the longest statement of turned pairs so far
    for chunk in itertools.batched(turned, TURN_PAIRS):
        left = source.time_left()
        if left is not None and slowest > left:
            raise source.timed_out()  # it would end past the time-out, and PostgreSQL could not stop it
        began = time.monotonic()
        # The chunk's points, numbered from 1: distinct places here, so distinct places there.
        some = list(dict.fromkeys(k for pair in chunk for k in pair))
        local = {k: i for i, k in enumerate(some, 1)}
        _, found = await _matrix_cells(
            source, request, cost, [points[k - 1] for k in some], [(local[a], local[b]) for a, b in chunk], run, turns=True
        )
        slowest = max(slowest, time.monotonic() - began)
        for a, b in chunk:
            cells[(a, b)] = found.get((local[a], local[b]), (None, None))
    snapped = [NearestPoint((x, y), meters) for x, y, meters in zip(row["xs"], row["ys"], row["meters"], strict=True)]
    durations: list[list[float | None]] = []
    distances: list[list[float | None]] = []
    for s in starts:
        a = places[s - 1]
        row_cells = [(0.0, 0.0) if a == b else cells.get((a, b), (None, None)) for b in (places[t - 1] for t in ends)]
        durations.append([cell[0] for cell in row_cells])
        distances.append([cell[1] for cell in row_cells])
    return MatrixResponse([snapped[s - 1] for s in starts], [snapped[t - 1] for t in ends], durations, distances)


async def _matrix_cells(
    source: PgRoutingSource,
    request: MatrixRequest,
    cost: PgCost,
    points: list[Coord],
    pairs: list[tuple[int, int]],
    run: FetchRow,
    turns: bool,
) -> tuple[Any, dict[tuple[int, int], tuple[float | None, float | None]]]:
    """The row of the matrix statement for ``pairs`` of ``points`` (numbered from 1), in the box, else on the
    whole graph, and its cells by pair of places; a point with no road near enough is a 400 naming it."""
    inputs = _matrix_inputs(points, pairs)
    key = ("matrix", cost, repr(request.constraints), turns)
    for scale in (1.0, None):
        inputs["scale"] = scale
        sql, args = _statement(source, key, inputs, functools.partial(_matrix_sql, source, request, cost, turns))
        row = await run(sql, args)
        if not row["ok"]:
            raise _not_snapped(source, request, row, points)
        places = row["places"]
        found = zip(row["cell_starts"] or (), row["cell_ends"] or (), row["durations"] or (), row["distances"] or (), strict=True)
        cells: dict[tuple[int, int], tuple[float | None, float | None]] = {(a, b): (t, d) for a, b, t, d in found}
        if all(places[s - 1] == places[t - 1] or (places[s - 1], places[t - 1]) in cells for s, t in pairs):
            break
    return row, cells


def _matrix_points(request: MatrixRequest) -> tuple[list[Coord], list[int], list[int], list[tuple[int, int]]]:
    """The distinct points, the numbers (from 1) of the sources' and targets' points, and the pairs to compute."""
    points = list(dict.fromkeys((*request.sources, *request.targets)))  # a point given twice is snapped once
    number = {point: k for k, point in enumerate(points, 1)}
    starts, ends = [number[p] for p in request.sources], [number[p] for p in request.targets]
    return points, starts, ends, [(s, t) for s in dict.fromkeys(starts) for t in dict.fromkeys(ends) if s != t]


def _matrix_inputs(points: Sequence[Coord], pairs: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """The inputs of the matrix statement (box scale 1) for ``pairs`` of ``points`` (numbered from 1)."""
    return {**_points(points), "count": len(points), "pair_starts": [s for s, _ in pairs], "pair_ends": [t for _, t in pairs], "scale": 1.0}


def matrix_statement(source: PgRoutingSource, request: MatrixRequest) -> tuple[str, list[Any]]:
    """The SQL and arguments of a matrix's first statement (its only one when every pair has a path in the box
    and none makes a restricted turn): what ``conn.fetchrow(sql, *args)`` runs directly."""
    cost = source.setting(request.cost)
    points, _, _, pairs = _matrix_points(request)
    key = ("matrix", cost, repr(request.constraints), False)
    return _statement(source, key, _matrix_inputs(points, pairs), functools.partial(_matrix_sql, source, request, cost, False))


def _not_snapped(source: PgRoutingSource, request: MatrixRequest, row: Any, points: list[Coord]) -> RoadkitError:
    """The first point of the request with no usable road near enough, named by its parameter and index."""
    radius = source.options.search.snap_radius
    near = {points[i - 1] for i, meters in zip(row["snapped"] or (), row["meters"] or (), strict=True) if meters <= radius}
    for name, given in (("sources", request.sources), ("targets", request.targets)):
        for index, point in enumerate(given):
            if point in points and point not in near:
                return PointNotSnapped(name, index, f"no usable road within {radius:g} m of this point")
    return EngineError(f"pgRouting could not snap the points of this matrix on source {source.id}")


def _matrix_sql(source: PgRoutingSource, request: MatrixRequest, cost: PgCost, turns: bool, binder: Binder) -> str:
    """The matrix as one statement: snapping, search box, many-to-many pgRouting, each pair's seconds and meters.

    Inputs: the distinct points (``xs``, ``ys``) and their ``count``, the pairs wanted as the numbers
    (from 1) of their points (``pair_starts``, ``pair_ends``) and the ``scale`` of the box (None: the whole graph).

    With the turn restrictions of the cost: ``turns`` False searches without them and names in
    ``turn_starts`` and ``turn_ends`` the pairs whose path makes a restricted turn (where its edges,
    from one of them on, are a restriction's path); ``turns`` True searches with them
    (``pgr_trsp_withPoints``). pgRouting cuts the edges at every point it is given, and
    ``pgr_trsp_withPoints`` then misreads a turn restriction on an edge that holds another pair's
    point (it may forbid the whole edge). So a point on an edge of a turn restriction is computed
    alone: the pairs are grouped by their points on such edges (none for most), each group in its
    own run with only the other points.
    """
    names = _names(source)
    search = source.options.search
    usable = _usable(cost.cost_column, cost.reverse_cost_column)
    bans = banned(request.constraints, source._columns, binder)
    snap = _snap_cte(names, " AND ".join([usable, *bans]), binder)
    radius, count = binder.param(float(search.snap_radius), "float8"), binder.input("count", "int4")
    starts, ends = binder.input("pair_starts", "int4[]"), binder.input("pair_ends", "int4[]")
    margin, factor = binder.param(float(search.margin), "float8"), binder.input("scale", "float8")
    area = _search_area(source, binder, 0, wide=False)
    edges, restrictions = _graph(source, cost, request.constraints, binder, [usable, area, *bans], area, turns)
    pids, ids, fractions = binder.expr("g.pids", "int8[]"), binder.expr("g.ids", "int8[]"), binder.expr("g.fractions", "float8[]")
    points = binder.text(f"SELECT pid, edge_id, fraction FROM unnest({pids}, {ids}, {fractions}) AS t(pid, edge_id, fraction)")
    pairs = binder.text(f"SELECT * FROM unnest({binder.expr('g.ss', 'int8[]')}, {binder.expr('g.ts', 'int8[]')}) AS c(source, target)")
    if restrictions:
        call = f"pgr_trsp_withPoints({edges}, {restrictions}, {points}, {pairs}, directed => true)"
        start, end = "start_vid", "end_vid"
        alone = f"id IN (SELECT unnest({source._restriction_path}) FROM {names['restrictions']})"
    else:
        call, start, end, alone = f"pgr_withPoints({edges}, {points}, {pairs}, directed => true)", "start_pid", "end_pid", "false"
    if _restricted(source, cost) and not turns:
        path = f"SELECT ({source._restriction_path})::bigint[] AS path FROM {names['restrictions']}"
        turned = f"""turns AS (
  SELECT r.s, r.t, r.path_seq, x.path FROM r JOIN ({path}) x ON x.path[1] = r.edge
), turned AS (
  SELECT DISTINCT c.s, c.t FROM turns c JOIN (
    SELECT s, t, array_agg(edge ORDER BY path_seq) AS edges FROM r WHERE (s, t) IN (SELECT s, t FROM turns) GROUP BY s, t
  ) p ON p.s = c.s AND p.t = c.t
  WHERE p.edges[c.path_seq : c.path_seq + cardinality(c.path) - 1] = c.path
)"""
    else:
        turned = "turned AS (SELECT NULL::int8 AS s, NULL::int8 AS t WHERE false)"
    # A path row leaves ``node`` along ``edge``: from a vertex, the edge's start (0) or end (1), to its
    # other end, or to the target's point when it is on that edge (no path passes a point it does not
    # stop at); from the source's point (its first row), to the next row's node. The travelled part
    # of the edge is between the two, as in a route.
    measures = zip(("d_fwd", "d_rev", "t_fwd", "t_rev"), (*cost.distance, *cost.duration), strict=True)
    columns = ", ".join(f"w.{quote(column)} AS {name}" for name, column in measures)
    return binder.statement(f"""
WITH {snap}, places AS MATERIALIZED (
  SELECT snap.*, first_value(i) OVER (PARTITION BY id, fraction ORDER BY i) AS place FROM snap
), box AS (
  SELECT count(*) = {count} AND coalesce(bool_and(meters <= {radius}), false) AS ok,
         array_agg(i ORDER BY i) AS snapped, array_agg(x ORDER BY i) AS xs, array_agg(y ORDER BY i) AS ys,
         array_agg(meters ORDER BY i) AS meters, array_agg(place ORDER BY i) AS places,
         min(x) AS x0, min(y) AS y0, max(x) AS x1, max(y) AS y1,
         greatest({margin}, greatest(max(x) - min(x), max(y) - min(y)) * 0.25) * {factor} AS pad
  FROM places
), roles AS MATERIALIZED (
  SELECT place AS pid, id, fraction, {alone} AS alone FROM places GROUP BY place, id, fraction
), pairs AS (
  SELECT DISTINCT -a.pid AS s, -b.pid AS t, CASE WHEN a.alone THEN a.pid ELSE 0 END AS k1, CASE WHEN b.alone THEN b.pid ELSE 0 END AS k2
  FROM unnest({starts}, {ends}) AS q(i, j) JOIN places pi ON pi.i = q.i JOIN places pj ON pj.i = q.j
  JOIN roles a ON a.pid = pi.place JOIN roles b ON b.pid = pj.place WHERE a.pid <> b.pid
), g AS (
  SELECT k.*, p.pids, p.ids, p.fractions FROM (SELECT k1, k2, array_agg(s) AS ss, array_agg(t) AS ts FROM pairs GROUP BY k1, k2) k
  CROSS JOIN LATERAL (
    SELECT array_agg(pid) AS pids, array_agg(id) AS ids, array_agg(fraction) AS fractions FROM roles WHERE NOT alone OR pid IN (k.k1, k.k2)
  ) p
), r AS MATERIALIZED (
  SELECT g.k1, g.k2, p.seq, p.path_seq, -p.{start} AS s, -p.{end} AS t, p.node, p.edge FROM box, g, {call} AS p WHERE box.ok
), firsts AS (
  SELECT r.s, r.t, r.edge, pa.fraction AS a, n.node AS next
  FROM r JOIN roles pa ON pa.pid = -r.node JOIN r n ON n.k1 = r.k1 AND n.k2 = r.k2 AND n.seq = r.seq + 1
  WHERE r.node < 0 AND r.edge > 0
), part AS (
  SELECT r.s, r.t, {columns}, CASE WHEN r.node = w.source THEN 0.0 ELSE 1.0 END AS a,
         CASE WHEN r.edge = pt.id THEN pt.fraction WHEN r.node = w.source THEN 1.0 ELSE 0.0 END AS b
  FROM r JOIN {names["ways"]} w ON w.id = r.edge JOIN roles pt ON pt.pid = r.t
  WHERE r.node > 0 AND r.edge > 0
  UNION ALL
  SELECT f.s, f.t, {columns}, f.a, CASE WHEN f.next < 0 THEN pt.fraction WHEN f.next = w.target THEN 1.0 ELSE 0.0 END AS b
  FROM firsts f JOIN {names["ways"]} w ON w.id = f.edge JOIN roles pt ON pt.pid = f.t
), cells AS (
  SELECT s, t, sum(abs(b - a) * abs(CASE WHEN a <= b THEN t_fwd ELSE t_rev END)) AS duration,
         sum(abs(b - a) * abs(CASE WHEN a <= b THEN d_fwd ELSE d_rev END)) AS distance
  FROM part GROUP BY s, t
), {turned}
SELECT box.ok, box.snapped, box.xs, box.ys, box.meters, box.places, c.*, tr.*
FROM box, (
  SELECT array_agg(s) AS cell_starts, array_agg(t) AS cell_ends, array_agg(duration) AS durations, array_agg(distance) AS distances
  FROM cells
) c, (SELECT array_agg(s) AS turn_starts, array_agg(t) AS turn_ends FROM turned) tr""")
