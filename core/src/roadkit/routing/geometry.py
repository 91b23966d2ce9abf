"""Geometry output: GeoJSON, encoded polyline (precision 5, lat-first) and WKT, plus bboxes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
from pypolyline.cutil import encode_coordinates

from roadkit.routing.model import Coord, GeoJSONText, LineText

GEOMETRY_FORMATS = ("geojson", "polyline", "wkt")


def _encode_value(value: int, out: list[str]) -> None:
    value = ~(value << 1) if value < 0 else value << 1
    while value >= 0x20:
        out.append(chr((0x20 | (value & 0x1F)) + 63))
        value >>= 5
    out.append(chr(value + 63))


def encode_polyline(coords: Iterable[Sequence[float]], precision: int = 5) -> str:
    """Google's encoded polyline of ``(x, y)`` coordinates, written in the usual ``(y, x)`` order.

    Encoded by pypolyline's compiled encoder (20x faster than Python; it was ~10 % of a polyline
    route request). It rounds halves away from zero, as OSRM and Google's reference do.
    """
    points = coords if isinstance(coords, list | tuple) else list(coords)
    try:
        return encode_coordinates(points, precision).decode("ascii")
    except (TypeError, ValueError, RuntimeError):
        # Coordinates pypolyline does not take (projected ones out of lon/lat bounds, 3D points): in Python.
        return python_encode_polyline(points, precision)


def python_encode_polyline(coords: Iterable[Sequence[float]], precision: int = 5) -> str:
    """:func:`encode_polyline` in plain Python (rounding with Python's ``round``)."""
    factor = 10**precision
    out: list[str] = []
    prev_lat = prev_lon = 0
    for x, y, *_ in coords:
        lat = round(y * factor)
        lon = round(x * factor)
        _encode_value(lat - prev_lat, out)
        _encode_value(lon - prev_lon, out)
        prev_lat, prev_lon = lat, lon
    return "".join(out)


def decode_polyline(text: str, precision: int = 5) -> list[Coord]:
    """Decode an encoded polyline into ``(x, y)`` coordinates (the inverse of :func:`encode_polyline`)."""
    factor = 10**precision
    coords: list[Coord] = []
    index = lat = lon = 0
    length = len(text)
    while index < length:
        deltas = []
        for _ in range(2):
            shift = result = 0
            while True:
                if index >= length:
                    raise ValueError("truncated polyline")
                byte = ord(text[index]) - 63
                index += 1
                result |= (byte & 0x1F) << shift
                shift += 5
                if byte < 0x20:
                    break
            deltas.append(~(result >> 1) if result & 1 else result >> 1)
        lat += deltas[0]
        lon += deltas[1]
        coords.append((lon / factor, lat / factor))
    return coords


def _num(value: float) -> str:
    return repr(float(value)) if value != int(value) else str(int(value)) if abs(value) < 1e15 else repr(value)


def _wkt_coords(coords: Iterable[Sequence[float]]) -> str:
    return ",".join(f"{_num(x)} {_num(y)}" for x, y in coords)


def to_wkt(geometry: Mapping[str, Any]) -> str:
    """WKT of a GeoJSON-like geometry dict (Point, LineString, Polygon, MultiPolygon, collections)."""
    kind = geometry["type"]
    coords: Any = geometry.get("coordinates")
    if kind == "Point":
        return f"POINT({_num(coords[0])} {_num(coords[1])})"
    if kind == "LineString":
        return f"LINESTRING({_wkt_coords(coords)})"
    if kind == "Polygon":
        return "POLYGON(" + ",".join(f"({_wkt_coords(ring)})" for ring in coords) + ")"
    if kind == "MultiPolygon":
        polys = ("(" + ",".join(f"({_wkt_coords(ring)})" for ring in poly) + ")" for poly in coords)
        return "MULTIPOLYGON(" + ",".join(polys) + ")"
    if kind == "GeometryCollection":
        return "GEOMETRYCOLLECTION(" + ",".join(to_wkt(g) for g in geometry["geometries"]) + ")"
    raise ValueError(f"unsupported geometry type {kind}")


def to_polyline(geometry: Mapping[str, Any]) -> str | list[str] | list[list[str]]:
    """Encoded polyline(s): one string for a line or point, one per ring for a polygon."""
    kind = geometry["type"]
    coords = geometry["coordinates"]
    if kind == "Point":
        return encode_polyline([coords])
    if kind == "LineString":
        return encode_polyline(coords)
    if kind == "Polygon":
        rings = [encode_polyline(ring) for ring in coords]
        return rings[0] if len(rings) == 1 else rings
    if kind == "MultiPolygon":
        return [[encode_polyline(ring) for ring in poly] for poly in coords]
    raise ValueError(f"unsupported geometry type {kind}")


def write_geometry(geometry: Mapping[str, Any], fmt: str) -> Any:
    """A GeoJSON-like geometry written in ``fmt`` (``geojson``, ``polyline`` or ``wkt``).

    A :class:`GeoJSONText` in GeoJSON is its text, which ``orjson.dumps`` inserts as it is.
    """
    if fmt == "geojson":
        return orjson.Fragment(geometry.text) if isinstance(geometry, GeoJSONText) else geometry
    if fmt == "polyline":
        return to_polyline(geometry)
    if fmt == "wkt":
        return to_wkt(geometry)
    raise ValueError(f"unknown geometry format {fmt}")


def line(coords: Sequence[Sequence[float]]) -> Mapping[str, Any]:
    """A GeoJSON LineString dict (coordinate tuples serialise as JSON arrays); the GeoJSON text of a
    :class:`LineText` as it is (write it with :func:`write_geometry`)."""
    if isinstance(coords, LineText):
        return coords.geojson()
    return {"type": "LineString", "coordinates": coords}


def bbox(coords: Iterable[Sequence[float]]) -> list[float]:
    """``[minx, miny, maxx, maxy]`` of coordinates."""
    xs: list[float] = []
    ys: list[float] = []
    for x, y in coords:
        xs.append(x)
        ys.append(y)
    if not xs:
        return []
    return [min(xs), min(ys), max(xs), max(ys)]


def slice_between(coords: list[Coord], start: Coord, end: Coord, from_index: int = 0) -> tuple[list[Coord], int]:
    """The part of a line from the vertex nearest ``start`` to the vertex nearest ``end`` after it.

    Search begins at ``from_index`` so that consecutive portions of a route that passes the same
    place twice are sliced in order; returns the slice and the index where it ends.
    """

    def nearest(target: Coord, lo: int) -> int:
        best, best_d = lo, float("inf")
        tx, ty = target
        for i in range(lo, len(coords)):
            x, y = coords[i]
            d = (x - tx) ** 2 + (y - ty) ** 2
            if d < best_d:
                best, best_d = i, d
                if d == 0:
                    break
        return best

    i = nearest(start, from_index)
    j = nearest(end, i)
    return coords[i : j + 1], j
