"""The example's projections: Road2's French set, checked against known coordinates and pyproj's EPSG definitions."""

from __future__ import annotations

import pytest
from pyproj import Transformer

from roadkit.routing.projections import ProjectionRegistry
from tests.conftest import EXAMPLE

# (projection, a place it is meant for in lon/lat)
PLACES = [
    ("EPSG:2154", (2.3522, 48.8566)),  # Paris
    ("EPSG:4559", (-61.534, 16.241)),  # Pointe-à-Pitre, Guadeloupe
    ("EPSG:2972", (-52.326, 4.938)),  # Cayenne, French Guiana
    ("EPSG:2975", (55.448, -20.882)),  # Saint-Denis, Réunion
    ("EPSG:4471", (45.227, -12.781)),  # Mamoudzou, Mayotte
    ("EPSG:32620", (-62.849, 17.897)),  # Gustavia, Saint-Barthélemy
    ("EPSG:4467", (-56.178, 46.778)),  # Saint-Pierre
]


@pytest.fixture(scope="module")
def registry() -> ProjectionRegistry:
    return ProjectionRegistry.from_folder(EXAMPLE / "projections")


def test_the_example_ships_road2s_french_projections(registry: ProjectionRegistry) -> None:
    assert set(registry.ids()) >= {
        "EPSG:4326",
        "EPSG:3857",
        "EPSG:2154",
        "EPSG:4559",
        "EPSG:2972",
        "EPSG:2975",
        "EPSG:4471",
        "EPSG:32620",
        "EPSG:4467",
    }


@pytest.mark.parametrize(("pid", "lonlat"), PLACES)
def test_reprojection_matches_pyproj_with_the_epsg_definition(registry: ProjectionRegistry, pid: str, lonlat: tuple[float, float]) -> None:
    x, y = registry.transform_point(lonlat, "EPSG:4326", pid)
    ex, ey = Transformer.from_crs("EPSG:4326", pid, always_xy=True).transform(*lonlat)
    assert (x, y) == pytest.approx((ex, ey), abs=0.01)
    back = registry.transform_point((x, y), pid, "EPSG:4326")
    assert back == pytest.approx(lonlat, abs=1e-9)


@pytest.mark.parametrize(
    ("pid", "lonlat", "expected"),
    [
        ("EPSG:2154", (3.0, 46.5), (700000.0, 6600000.0)),  # Lambert-93's origin
        ("EPSG:4559", (-63.0, 0.0), (500000.0, 0.0)),  # zone 20's central meridian on the equator
        ("EPSG:32620", (-63.0, 0.0), (500000.0, 0.0)),
        ("EPSG:2972", (-51.0, 0.0), (500000.0, 0.0)),
        ("EPSG:4467", (-57.0, 0.0), (500000.0, 0.0)),
        ("EPSG:2975", (57.0, 0.0), (500000.0, 10000000.0)),  # southern zones: false northing 10 000 km
        ("EPSG:4471", (45.0, 0.0), (500000.0, 10000000.0)),
    ],
)
def test_known_coordinates(registry: ProjectionRegistry, pid: str, lonlat: tuple[float, float], expected: tuple[float, float]) -> None:
    assert registry.transform_point(lonlat, "EPSG:4326", pid) == pytest.approx(expected, abs=1e-3)


def test_a_line_in_a_french_projection_round_trips(registry: ProjectionRegistry) -> None:
    line = [(55.448, -20.882), (55.46, -20.89), (55.47, -20.90)]
    projected = registry.transform(line, "EPSG:4326", "EPSG:2975")
    assert all(300000 < x < 400000 and 7600000 < y < 7700000 for x, y in projected)
    back = registry.transform(projected, "EPSG:2975", "EPSG:4326")
    assert [c for point in back for c in point] == pytest.approx([c for point in line for c in point], abs=1e-9)
