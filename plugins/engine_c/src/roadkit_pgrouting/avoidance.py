"""The edges a route leaves out for its vehicle's height and weight and for its obstacles.

A source whose ways table has limit columns (``storage.max_height_column``, ``storage.max_weight_column``)
leaves out the edges whose limit is below the vehicle's; an edge with no limit (NULL) stays. Obstacles
(``RouteRequest.avoid``) leave out every edge whose geometry intersects one of their polygons. The
values are inputs of the statement (``height``, ``weight``, ``obstacles``), so one statement serves
every vehicle and every set of obstacles of the same shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from roadkit.contract.sources import RouteRequest
from roadkit_pgrouting.options import quote
from roadkit_pgrouting.sql import Binder

if TYPE_CHECKING:
    from roadkit_pgrouting.source import PgRoutingSource

#: The largest height (metres) and weight (tonnes) a request may give: bounds, not engine limits.
MOST = {"height": 100.0, "weight": 1000.0}
NUMERIC_TYPES = frozenset({"double precision", "real", "integer", "bigint", "smallint", "numeric"})


def limit_columns(source: PgRoutingSource) -> dict[str, str]:
    """The configured limit column of each vehicle dimension."""
    storage = source.options.storage
    found = {"height": storage.max_height_column, "weight": storage.max_weight_column}
    return {dimension: column for dimension, column in found.items() if column is not None}


def inputs(source: PgRoutingSource, request: RouteRequest) -> dict[str, Any]:
    """The request's vehicle and obstacles as inputs of the statement (none when it has neither)."""
    found: dict[str, Any] = {}
    if request.vehicle is not None:
        for dimension in limit_columns(source):
            value = getattr(request.vehicle, dimension)
            if value is not None:
                found[dimension] = float(value)
    if request.avoid:
        found["obstacles"] = multipolygon(request.avoid)
    return found


def predicates(source: PgRoutingSource, given: Mapping[str, Any], binder: Binder) -> list[str]:
    """The SQL that holds on the edges a route may take, for the inputs ``given`` (see :func:`inputs`)."""
    kept = []
    for dimension, column in limit_columns(source).items():
        if dimension in given:
            value = binder.expr(binder.input(dimension, "float8"), "float8")
            kept.append(f"coalesce({quote(column)} >= {value}, true)")
    if "obstacles" in given:
        area = binder.expr(binder.input("obstacles", "text"), "text")
        # Made valid, as the API checks the route against it: a self-crossing ring is still an area.
        kept.append(f"NOT ST_Intersects(the_geom, ST_MakeValid(ST_GeomFromText({area}, 4326)))")
    return kept


def multipolygon(rings: tuple[tuple[tuple[float, float], ...], ...]) -> str:
    """The obstacles' outer rings as one WKT MultiPolygon."""
    polygons = ("((" + ", ".join(f"{float(x)!r} {float(y)!r}" for x, y in ring) + "))" for ring in rings)
    return f"MULTIPOLYGON({', '.join(polygons)})"
