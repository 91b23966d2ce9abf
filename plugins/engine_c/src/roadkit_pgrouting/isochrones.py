"""Isochrones: one ``pgr_withPointsDD`` run from the snapped point, one polygon per cost value.

For a value ``v`` an edge counts up to where ``v`` runs out: from an end reached at cost ``c`` the
part ``(v - c) / edge cost`` of it, so the polygon follows the roads, not the vertices only. The
reached pieces of road are wrapped in a concave hull; polygons are then made valid, oriented
counter-clockwise (RFC 7946), nested (each contains the smaller ones) and made to contain the start.
A value too small for an area gives a Point at the start, as the Valhalla source answers.

The database sends the reached points, the worker computes the hull (shapely): PostGIS's
``ST_ConcaveHull`` on GEOS before 3.12.1 (Debian 12 has 3.11.1) crashes the backend on an almost
flat set of points (libgeos/geos#946, fixed by GH-953), which resets every connection of the cluster;
a few aligned pieces of road reached from the edge of the data are such a set. shapely's wheels
carry a recent GEOS; with an older one the convex hull is taken instead.
"""

from __future__ import annotations

import math
from typing import Any

import shapely
from shapely.geometry import mapping

from roadkit.contract.sources import Coord, IsochroneRequest, IsochroneResponse
from roadkit_pgrouting.options import PgCost, quote
from roadkit_pgrouting.sql import Binder

HULL_RATIO = 0.5  # the concave hull's target: 1 = convex, smaller = follows the roads more closely
#: GEOS's concave hull crashes on almost flat input before 3.12.1 (libgeos/geos#946).
CONCAVE_HULL_SAFE = shapely.geos_version >= (3, 12, 1)
MIN_AREA_M2 = 200.0  # a sliver along one street is no area: such a value answers the start point


def reach_sql(
    names: dict[str, str],
    cost: PgCost,
    request: IsochroneRequest,
    binder: Binder,
    area: str,
    filters: list[str],
    start: tuple[str, str],
) -> str:
    """CTEs ending with ``reached``: per cost value ``v``, the points of the reached pieces of road (``points``, WKB).

    They read CTE ``box`` (``ok``: the point found its road); ``start`` is the snapped edge and fraction;
    inputs ``values`` (ascending) and ``largest``.
    """
    c, rc = quote(cost.cost_column), quote(cost.reverse_cost_column)
    if request.direction == "arrival":  # travel towards the point: every edge taken the other way
        c, rc = rc, c
    where = " AND ".join([area, *filters])
    edges = f"SELECT id, source, target, {c} AS cost, {rc} AS reverse_cost FROM {names['ways']} WHERE {where}"
    edge, fraction = start
    points = f"SELECT 1 AS pid, {edge} AS edge_id, {fraction} AS fraction"
    values = binder.input("values", "float8[]")
    limit = binder.input("largest", "float8")
    return f"""dd AS (
  SELECT node, min(agg_cost) AS agg
  FROM box, pgr_withPointsDD({binder.text(edges)}, {binder.text(points)}, -1, {limit},
                             directed => true, driving_side => 'b', details => false)
  WHERE box.ok GROUP BY node
), e AS (
  SELECT w.the_geom AS g, s.agg AS ca, t.agg AS cb, w.{c} AS c, w.{rc} AS rc
  FROM box, {names["ways"]} w LEFT JOIN dd s ON s.node = w.source LEFT JOIN dd t ON t.node = w.target
  WHERE {where} AND w.id <> {edge} AND (s.node IS NOT NULL OR t.node IS NOT NULL)
  UNION ALL
  SELECT ST_LineSubstring(w.the_geom, {fraction}, 1), 0, t.agg, w.{c} * (1 - {fraction}), w.{rc} * (1 - {fraction})
  FROM box, {names["ways"]} w LEFT JOIN dd t ON t.node = w.target WHERE box.ok AND w.id = {edge} AND {fraction} < 1
  UNION ALL
  SELECT ST_LineSubstring(w.the_geom, 0, {fraction}), s.agg, 0, w.{c} * {fraction}, w.{rc} * {fraction}
  FROM box, {names["ways"]} w LEFT JOIN dd s ON s.node = w.source WHERE box.ok AND w.id = {edge} AND {fraction} > 0
), pieces AS (
  SELECT v.v,
    CASE WHEN e.ca <= v.v AND e.c > 0 THEN ST_LineSubstring(e.g, 0, least(1, (v.v - e.ca) / e.c))
         WHEN e.ca <= v.v THEN ST_StartPoint(e.g) END AS forward,
    CASE WHEN e.cb <= v.v AND e.rc > 0 THEN ST_LineSubstring(e.g, greatest(0, 1 - (v.v - e.cb) / e.rc), 1)
         WHEN e.cb <= v.v THEN ST_EndPoint(e.g) END AS backward
  FROM e CROSS JOIN unnest({values}) AS v(v)
), reached AS (
  SELECT v, ST_AsBinary(ST_RemoveRepeatedPoints(ST_Points(ST_Collect(u.g)))) AS points
  FROM pieces CROSS JOIN LATERAL unnest(ARRAY[forward, backward]) AS u(g) WHERE u.g IS NOT NULL GROUP BY v
)"""


def hull(points: bytes | None) -> Any:
    """The hull of the reached points (WKB), or None."""
    if points is None:
        return None
    reached = shapely.from_wkb(points)
    return shapely.concave_hull(reached, ratio=HULL_RATIO) if CONCAVE_HULL_SAFE else shapely.convex_hull(reached)


def response(request: IsochroneRequest, start: Coord, reached: list[tuple[float, bytes | None]]) -> IsochroneResponse:
    """One geometry per requested value (request order), nested, valid, containing the start, from (value, points WKB) pairs.

    Blocking (hulls of thousands of points): run it off the event loop."""
    point = shapely.Point(start)
    by_value: dict[float, dict[str, Any]] = {}
    previous: Any = None
    for value, points in reached:  # ascending values
        hull_ = hull(points)
        area = None
        if hull_ is not None and hull_.geom_type in ("Polygon", "MultiPolygon") and _square_meters(hull_, start) >= MIN_AREA_M2:
            area = shapely.make_valid(hull_) if not hull_.is_valid else hull_
            if not area.covers(point):
                area = shapely.union(area, point.buffer(1e-5, 8))
        if previous is not None:
            area = previous if area is None else shapely.union(area, previous)
        if area is not None:
            polygons = [g for g in getattr(area, "geoms", [area]) if g.geom_type == "Polygon"]
            area = (
                shapely.orient_polygons(shapely.MultiPolygon(polygons) if len(polygons) > 1 else polygons[0])
                if hasattr(shapely, "orient_polygons")
                else _orient(polygons)
            )
            previous = area
            by_value[float(value)] = dict(mapping(area))
    # Too small for an area: the requested point itself, as the Valhalla source answers.
    default = {"type": "Point", "coordinates": [request.point[0], request.point[1]]}
    return IsochroneResponse(request.point, [by_value.get(float(v), default) for v in request.cost_values])


def _orient(polygons: list[Any]) -> Any:
    from shapely.geometry.polygon import orient

    oriented = [orient(p, sign=1.0) for p in polygons]
    return shapely.MultiPolygon(oriented) if len(oriented) > 1 else oriented[0]


def _square_meters(geometry: Any, start: Coord) -> float:
    """The area of a lon/lat geometry in square metres (flat approximation, fine at a city's scale)."""
    return float(geometry.area) * 111_320.0**2 * math.cos(math.radians(start[1]))
