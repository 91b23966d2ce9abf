"""The Valhalla source's isochrones, coordinate by coordinate, against Valhalla's own answer to the same request.

Valhalla's polygons are valid: the source must hand them over as they are (repeated consecutive
points dropped, contours in the request's order), whatever it does to check them cheaply.
"""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest

from roadkit.errors import RoadkitError
from roadkit.routing.geometry import write_geometry
from roadkit.routing.model import Coord, Cost, GeoJSONText, IsochroneRequest
from roadkit_valhalla import ValhallaSource, translate
from roadkit_valhalla.translate import clean_polygon

MONACO = (7.409, 43.725, 7.439, 43.751)


def requests() -> list[tuple[str, IsochroneRequest]]:
    rng = random.Random(1123)
    kinds: list[tuple[str, Cost, tuple[float, ...], str]] = [
        ("car-300s", Cost("car", cost_type="time"), (300.0,), "departure"),
        ("car-arrival", Cost("car", cost_type="time"), (240.0,), "arrival"),
        ("car-2km", Cost("car", cost_type="distance"), (2000.0,), "departure"),
        ("pedestrian-3-values", Cost("pedestrian", cost_type="time"), (600.0, 180.0, 900.0), "departure"),
    ]
    cases = []
    for name, cost, values, direction in kinds:
        for i in range(5):
            point: Coord = (round(rng.uniform(MONACO[0], MONACO[2]), 5), round(rng.uniform(MONACO[1], MONACO[3]), 5))
            cases.append((f"{name}-{i}", IsochroneRequest(point, cost, values, direction)))  # type: ignore[arg-type]
    return cases


def _without_repeats(ring: list[list[float]]) -> list[list[float]]:
    return [p for i, p in enumerate(ring) if i == 0 or p != ring[i - 1]]


@pytest.mark.parametrize(("name", "request_"), requests(), ids=[name for name, _ in requests()])
async def test_isochrone_equals_valhallas_polygons(source: ValhallaSource, actor: Any, name: str, request_: IsochroneRequest) -> None:
    body = translate.isochrone_body(request_, source.setting(request_.cost))
    try:
        answer = json.loads(actor.isochrone(json.dumps(body)))
    except RuntimeError:
        with pytest.raises(RoadkitError):
            await source.isochrone(request_)
        return
    response = await source.isochrone(request_)
    # Valhalla answers the largest contour first: the request's order is by value.
    features = sorted(answer["features"], key=lambda f: -f["properties"]["contour"])
    by_value = dict(zip(sorted(request_.cost_values, reverse=True), features, strict=True))
    for value, geometry in zip(request_.cost_values, response.geometries, strict=True):
        expected = by_value[value]["geometry"]
        assert expected["type"] == "Polygon"
        cleaned = {"type": "Polygon", "coordinates": [_without_repeats(r) for r in expected["coordinates"]]}
        assert geometry == cleaned
        # Written in the response byte for byte as the dict would be.
        assert orjson.dumps(write_geometry(geometry, "geojson")) == orjson.dumps(cleaned)
    # One value: the polygon is written on the engine thread, from its coordinates alone.
    assert isinstance(response.geometries[0], GeoJSONText) == (len(request_.cost_values) == 1)


def _valhalla_text(geometry: dict[str, Any], contour: float = 5.0) -> str:
    """An answer written as Valhalla writes it (properties, then the geometry's coordinates before its type)."""
    written = {"coordinates": geometry["coordinates"], "type": geometry["type"]}
    feature = {"properties": {"contour": contour, "metric": "time"}, "geometry": written}
    return orjson.dumps({"features": [feature], "type": "FeatureCollection"}).decode()


@pytest.mark.parametrize(
    "geometry",
    [
        {"type": "Polygon", "coordinates": [[[0, 0], [4, 0], [4, 0], [4, 4], [0, 4], [0, 0]]]},  # a repeated point
        {"type": "Polygon", "coordinates": [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]},  # a bow tie: repaired
        {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [2, 2], [0, 0]]]},  # no area: the start point
        {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, "a"], [0, 0]]]},  # not numbers: the start point
    ],
)
def test_the_written_isochrone_is_what_the_whole_answer_gives(geometry: dict[str, Any]) -> None:
    request = IsochroneRequest((1.0, 1.0), Cost("car", cost_type="time"), (300.0,))
    text = _valhalla_text(geometry)
    written = translate.written_isochrone(text, request)
    whole = translate.isochrone_response(orjson.loads(text), request)
    assert written is not None
    assert written.geometries == whole.geometries
    assert [orjson.dumps(write_geometry(g, "geojson")) for g in written.geometries] == [
        orjson.dumps(write_geometry(g, "geojson")) for g in whole.geometries
    ]


def test_other_answers_are_read_whole() -> None:
    polygon = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}
    one = IsochroneRequest((0.5, 0.2), Cost("car", cost_type="time"), (300.0,))
    two = IsochroneRequest((0.5, 0.2), Cost("car", cost_type="time"), (300.0, 600.0))
    assert translate.written_isochrone(_valhalla_text(polygon), two) is None  # several values
    multi = {"type": "MultiPolygon", "coordinates": [polygon["coordinates"]]}
    assert translate.written_isochrone(_valhalla_text(multi), one) is None
    first_type = orjson.dumps({"features": [{"geometry": polygon, "properties": {}}]}).decode()  # "type" before "coordinates"
    assert translate.written_isochrone(first_type, one) is None
    assert translate.written_isochrone('{"features":[],"type":"FeatureCollection"}', one) is None


def test_polygons_with_holes_repeats_and_bad_points() -> None:
    shell = [[0, 0], [4, 0], [4, 0], [4, 4], [0, 4], [0, 0]]
    hole = [[1, 1], [1, 2], [2, 2], [2, 2], [2, 1], [1, 1]]
    assert clean_polygon({"type": "Polygon", "coordinates": [shell, hole]}) == {
        "type": "Polygon",
        "coordinates": [[[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]], [[1, 1], [1, 2], [2, 2], [2, 1], [1, 1]]],
    }
    plain = [[0, 0], [1, 0], [1, 1], [0, 0]]
    cleaned = clean_polygon({"type": "Polygon", "coordinates": [plain]})
    assert cleaned == {"type": "Polygon", "coordinates": [plain]}
    in_3d = [[0, 0, 5], [1, 0, 5], [1, 1, 5], [1, 1, 5], [0, 0, 5]]
    assert clean_polygon({"type": "Polygon", "coordinates": [in_3d]}) == {"type": "Polygon", "coordinates": [in_3d[:3] + in_3d[4:]]}
    assert clean_polygon({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, "a"], [0, 0]]]}) is None
    assert clean_polygon({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1], [0, 0]]]}) is None
