"""The engine-agnostic model's helpers."""

from __future__ import annotations

import orjson
import pytest
import shapely
from shapely.geometry import shape

from roadkit.routing.geometry import line, write_geometry
from roadkit.routing.model import GeoJSONText, LineText, way_name
from roadkit.routing.projections import ProjectionRegistry


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Boulevard Albert 1er", "Boulevard Albert 1er"),
        ("", ""),  # an unnamed way stays an empty string
        ('{"name": "Avenue de la Costa", "nature": "route"}', {"name": "Avenue de la Costa", "nature": "route"}),
        ('["A", "B"]', ["A", "B"]),
        ("{not json", "{not json"),  # looks like JSON, is not: kept as it is
        ("[Monaco] quai", "[Monaco] quai"),
    ],
)
def test_way_name_parses_json_names_only(name: str, expected: object) -> None:
    assert way_name(name) == expected


SHELL = [[7.41, 43.73], [7.42, 43.73], [7.42, 43.74], [7.41, 43.73]]
HOLE = [[7.415, 43.733], [7.416, 43.733], [7.416, 43.734], [7.415, 43.733]]
POLYGON = {"type": "Polygon", "coordinates": [SHELL, HOLE]}


def test_geojson_text_reads_as_the_geometry_it_holds() -> None:
    written = GeoJSONText("Polygon", orjson.dumps(POLYGON))
    assert written["type"] == "Polygon"
    assert written["coordinates"] == POLYGON["coordinates"]
    assert written == POLYGON
    assert dict(written) == POLYGON and len(written) == 2
    assert written.get("bbox") is None
    with pytest.raises(KeyError):
        written["bbox"]
    assert shape(written).equals(shapely.geometry.shape(POLYGON))


@pytest.mark.parametrize("fmt", ["geojson", "polyline", "wkt"])
def test_geojson_text_is_written_as_its_dict_is(fmt: str) -> None:
    written = GeoJSONText("Polygon", orjson.dumps(POLYGON))
    assert orjson.dumps({"geometry": write_geometry(written, fmt)}) == orjson.dumps({"geometry": write_geometry(POLYGON, fmt)})


def test_geojson_text_in_geojson_is_the_text_itself() -> None:
    text = b'{"type":"Polygon","coordinates":[[[1.0,2.0],[3.0,2.0],[3.0,4.0],[1.0,2.0]]]}'
    written = write_geometry(GeoJSONText("Polygon", text), "geojson")
    assert isinstance(written, orjson.Fragment)
    assert orjson.dumps([written]) == b"[" + text + b"]"


LINE = [(7.4212345, 43.7312345), (7.42, 43.74), (7.43, 43.75)]
WORLD = ProjectionRegistry.from_folder(None)
WORLD.add("EPSG:3857", "+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +no_defs")
#: A line as PostGIS writes it (``ST_AsGeoJSON(..., 7)``): the text a pgRouting source hands over.
LINE_TEXT = '{"type":"LineString","coordinates":[[7.4212345,43.7312345],[7.42,43.74],[7.43,43.75]]}'


def test_line_text_reads_as_its_coordinates() -> None:
    text = LineText(LINE_TEXT)
    assert len(text) == 3 and text[0] == LINE[0] and text[-1] == LINE[-1] and text[1:] == LINE[1:]
    assert list(text) == LINE and text == LINE and LINE == text and text != LINE[:2]  # noqa: SIM300 (both sides of ==)
    assert isinstance(text[0], tuple)


@pytest.mark.parametrize("fmt", ["geojson", "polyline", "wkt"])
def test_line_text_is_written_as_its_list_is(fmt: str) -> None:
    assert orjson.dumps(write_geometry(line(LineText(LINE_TEXT)), fmt)) == orjson.dumps(write_geometry(line(LINE), fmt))


def test_line_text_in_geojson_is_the_text_unread() -> None:
    text = LineText(LINE_TEXT)
    written = write_geometry(line(WORLD.transform(text, "EPSG:4326", "EPSG:4326")), "geojson")
    assert isinstance(written, orjson.Fragment) and orjson.dumps(written) == LINE_TEXT.encode()
    assert text._coords is None  # nothing parsed: no Python object per coordinate


def test_line_text_in_another_crs_is_reprojected() -> None:
    projected = WORLD.transform(LineText(LINE_TEXT), "EPSG:4326", "EPSG:3857")
    assert projected == WORLD.transform(LINE, "EPSG:4326", "EPSG:3857")
    assert 826_000 < projected[0][0] < 827_000
