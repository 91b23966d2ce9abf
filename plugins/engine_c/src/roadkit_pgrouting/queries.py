"""The three operations as SQL on Road2's schema, and their answers as roadkit responses.

Route: every point is snapped onto the nearest usable edge (a point *on* that edge, not its nearest
vertex), then ``pgr_trspVia_withPoints`` (with the turn restrictions) or ``pgr_withPointsVia``
(without) runs on the edges of a box around the points, widened when no path is found. The rows
come back with the part of each edge actually travelled (first and last edges cut at the points) in
travel order. Isochrone: ``pgr_withPointsDD`` from the snapped point, one run for the largest value,
one polygon per value. Nearest: the nearest usable edges, each with its closest point.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import orjson

from roadkit.contract import (
    Coord,
    IsochroneRequest,
    IsochroneResponse,
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
from roadkit_pgrouting import isochrones
from roadkit_pgrouting.options import PgCost, quote
from roadkit_pgrouting.sql import Binder, banned, send, weighted

if TYPE_CHECKING:
    from roadkit_pgrouting.source import PgRoutingSource

COLUMNS = """
SELECT table_name, column_name, data_type FROM information_schema.columns
WHERE table_schema = $1 AND table_name = ANY($2::text[])
"""
METERS_PER_DEGREE = 111_320.0
RESTRICTION_COST = 1e7  # a forbidden turn costs more than any route


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


def _envelope(binder: Binder, box: tuple[float, float, float, float]) -> str:
    refs = [binder.ref(float(v), "float8") for v in box]
    return f"the_geom && ST_MakeEnvelope({', '.join(refs)}, 4326)"


def _snap_sql(names: dict[str, str], usable: str, filters: list[str], binder: Binder, points: tuple[Coord, ...]) -> str:
    """The nearest usable edge of every point, the point's place on it, and the snapped point."""
    where = " AND ".join([usable, *filters])
    xs, ys = binder.array([p[0] for p in points], "float8"), binder.array([p[1] for p in points], "float8")
    return f"""
SELECT q.i::int AS i, e.id, e.fraction, ST_X(e.snapped) AS x, ST_Y(e.snapped) AS y, e.meters
FROM unnest({xs}, {ys}) WITH ORDINALITY AS q(x, y, i)
CROSS JOIN LATERAL (
  SELECT w.id, least(greatest(ST_LineLocatePoint(w.the_geom, p.geom), 1e-7), 1 - 1e-7) AS fraction,
         ST_ClosestPoint(w.the_geom, p.geom) AS snapped,
         ST_Distance(w.the_geom::geography, p.geom::geography) AS meters
  FROM (SELECT ST_SetSRID(ST_MakePoint(q.x, q.y), 4326) AS geom) p, {names["ways"]} w
  WHERE {where}
  ORDER BY w.the_geom <-> p.geom LIMIT 1
) e ORDER BY q.i"""


def _box(points: list[Coord], margin: float, scale: float = 1.0) -> tuple[float, float, float, float]:
    """The points' box padded by a quarter of its size (at least ``margin`` degrees), times ``scale``."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    span = max(max(xs) - min(xs), max(ys) - min(ys))
    pad = max(margin, span * 0.25) * scale
    return (min(xs) - pad, min(ys) - pad, max(xs) + pad, max(ys) + pad)


def _meters(a: Coord, b: Coord) -> float:
    lat = math.radians((a[1] + b[1]) / 2)
    return math.hypot((b[0] - a[0]) * math.cos(lat), b[1] - a[1]) * METERS_PER_DEGREE


async def _snap(source: PgRoutingSource, binder: Binder, conn: Any, points: tuple[Coord, ...], sql: str) -> list[Any]:
    """The snapped points of ``sql`` (built by :func:`_snap_sql` before the session, so its values go with the first round trip)."""
    await send(conn, binder)
    rows = list(await conn.fetch(sql))
    radius = source.options.search.snap_radius
    for row in rows:
        if row["meters"] > radius:
            point = points[row["i"] - 1]
            raise NoPathFound(f"No path found: no road within {radius:g} m of point {point[0]:g},{point[1]:g}")
    if len(rows) != len(points):
        raise NoPathFound("No path found: a point has no usable road nearby")
    return rows


def _route_sql(
    source: PgRoutingSource,
    request: RouteRequest,
    cost: PgCost,
    binder: Binder,
    names: dict[str, str],
    box: tuple[float, float, float, float],
    snapped: list[Any],
    wide: bool,
) -> str:
    storage = source.options.storage
    columns = source._columns
    constraints = request.constraints
    area = _envelope(binder, box)
    if wide and storage.importance_column:
        area = f"({area} OR {quote(storage.importance_column)} <= {binder.ref(source.options.search.importance_level, 'float8')})"
    filters = [_usable(cost.cost_column, cost.reverse_cost_column), area, *banned(constraints, columns, binder)]
    edges = (
        f"SELECT id, source, target, {weighted(quote(cost.cost_column), constraints, columns, binder)} AS cost, "
        f"{weighted(quote(cost.reverse_cost_column), constraints, columns, binder)} AS reverse_cost "
        f"FROM {names['ways']} WHERE {' AND '.join(filters)}"
    )
    pids = binder.array([r["i"] for r in snapped], "int8")
    eids = binder.array([r["id"] for r in snapped], "int8")
    fractions = binder.array([r["fraction"] for r in snapped], "float8")
    points = f"SELECT pid, edge_id, fraction FROM unnest({pids}, {eids}, {fractions}) AS t(pid, edge_id, fraction)"
    via = "ARRAY[" + ", ".join(f"-{r['i']}" for r in snapped) + "]::bigint[]"
    if source._has_restrictions:
        restrictions = (
            f"SELECT {source._restriction_path} AS path, {RESTRICTION_COST}::float8 AS cost "
            f"FROM {names['restrictions']} r WHERE r.id_from IN (SELECT id FROM {names['ways']} WHERE {area})"
        )
        call = (
            f"pgr_trspVia_withPoints({_text(edges)}, {_text(restrictions)}, {_text(points)}, {via}, "
            "directed => true, strict => true, u_turn_on_edge => true)"
        )
    else:
        call = f"pgr_withPointsVia({_text(edges)}, {_text(points)}, {via}, directed => true, strict => true, u_turn_on_edge => true)"
    distance, duration = cost.distance, cost.duration
    attributes = _attribute_columns(source, request)
    extra = "".join(f", w.{quote(column)}::text AS {quote('a_' + key)}" for key, column in attributes)
    return f"""
WITH r AS (
  SELECT seq, path_id, node, edge, lead(node) OVER (ORDER BY seq) AS next FROM {call}
), pts AS (
  SELECT -pid AS node, ST_SetSRID(ST_MakePoint(x, y), 4326) AS geom
  FROM unnest({binder.array([r["i"] for r in snapped], "int8")}, {binder.array([r["x"] for r in snapped], "float8")},
              {binder.array([r["y"] for r in snapped], "float8")}) AS t(pid, x, y)
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
)
SELECT seq, path_id, edge, way_name, abs(b - a) * abs(CASE WHEN a <= b THEN d_fwd ELSE d_rev END) AS distance,
       abs(b - a) * abs(CASE WHEN a <= b THEN t_fwd ELSE t_rev END) AS duration,
       CASE WHEN a = b THEN NULL
            WHEN a < b THEN ST_AsGeoJSON(ST_LineSubstring(the_geom, a, b), 7)
            ELSE ST_AsGeoJSON(ST_Reverse(ST_LineSubstring(the_geom, b, a)), 7) END AS geometry
       {"".join(f", {quote('a_' + key)}" for key, _ in attributes)}
FROM seg ORDER BY seq"""


def _text(sql: str) -> str:
    """An SQL text as a dollar-quoted literal (it holds only identifiers and current_setting calls)."""
    if "$rk$" in sql:
        raise ValueError("unexpected dollar-quote in generated SQL")
    return f"$rk${sql}$rk$"


def _attribute_columns(source: PgRoutingSource, request: RouteRequest) -> list[tuple[str, str]]:
    """(key, column) of the attributes steps carry: the default ones, then those asked for, once each."""
    configured = {a.key: a for a in source.options.storage.attributes}
    keys = [a.key for a in source.options.storage.attributes if a.default]
    keys += [k for k in request.ways_attributes if k in configured and k not in keys]
    return [(key, configured[key].column) for key in keys if key != "name"]


async def route(source: PgRoutingSource, request: RouteRequest, cost: PgCost) -> RouteResponse:
    """A route through the request's points; no path in the whole graph is a 404."""
    names = _names(source)
    search = source.options.search
    usable = _usable(cost.cost_column, cost.reverse_cost_column)
    attempts = search.attempts + 1
    length = sum(_meters(a, b) for a, b in zip(request.points, request.points[1:], strict=False))
    wide = length >= search.importance_from
    rows: list[Any] = []
    snapped: list[Any] = []
    for attempt in range(attempts + 1):
        binder = Binder()
        filters = banned(request.constraints, source._columns, binder)
        snap_sql = _snap_sql(names, usable, filters, binder, request.points)
        async with source._session(binder) as conn:
            snapped = await _snap(source, binder, conn, request.points, snap_sql)
            located = [(r["x"], r["y"]) for r in snapped]
            # The last try searches the whole graph.
            box = _box(located, search.margin, search.widen**attempt) if attempt < attempts else (-180.0, -90.0, 180.0, 90.0)
            sql = _route_sql(source, request, cost, binder, names, box, snapped, wide)
            await send(conn, binder)
            rows = list(await conn.fetch(sql))
        if rows or _same_place(snapped):
            break
    if not rows and not _same_place(snapped):
        raise NoPathFound()
    return _route_response(request, snapped, rows, source)


def _same_place(snapped: list[Any]) -> bool:
    return all((r["id"], r["fraction"]) == (snapped[0]["id"], snapped[0]["fraction"]) for r in snapped)


def _route_response(request: RouteRequest, snapped: list[Any], rows: list[Any], source: PgRoutingSource) -> RouteResponse:
    located = [(float(r["x"]), float(r["y"])) for r in snapped]
    legs: dict[int, list[Any]] = {}
    for row in rows:
        legs.setdefault(row["path_id"], []).append(row)
    attributes = _attribute_columns(source, request)
    portions = []
    geometry: list[Coord] = []
    for index in range(len(located) - 1):
        leg = legs.get(index + 1, [])
        steps: list[Step] = []
        for row in leg:
            coords = [(c[0], c[1]) for c in orjson.loads(row["geometry"])["coordinates"]] if row["geometry"] else []
            attrs = {"name": way_name(row["way_name"] or "")}
            attrs.update({key: row["a_" + key] for key, _ in attributes})
            if steps and steps[-1].attributes == attrs:
                last = steps[-1]
                merged = last.geometry + (coords[1:] if coords and last.geometry and coords[0] == last.geometry[-1] else coords)
                steps[-1] = Step(merged, last.distance + row["distance"], last.duration + row["duration"], attrs, {})
            elif coords or not steps:
                steps.append(Step(coords, row["distance"], row["duration"], attrs, {}))
        for step in steps:
            for point in step.geometry:
                if not geometry or geometry[-1] != point:
                    geometry.append(point)
        portions.append(
            Portion(
                located[index],
                located[index + 1],
                sum(s.distance for s in steps),
                sum(s.duration for s in steps),
                steps if request.steps else [],
            )
        )
    if len(geometry) < 2:
        geometry = [located[0], located[-1]]
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
    x, y = binder.ref(float(request.point[0]), "float8"), binder.ref(float(request.point[1]), "float8")
    limit = binder.ref(int(request.number), "int4")
    sql = f"""
SELECT e.id, ST_X(e.snapped) AS x, ST_Y(e.snapped) AS y, ST_Distance(e.snapped::geography, p.geom::geography) AS meters, e.way_name
FROM (SELECT ST_SetSRID(ST_MakePoint({x}, {y}), 4326) AS geom) p
CROSS JOIN LATERAL (
  SELECT w.id, ST_ClosestPoint(w.the_geom, p.geom) AS snapped, w.{names["name"]}::text AS way_name FROM {names["ways"]} w
  WHERE {usable} ORDER BY w.the_geom <-> p.geom LIMIT {limit} * 3
) e ORDER BY meters"""
    async with source._session(binder) as conn:
        rows = await conn.fetch(sql)
    found: dict[tuple[float, float], NearestPoint] = {}
    for row in rows:
        point = (float(row["x"]), float(row["y"]))
        if point not in found:
            found[point] = NearestPoint(point, float(row["meters"]), {"edge": row["id"], "name": way_name(row["way_name"] or "")})
    if not found:
        raise NoPathFound("No graph point found near the coordinates")
    return NearestResponse(list(found.values())[: request.number])


async def isochrone(source: PgRoutingSource, request: IsochroneRequest, cost: PgCost) -> IsochroneResponse:
    """Nested polygons, one per cost value, from one driving-distance run for the largest value."""
    names = _names(source)
    binder = Binder()
    filters = banned(request.constraints, source._columns, binder)
    usable = _usable(cost.cost_column, cost.reverse_cost_column)
    snap_sql = _snap_sql(names, usable, filters, binder, (request.point,))
    async with source._session(binder) as conn:
        snapped = await _snap(source, binder, conn, (request.point,), snap_sql)
        start = (float(snapped[0]["x"]), float(snapped[0]["y"]))
        largest = max(request.cost_values)
        radius = largest + 50 if request.cost.cost_type == "distance" else largest * cost_speed(cost) / 3.6
        dy = radius / METERS_PER_DEGREE
        dx = dy / max(0.01, math.cos(math.radians(start[1])))
        box = (start[0] - dx, start[1] - dy, start[0] + dx, start[1] + dy)
        sql = isochrones.reach_sql(names, cost, request, binder, _envelope(binder, box), [usable, *filters], snapped[0], largest)
        await send(conn, binder)
        rows = list(await conn.fetch(sql))
    if not rows:
        raise NoIsochroneFound()
    return isochrones.response(request, start, rows)


def cost_speed(cost: PgCost) -> float:
    """The highest speed (km/h) of a cost, bounding the isochrone search box."""
    return 6.0 if "pedestrian" in cost.profile or "foot" in cost.profile else 130.0
