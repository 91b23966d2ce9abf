"""The Valhalla source's isochrones, coordinate by coordinate, against Valhalla's own answer to the same request.

Valhalla's polygons are valid: the source must hand them over as they are (repeated consecutive
points dropped, contours in the request's order), whatever it does to check them cheaply.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from roadkit.errors import RoadkitError
from roadkit.model import Coord, Cost, IsochroneRequest
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
        assert geometry == {"type": "Polygon", "coordinates": [_without_repeats(r) for r in expected["coordinates"]]}


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
