"""Services for tests: the plugins, a service written from its documents, a client of its app."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from roadkit.config import load_service
from roadkit.plugins import Plugins
from roadkit.serving.app import create_app

if TYPE_CHECKING:
    from starlette.testclient import TestClient

#: The service file :func:`write_service` writes (the simple API; one listener, never bound by a TestClient).
SERVICE = """\
[application]
name = "roadkit-test"
title = "roadkit test service"
description = "A service written by roadkit.testing"

[[listeners]]
port = 8080

[[apis]]
name = "simple"
version = "1.0.0"

[folders]
sources = ["sources"]
resources = ["resources"]
projections = "projections"
"""

#: The projections :func:`write_service` offers: lon/lat and web Mercator.
PROJECTIONS = """\
[[projections]]
id = "EPSG:4326"
parameters = "+proj=longlat +datum=WGS84 +no_defs"

[[projections]]
id = "EPSG:3857"
parameters = "+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +wktext +no_defs"
"""

#: The whole world, in lon/lat, as far as web Mercator reaches.
WORLD = "-180,-85,180,85"


def straight_source(source_id: str = "straight", *, car: float = 36.0, pedestrian: float = 3.6) -> str:
    """A ``straight`` source document: car (fastest/time, shortest/distance) and pedestrian (fastest/time), speeds in km/h."""
    return f"""\
id = "{source_id}"
type = "straight"
description = "Straight lines (roadkit.testing)"
projection = "EPSG:4326"

[[costs]]
profile = "car"
optimization = "fastest"
cost_type = "time"
speed = {float(car)!r}

[[costs]]
profile = "car"
optimization = "shortest"
cost_type = "distance"
speed = {float(car)!r}

[[costs]]
profile = "pedestrian"
optimization = "fastest"
cost_type = "time"
speed = {float(pedestrian)!r}
"""


def straight_resource(
    resource_id: str = "straight", *, sources: Sequence[str] = ("straight",), bbox: str = WORLD, version: str = "1.0"
) -> str:
    """A ``straight`` resource document offering route, isochrone, nearest and matrix on ``sources`` of :func:`straight_source`."""
    box = f'{{ bbox = "{bbox}", projection = "EPSG:4326" }}'
    crs = '{ values = ["EPSG:4326", "EPSG:3857"], default = "EPSG:4326" }'
    listed = ", ".join(f'"{s}"' for s in sources)
    return f"""\
id = "{resource_id}"
type = "straight"
description = "Straight lines (roadkit.testing)"
version = "{version}"
sources = [{listed}]

[operations.route]
start = {box}
end = {box}
intermediates = {box}
profile = {{ values = ["car", "pedestrian"], default = "car" }}
optimization = {{ values = ["fastest", "shortest"], default = "fastest" }}
getSteps = {{ default = true }}
waysAttributes = {{ values = ["name"] }}
geometryFormat = {{ values = ["geojson", "polyline", "wkt"], default = "geojson" }}
getBbox = {{ default = true }}
crs = {crs}
timeUnit = {{ values = ["hour", "minute", "second", "standard"], default = "minute" }}
distanceUnit = {{ values = ["meter", "kilometer"], default = "meter" }}

[operations.isochrone]
point = {box}
costType = {{ values = ["time", "distance"], default = "time" }}
costValue = {{ min = 1, max = 50000 }}
profile = {{ values = ["car"], default = "car" }}
direction = {{ values = ["departure", "arrival"], default = "departure" }}
crs = {crs}
geometryFormat = {{ values = ["geojson", "polyline", "wkt"], default = "geojson" }}
timeUnit = {{ values = ["hour", "minute", "second"], default = "second" }}
distanceUnit = {{ values = ["meter", "kilometer"], default = "meter" }}

[operations.nearest]
coordinates = {box}
nbPoints = {{ min = 1, max = 10, default = 1 }}
crs = {crs}

[operations.matrix]
sources = {box}
targets = {box}
profile = {{ values = ["car", "pedestrian"], default = "car" }}
optimization = {{ values = ["fastest", "shortest"], default = "fastest" }}
crs = {crs}
timeUnit = {{ values = ["hour", "minute", "second", "standard"], default = "second" }}
distanceUnit = {{ values = ["meter", "kilometer"], default = "meter" }}
limits = {{ sources = 20, targets = 30, cells = 400 }}
"""


def write_service(
    folder: Path,
    sources: Mapping[str, str] | None = None,
    resources: Mapping[str, str] | None = None,
    *,
    service: str = SERVICE,
    projections: str = PROJECTIONS,
) -> Path:
    """Write a service into ``folder`` and return its service file.

    ``sources`` and ``resources`` map file names (without ``.source``/``.resource``) to documents;
    None writes the default, one :func:`straight_source` and one :func:`straight_resource` (both
    ``straight``), and an empty mapping writes none.
    """
    documents = {
        "sources": {"straight": straight_source()} if sources is None else sources,
        "resources": {"straight": straight_resource()} if resources is None else resources,
    }
    for kind, texts in documents.items():
        (folder / kind).mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (folder / kind / f"{name}.{kind[:-1]}").write_text(text)
    (folder / "projections").mkdir(parents=True, exist_ok=True)
    (folder / "projections" / "projections.toml").write_text(projections)
    service_file = folder / "service.toml"
    service_file.write_text(service)
    return service_file


def plugins_for_tests(*extra: object, entry_points: bool = True) -> Plugins:
    """Plugins with the installed entry points (or none) and ``extra`` plugin objects."""
    return Plugins.create(load_entry_points=entry_points, extra_plugins=extra)


def straight_plugins(*extra: object, entry_points: bool = True) -> Plugins:
    """:func:`plugins_for_tests` with the ``straight`` kind (:mod:`roadkit.testing.straight`) among the extras."""
    from roadkit.testing import straight

    return plugins_for_tests(straight, *extra, entry_points=entry_points)


@contextmanager
def service_client(service_file: Path, plugins: Plugins | None = None, cors: Path | None = None) -> Iterator[TestClient]:
    """A Starlette TestClient of a service file's app, inside its lifespan (sources connected)."""
    from starlette.testclient import TestClient

    app = create_app(load_service(service_file, cors=cors), plugins or Plugins.create())
    with TestClient(app) as client:
        yield client
