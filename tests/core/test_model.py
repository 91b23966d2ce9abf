"""The engine-agnostic model's helpers."""

from __future__ import annotations

import orjson
import pytest
import shapely
from shapely.geometry import shape

from roadkit.routing.geometry import write_geometry
from roadkit.routing.model import GeoJSONText, way_name


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
