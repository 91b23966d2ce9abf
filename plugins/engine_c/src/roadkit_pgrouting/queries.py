"""The four operations as SQL on Road2's schema, and their answers as roadkit responses.

Every request is one statement (one round trip). Route: every point is snapped onto the nearest usable
edge (a point *on* that edge, not its nearest vertex), then ``pgr_trspVia_withPoints`` (with the turn
restrictions) or ``pgr_withPointsVia`` (without) runs on the edges of a box around the snapped points,
and the statement returns the part of each edge actually travelled (first and last edges cut at the
points) in travel order. When no path is found the box is widened (another statement), at last to the
whole graph. A long route (``search.importance_from``, with an importance column) searches the local
streets only in small boxes around its points and the main network (``importance <= importance_level``)
in between: its cost grows with its length, not with the size of the graph. Isochrone:
``pgr_withPointsDD`` from the snapped point, one run for the largest value, one polygon per value.
Nearest: the nearest usable edges, each with its closest point. Matrices: :mod:`roadkit_pgrouting.matrices`,
on the helpers here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from roadkit.contract.sources import (
    Constraint,
    Coord,
    IsochroneRequest,
    IsochroneResponse,
    LineText,
    NearestPoint,
    NearestRequest,
    NearestResponse,
    NoIsochroneFound,
    NoPathFound,
    Portion,
    RouteRequest,
    RouteResponse,
    Step,
    way_name,
)
from roadkit_pgrouting import avoidance, isochrones
from roadkit_pgrouting.options import PgCost, quote
from roadkit_pgrouting.sql import CASTS, Binder, banned, weighted

if TYPE_CHECKING:
    from roadkit_pgrouting.source import PgRoutingSource

COLUMNS = """
SELECT table_name, column_name, data_type FROM information_schema.columns
WHERE table_schema = $1 AND table_name = ANY($2::text[])
"""
METERS_PER_DEGREE = 111_320.0
RESTRICTION_COST = 1e7  # a forbidden turn costs more than any route
VIA_OPTIONS = "directed => true, strict => true, u_turn_on_edge => true"
STATEMENTS_KEPT = 256  # statements a source keeps built (per shape of request)
NUMERIC_CASTS = frozenset({"int2", "int4", "int8", "float4", "float8", "numeric"})


def _names(source: PgRoutingSource) -> dict[str, str]:
    storage = source.options.storage
    return {
        "ways": f"{quote(storage.schema)}.{quote(storage.ways)}",
        "vertices": f"{quote(storage.schema)}.{quote(storage.vertices)}",
        "restrictions": f"{quote(storage.schema)}.{quote(storage.restrictions)}",
        "name": quote(storage.name_column),
    }


def _usable(cost_column: str, reverse_column: str) -> str:
    return f"({quote(cost_column)} > 0 OR {quote(reverse_column)} > 0)"


def _points(points: Sequence[Coord]) -> dict[str, list[float]]:
    """The inputs ``xs`` and ``ys`` of :func:`_snap_cte`."""
    return {"xs": [float(p[0]) for p in points], "ys": [float(p[1]) for p in points]}


def _snap_cte(names: dict[str, str], where: str, binder: Binder) -> str:
    """CTE ``snap``: the nearest usable edge of every point (inputs ``xs``, ``ys``), the point's place on it, and the snapped point."""
    xs, ys = binder.input("xs", "float8[]"), binder.input("ys", "float8[]")
    return f"""snap AS MATERIALIZED (
  SELECT q.i::int AS i, e.id, e.fraction, ST_X(e.snapped) AS x, ST_Y(e.snapped) AS y, e.meters
  FROM unnest({xs}, {ys}) WITH ORDINALITY AS q(x, y, i)
  CROSS JOIN LATERAL (
    SELECT w.id, least(greatest(ST_LineLocatePoint(w.the_geom, p.geom), 1e-7), 1 - 1e-7) AS fraction,
           ST_ClosestPoint(w.the_geom, p.geom) AS snapped,
           ST_Distance(w.the_geom::geography, p.geom::geography) AS meters
    FROM (SELECT ST_SetSRID(ST_MakePoint(q.x, q.y), 4326) AS geom) p, {names["ways"]} w
    WHERE {where}
    ORDER BY w.the_geom <-> p.geom LIMIT 1
  ) e
)"""


def _found_sql(binder: Binder, count: int, radius: float) -> str:
    """The snapped points as arrays in point order, and ``ok`` when every point found a road near enough."""
    return f"""SELECT count(*) = {int(count)} AND coalesce(bool_and(meters <= {binder.param(float(radius), "float8")}), false) AS ok,
         array_agg(i ORDER BY i) AS pids, array_agg(id ORDER BY i) AS ids, array_agg(fraction ORDER BY i) AS fractions,
         array_agg(x ORDER BY i) AS xs, array_agg(y ORDER BY i) AS ys, array_agg(meters ORDER BY i) AS meters,
         min(x) AS x0, min(y) AS y0, max(x) AS x1, max(y) AS y1
  FROM snap"""


def _snapped(source: PgRoutingSource, points: Sequence[Coord], row: Any, isochrone: bool = False) -> list[tuple[int, float, Coord]]:
    """(edge, fraction, snapped point) of every point; no road near enough to one of them is no path (no isochrone)."""
    radius = source.options.search.snap_radius
    ids, meters = row["ids"] or [], row["meters"] or []
    missing, nothing = (NoIsochroneFound, "No isochrone found") if isochrone else (NoPathFound, "No path found")
    for index, distance in enumerate(meters):
        if distance > radius:
            point = points[index]
            raise missing(f"{nothing}: no road within {radius:g} m of point {point[0]:g},{point[1]:g}")
    if len(ids) != len(points):
        raise missing(f"{nothing}: a point has no usable road nearby")
    return [(e, f, (x, y)) for e, f, x, y in zip(ids, row["fractions"], row["xs"], row["ys"], strict=True)]


def _meters(a: Coord, b: Coord) -> float:
    lat = math.radians((a[1] + b[1]) / 2)
    return math.hypot((b[0] - a[0]) * math.cos(lat), b[1] - a[1]) * METERS_PER_DEGREE


def _envelope(binder: Binder, x0: str, y0: str, x1: str, y1: str) -> str:
    refs = [binder.expr(v, "float8") for v in (x0, y0, x1, y1)]
    return f"the_geom && ST_MakeEnvelope({', '.join(refs)}, 4326)"


def _search_area(source: PgRoutingSource, binder: Binder, count: int, wide: bool) -> str:
    """The edges a route searches, on the columns of CTE ``box`` (``pad`` NULL: the whole graph).

    The box of the snapped points padded by a quarter of its size (at least ``margin`` degrees), times
    the attempt's scale. ``wide`` (a long route): local streets only in boxes of ``margin`` (times the
    scale) around each point, the main network (importance) in the whole box.
    """
    storage, search = source.options.storage, source.options.search
    area = _envelope(
        binder,
        "coalesce(box.x0 - box.pad, -180.0)",
        "coalesce(box.y0 - box.pad, -90.0)",
        "coalesce(box.x1 + box.pad, 180.0)",
        "coalesce(box.y1 + box.pad, 90.0)",
    )
    if not (wide and storage.importance_column):
        return area
    # Compared in the column's own type: PostgreSQL then uses the column's index (not a cast column's).
    cast = CASTS.get(source._columns.get(storage.importance_column, ""), "float8")
    level = binder.ref(int(search.importance_level), cast if cast in NUMERIC_CASTS else "float8")
    local = [
        _envelope(
            binder,
            f"box.xs[{k}] - box.near",
            f"box.ys[{k}] - box.near",
            f"box.xs[{k}] + box.near",
            f"box.ys[{k}] + box.near",
        )
        for k in range(1, count + 1)
    ]
    return f"({' OR '.join(local)} OR ({quote(storage.importance_column)} <= {level} AND {area}))"


def _route_sql(source: PgRoutingSource, request: RouteRequest, cost: PgCost, binder: Binder, wide: bool) -> str:
    """The whole route as one statement: snapping, search box, pgRouting, edges cut and described; one row of arrays.

    Inputs: the points (``xs``, ``ys``) and the ``scale`` of the box (None: the whole graph).
    """
    names = _names(source)
    search = source.options.search
    columns = source._columns
    constraints = request.constraints
    count = len(request.points)
    usable = _usable(cost.cost_column, cost.reverse_cost_column)
    # The edges the vehicle can't pass and those crossing an obstacle are left out as banned ones are.
    bans = [*banned(constraints, columns, binder), *avoidance.predicates(source, binder.inputs, binder)]
    snap = _snap_cte(names, " AND ".join([usable, *bans]), binder)
    found = _found_sql(binder, count, search.snap_radius)
    margin, factor = binder.param(float(search.margin), "float8"), binder.input("scale", "float8")
    area = _search_area(source, binder, count, wide)
    edges, restrictions = _graph(source, cost, constraints, binder, [usable, area, *bans], area)
    pids, ids, fractions = binder.expr("box.pids", "int8[]"), binder.expr("box.ids", "int8[]"), binder.expr("box.fractions", "float8[]")
    points = f"SELECT pid, edge_id, fraction FROM unnest({pids}, {ids}, {fractions}) AS t(pid, edge_id, fraction)"
    via = "ARRAY[" + ", ".join(f"-{i}" for i in range(1, count + 1)) + "]::bigint[]"
    if restrictions:
        call = f"pgr_trspVia_withPoints({edges}, {restrictions}, {binder.text(points)}, {via}, {VIA_OPTIONS})"
    else:
        call = f"pgr_withPointsVia({edges}, {binder.text(points)}, {via}, {VIA_OPTIONS})"
    distance, duration = cost.distance, cost.duration
    described = _attribute_columns(source, request)
    attributes = [quote("a_" + key) for key, _ in described]
    extra = "".join(f", w.{quote(column)}::text AS {a}" for (_, column), a in zip(described, attributes, strict=True))
    # What makes consecutive edges one step: the way's name and the attributes the steps carry.
    same = f"ROW(way_name{''.join(', ' + a for a in attributes)})"
    firsts = "".join(f", (array_agg({a} ORDER BY seq))[1] AS {a}" for a in attributes)
    aggregates = "".join(f", array_agg({a} ORDER BY seq) AS {a}" for a in attributes)
    return binder.statement(f"""
WITH {snap}, found AS (
  {found}
), box AS (
  SELECT found.*, greatest({margin}, greatest(x1 - x0, y1 - y0) * 0.25) * {factor} AS pad, {margin} * {factor} AS near FROM found
), r AS (
  SELECT p.seq, p.path_id, p.node, p.edge, lead(p.node) OVER (ORDER BY p.seq) AS next FROM box, {call} AS p WHERE box.ok
), pts AS (
  SELECT -i AS node, ST_SetSRID(ST_MakePoint(x, y), 4326) AS geom FROM snap
), seg AS (
  SELECT r.seq, r.path_id, r.edge, w.the_geom, w.{names["name"]}::text AS way_name,
         ST_LineLocatePoint(w.the_geom, coalesce(pa.geom, va.the_geom)) AS a,
         ST_LineLocatePoint(w.the_geom, coalesce(pb.geom, vb.the_geom)) AS b,
         w.{quote(distance[0])} AS d_fwd, w.{quote(distance[1])} AS d_rev,
         w.{quote(duration[0])} AS t_fwd, w.{quote(duration[1])} AS t_rev{extra}
  FROM r JOIN {names["ways"]} w ON w.id = r.edge
  LEFT JOIN pts pa ON pa.node = r.node LEFT JOIN {names["vertices"]} va ON va.id = r.node
  LEFT JOIN pts pb ON pb.node = r.next LEFT JOIN {names["vertices"]} vb ON vb.id = r.next
  WHERE r.edge > 0
), part AS (
  -- The travelled part of each edge (none where a = b), its length and time; an edge where nothing is
  -- travelled starts no step, unless it is the first of its leg.
  SELECT seq, path_id, way_name{"".join(", " + a for a in attributes)},
         CASE WHEN a = b THEN NULL WHEN a < b THEN ST_LineSubstring(the_geom, a, b)
              ELSE ST_Reverse(ST_LineSubstring(the_geom, b, a)) END AS piece,
         abs(b - a) * abs(CASE WHEN a <= b THEN d_fwd ELSE d_rev END) AS distance,
         abs(b - a) * abs(CASE WHEN a <= b THEN t_fwd ELSE t_rev END) AS duration,
         row_number() OVER (PARTITION BY path_id ORDER BY seq) = 1 AS first
  FROM seg
), kept AS (
  SELECT part.*, CASE WHEN first OR {same} IS DISTINCT FROM lag({same}) OVER leg THEN 1 ELSE 0 END AS starts
  FROM part WHERE piece IS NOT NULL OR first
  WINDOW leg AS (PARTITION BY path_id ORDER BY seq)
), steps AS (
  -- Consecutive edges of a leg with the same name and attributes: one step, its line joined (ST_MakeLine
  -- keeps each shared point once).
  SELECT path_id, min(seq) AS seq, (array_agg(way_name ORDER BY seq))[1] AS way_name{firsts},
         ST_MakeLine(array_agg(piece ORDER BY seq) FILTER (WHERE piece IS NOT NULL)) AS line,
         sum(distance) AS distance, sum(duration) AS duration
  FROM (SELECT kept.*, sum(starts) OVER (PARTITION BY path_id ORDER BY seq) AS step FROM kept) AS numbered
  GROUP BY path_id, step
), legs AS (
  SELECT array_agg(path_id ORDER BY seq) AS path_ids, array_agg(way_name ORDER BY seq) AS way_names,
         array_agg(distance ORDER BY seq) AS distances, array_agg(duration ORDER BY seq) AS durations,
         array_agg(ST_AsGeoJSON(line, 7) ORDER BY seq) AS geometries,
         ST_AsGeoJSON(ST_MakeLine(array_agg(line ORDER BY seq) FILTER (WHERE line IS NOT NULL)), 7) AS geometry{aggregates},
         (SELECT array_agg(edge ORDER BY seq) FROM seg) AS edges
  FROM steps
)
SELECT box.ok, box.ids, box.fractions, box.xs, box.ys, box.meters, legs.* FROM box, legs""")


def _restricted(source: PgRoutingSource, cost: PgCost) -> bool:
    """Whether the source's turn restrictions apply to this cost."""
    return source._has_restrictions and cost.turn_restrictions


def _graph(
    source: PgRoutingSource,
    cost: PgCost,
    constraints: Sequence[Constraint],
    binder: Binder,
    where: list[str],
    area: str,
    turns: bool = True,
) -> tuple[str, str | None]:
    """The texts pgRouting reads: the edges (``where`` holds on them; prefer/avoid weigh their costs) and,
    when ``turns`` and the cost honours them, the turn restrictions that start in ``area`` (else None)."""
    names, columns = _names(source), source._columns
    edges = (
        f"SELECT id, source, target, {weighted(quote(cost.cost_column), constraints, columns, binder)} AS cost, "
        f"{weighted(quote(cost.reverse_cost_column), constraints, columns, binder)} AS reverse_cost "
        f"FROM {names['ways']} WHERE {' AND '.join(where)}"
    )
    if not (turns and _restricted(source, cost)):
        return binder.text(edges), None
    restrictions = (
        f"SELECT {source._restriction_path} AS path, {RESTRICTION_COST}::float8 AS cost "
        f"FROM {names['restrictions']} r WHERE r.id_from IN (SELECT id FROM {names['ways']} WHERE {area})"
    )
    return binder.text(edges), binder.text(restrictions)


def _attribute_columns(source: PgRoutingSource, request: RouteRequest) -> list[tuple[str, str]]:
    """(key, column) of the attributes steps carry: the default ones, then those asked for, once each."""
    configured = {a.key: a for a in source.options.storage.attributes}
    keys = [a.key for a in source.options.storage.attributes if a.default]
    for key in request.ways_attributes:  # a key asked twice is one column (it was an SQL error)
        if key in configured and key not in keys:
            keys.append(key)
    return [(key, configured[key].column) for key in keys if key != "name"]


async def route(source: PgRoutingSource, request: RouteRequest, cost: PgCost) -> RouteResponse:
    """A route through the request's points; no path in the whole graph is a 404."""
    search = source.options.search
    attempts = search.attempts + 1
    length = sum(_meters(a, b) for a, b in zip(request.points, request.points[1:], strict=False))
    wide = length >= search.importance_from
    attributes = tuple(key for key, _ in _attribute_columns(source, request))
    avoiding = avoidance.inputs(source, request)
    for attempt in range(attempts + 1):
        # The last try searches the whole graph (no box, no importance).
        last = attempt == attempts
        inputs: dict[str, Any] = {**_points(request.points), "scale": None if last else search.widen**attempt, **avoiding}
        narrowed = wide and not last
        key = ("route", cost, repr(request.constraints), attributes, len(request.points), narrowed, tuple(avoiding))
        sql, args = _statement(source, key, inputs, functools.partial(_route_sql, source, request, cost, wide=narrowed))
        row = await source.fetchrow(sql, args)
        snapped = _snapped(source, request.points, row)
        if row["path_ids"] or _same_place(snapped):
            break
    if not row["path_ids"] and not _same_place(snapped):
        raise NoPathFound()
    return _route_response(request, snapped, row, source)


def _statement(
    source: PgRoutingSource, key: tuple[Any, ...], inputs: dict[str, Any], build: Callable[[Binder], str]
) -> tuple[str, list[Any]]:
    """The statement built by ``build`` and its arguments for ``inputs``; built once per ``key`` (what shapes the
    statement besides the inputs: cost, constraints, attributes...), then read from the source's cache."""
    cached = source._statements.get(key)
    if cached is None:
        binder = Binder(inputs)
        cached = (build(binder), binder)
        if len(source._statements) >= STATEMENTS_KEPT:
            source._statements.clear()
        source._statements[key] = cached
        return cached[0], binder.args
    return cached[0], cached[1].args_for(inputs)


def _same_place(snapped: list[tuple[int, float, Coord]]) -> bool:
    return all(s[:2] == snapped[0][:2] for s in snapped)


def _route_response(request: RouteRequest, snapped: list[tuple[int, float, Coord]], row: Any, source: PgRoutingSource) -> RouteResponse:
    """Portions and steps from the route's row: one entry per step (leg, name, attributes, line as GeoJSON text)."""
    located = [s[2] for s in snapped]
    extra = [(key, row["a_" + key]) for key, _ in _attribute_columns(source, request)]
    path_ids = row["path_ids"] or ()
    names, distances, durations, lines = row["way_names"], row["distances"], row["durations"], row["geometries"]
    portions = []
    i = 0
    for leg in range(1, len(located)):
        steps = []
        while i < len(path_ids) and path_ids[i] == leg:  # the steps come in travel order, leg after leg
            attributes = {"name": way_name(names[i] or "")}
            for key, values in extra:
                attributes[key] = values[i]
            steps.append(Step(LineText(lines[i]) if lines[i] else [], distances[i], durations[i], attributes, {}))
            i += 1
        portions.append(
            Portion(
                located[leg - 1],
                located[leg],
                sum(s.distance for s in steps),
                sum(s.duration for s in steps),
                steps if request.steps else [],
            )
        )
    # The steps' lines joined (nothing travelled: the two points).
    geometry: Sequence[Coord] = LineText(row["geometry"]) if row["geometry"] else [located[0], located[-1]]
    return RouteResponse(
        start=located[0],
        end=located[-1],
        geometry=geometry,
        distance=sum(p.distance for p in portions),
        duration=sum(p.duration for p in portions),
        portions=portions,
    )


async def nearest(source: PgRoutingSource, request: NearestRequest) -> NearestResponse:
    """The nearest usable edges (for any cost of the source), one snapped point each, nearest first."""
    names = _names(source)
    usable = " OR ".join(_usable(c.cost_column, c.reverse_cost_column) for c in source.options.costs)
    binder = Binder()
    x, y = binder.param(float(request.point[0]), "float8"), binder.param(float(request.point[1]), "float8")
    limit = binder.param(int(request.number), "int4")
    sql = f"""
SELECT e.id, ST_X(e.snapped) AS x, ST_Y(e.snapped) AS y, ST_Distance(e.snapped::geography, p.geom::geography) AS meters, e.way_name
FROM (SELECT ST_SetSRID(ST_MakePoint({x}, {y}), 4326) AS geom) p
CROSS JOIN LATERAL (
  SELECT w.id, ST_ClosestPoint(w.the_geom, p.geom) AS snapped, w.{names["name"]}::text AS way_name FROM {names["ways"]} w
  WHERE {usable} ORDER BY w.the_geom <-> p.geom LIMIT {limit} * 3
) e ORDER BY meters"""
    rows = await source.fetch(sql, binder.args)
    found: dict[tuple[float, float], NearestPoint] = {}
    for row in rows:
        point = (float(row["x"]), float(row["y"]))
        if point not in found:
            found[point] = NearestPoint(point, float(row["meters"]), {"edge": row["id"], "name": way_name(row["way_name"] or "")})
    if not found:
        raise NoPathFound("No graph point found near the coordinates")
    return NearestResponse(list(found.values())[: request.number])


async def isochrone(source: PgRoutingSource, request: IsochroneRequest, cost: PgCost) -> IsochroneResponse:
    """Nested polygons, one per cost value, from one driving-distance run for the largest value (one statement)."""
    largest = max(request.cost_values)
    radius = largest + 50 if request.cost.cost_type == "distance" else largest * cost_speed(cost) / 3.6
    inputs: dict[str, Any] = {
        **_points((request.point,)),
        "reach": float(radius),
        "values": sorted({float(v) for v in request.cost_values}),
        "largest": float(largest),
    }
    key = ("isochrone", cost, repr(request.constraints), request.direction)
    sql, args = _statement(source, key, inputs, functools.partial(_isochrone_sql, source, request, cost))
    row = await source.fetchrow(sql, args)
    snapped = _snapped(source, (request.point,), row, isochrone=True)
    if not row["cost_values"]:
        raise NoIsochroneFound()
    reached = list(zip(row["cost_values"], row["points"], strict=True))
    return await source.run_blocking(isochrones.response, request, snapped[0][2], reached)


def _isochrone_sql(source: PgRoutingSource, request: IsochroneRequest, cost: PgCost, binder: Binder) -> str:
    """The isochrone as one statement: snapping, search box, driving distance, reached points; one row of arrays.

    Inputs: the point (``xs``, ``ys``), the search radius (``reach``, metres), the cost values (``values``) and the largest.
    """
    names = _names(source)
    filters = banned(request.constraints, source._columns, binder)
    usable = _usable(cost.cost_column, cost.reverse_cost_column)
    snap = _snap_cte(names, " AND ".join([usable, *filters]), binder)
    found = _found_sql(binder, 1, source.options.search.snap_radius)
    reach = binder.input("reach", "float8")
    area = _envelope(
        binder,
        "box.xs[1] - box.dx",
        "box.ys[1] - box.dy",
        "box.xs[1] + box.dx",
        "box.ys[1] + box.dy",
    )
    start = (binder.expr("box.ids[1]", "int8"), binder.expr("box.fractions[1]", "float8"))
    reach_ctes = isochrones.reach_sql(names, cost, request, binder, area, [usable, *filters], start)
    return binder.statement(f"""
WITH {snap}, found AS (
  {found}
), box AS (
  SELECT found.*, {reach} / {METERS_PER_DEGREE} AS dy, {reach} / {METERS_PER_DEGREE} / greatest(0.01, cos(radians(ys[1]))) AS dx FROM found
), {reach_ctes}
SELECT box.ids, box.fractions, box.xs, box.ys, box.meters, h.cost_values, h.points
FROM box, (SELECT array_agg(v ORDER BY v) AS cost_values, array_agg(points ORDER BY v) AS points FROM reached) h""")


def cost_speed(cost: PgCost) -> float:
    """The highest speed (km/h) of a cost, bounding the isochrone search box."""
    return 6.0 if "pedestrian" in cost.profile or "foot" in cost.profile else 130.0
