"""The servers under comparison: the engines' data and own servers, a server process started and stopped,
and the sweep's scenarios (the same request to the engine's server and to roadkit)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import EXAMPLE, MONACO_BBOX, cache_root, pin_server, wait_http

Point = tuple[float, float]
#: The sources and the targets of each matrix request (100 x 100: the demo resources' limits).
MATRIX_SIDE = 100


def matrix_points(a: Point, b: Point) -> tuple[list[Point], list[Point]]:
    """The 100 sources and 100 targets of a matrix scenario's request: random Monaco points drawn from a seed (the pair)."""
    rng = random.Random(f"{a}{b}")
    xmin, ymin, xmax, ymax = MONACO_BBOX

    def side() -> list[Point]:
        return [(round(rng.uniform(xmin, xmax), 5), round(rng.uniform(ymin, ymax), 5)) for _ in range(MATRIX_SIDE)]

    return side(), side()


def _table_path(a: Point, b: Point) -> str:
    sources, targets = matrix_points(a, b)
    coordinates = ";".join(f"{x},{y}" for x, y in sources + targets)
    rows, columns = range(MATRIX_SIDE), range(MATRIX_SIDE, 2 * MATRIX_SIDE)
    return (
        f"/table/v1/driving/{coordinates}?annotations=duration,distance&generate_hints=false"
        f"&sources={';'.join(map(str, rows))}&destinations={';'.join(map(str, columns))}"
    )


def _sources_to_targets_path(a: Point, b: Point) -> str:
    sources, targets = matrix_points(a, b)
    body = {
        "sources": [{"lon": x, "lat": y} for x, y in sources],
        "targets": [{"lon": x, "lat": y} for x, y in targets],
        "costing": "auto",
        "verbose": False,
    }
    return "/sources_to_targets?json=" + urllib.parse.quote(json.dumps(body, separators=(",", ":")))


def _matrix_path(a: Point, b: Point) -> str:
    sources, targets = matrix_points(a, b)
    points = ["|".join(f"{x},{y}" for x, y in side) for side in (sources, targets)]
    return f"/simple/1.0.0/matrix?resource=monaco&sources={points[0]}&targets={points[1]}&timeUnit=second"


#: scenario -> (engine family, engine URL path of a pair, roadkit URL path of a pair, what it is)
SCENARIOS: dict[str, tuple[str, Callable[[Point, Point], str], Callable[[Point, Point], str], str]] = {
    "osrm-polyline": (
        "osrm",
        lambda a, b: f"/route/v1/driving/{a[0]},{a[1]};{b[0]},{b[1]}?overview=full&geometries=polyline&steps=false",
        lambda a, b: (
            f"/simple/1.0.0/route?resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}&geometryFormat=polyline&getSteps=false&getBbox=false"
        ),
        "OSRM route, polyline, no steps",
    ),
    "osrm-geojson-steps": (
        "osrm",
        lambda a, b: f"/route/v1/driving/{a[0]},{a[1]};{b[0]},{b[1]}?overview=full&geometries=geojson&steps=true",
        lambda a, b: f"/simple/1.0.0/route?resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}&getSteps=true&getBbox=false",
        "OSRM route, GeoJSON, steps",
    ),
    "osrm-native": (
        "osrm",
        lambda a, b: f"/route/v1/driving/{a[0]},{a[1]};{b[0]},{b[1]}",
        lambda a, b: f"/osrm/1.0.0/monaco/route/v1/driving/{a[0]},{a[1]};{b[0]},{b[1]}",
        "native OSRM API route (defaults)",
    ),
    "valhalla-route": (
        "valhalla",
        lambda a, b: (
            "/route?json="
            + urllib.parse.quote(
                json.dumps(
                    {
                        "locations": [{"lon": a[0], "lat": a[1]}, {"lon": b[0], "lat": b[1]}],
                        "costing": "auto",
                        "directions_options": {"format": "osrm"},
                        "shape_format": "geojson",
                    },
                    separators=(",", ":"),
                )
            )
        ),
        lambda a, b: f"/simple/1.0.0/route?resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}&getSteps=true&getBbox=false",
        "Valhalla route, GeoJSON, steps",
    ),
    "valhalla-isochrone": (
        "valhalla",
        lambda a, b: (
            "/isochrone?json="
            + urllib.parse.quote(
                json.dumps(
                    {"locations": [{"lon": a[0], "lat": a[1]}], "costing": "auto", "contours": [{"time": 5.0}], "polygons": True},
                    separators=(",", ":"),
                )
            )
        ),
        lambda a, b: f"/simple/1.0.0/isochrone?resource=monaco&point={a[0]},{a[1]}&costType=time&costValue=300&timeUnit=second",
        "Valhalla 5-minute isochrone",
    ),
    "osrm-matrix": ("osrm", _table_path, _matrix_path, "OSRM 100 x 100 matrix (durations and distances)"),
    "valhalla-matrix": ("valhalla", _sources_to_targets_path, _matrix_path, "Valhalla 100 x 100 matrix (concise)"),
}


def osrm_dataset() -> Path:
    """The example's car/fastest OSRM dataset (built once, then reused from the cache); its .osrm path."""
    dataset = cache_root() / "bench-osrm" / "car-fastest" / "monaco.osrm"
    if not Path(str(dataset) + ".hsgr").exists():
        subprocess.run(
            [sys.executable, "-m", "roadkit.cli", "osrm-build", str(EXAMPLE / "monaco.osm.pbf"), str(dataset), "--profile", "car"],
            check=True,
        )
    return dataset


def valhalla_config() -> Path:
    """The example's Valhalla tiles with the demo bus feed (built once, then reused from the cache); their valhalla.json."""
    import valhalla

    cache = cache_root() / f"bench-valhalla-{valhalla.__version__}"
    config = cache / "valhalla.json"
    if not config.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "roadkit.cli",
                "valhalla-build",
                str(EXAMPLE / "monaco.osm.pbf"),
                str(cache),
                "--gtfs",
                str(EXAMPLE / "gtfs"),
            ],
            check=True,
        )
    return config


def osrm_routed() -> Path:
    """osrm-routed, from the osrm-bindings wheel."""
    import osrm

    return Path(osrm.__file__).parent / "bin" / "osrm-routed"


def valhalla_service() -> Path:
    """valhalla_service, from the pyvalhalla wheel."""
    import valhalla

    return Path(valhalla.__file__).parent / "bin" / "valhalla_service"


def valhalla_service_config(workdir: Path, port: int) -> Path:
    """A copy of the tiles' configuration with valhalla_service listening on ``port`` (its sockets in ``workdir``)."""
    data = json.loads(valhalla_config().read_text())
    data["httpd"]["service"].update(
        {"listen": f"tcp://127.0.0.1:{port}", "loopback": f"ipc://{workdir}/loopback", "interrupt": f"ipc://{workdir}/interrupt"}
    )
    path = workdir / "valhalla-service.json"
    path.write_text(json.dumps(data))
    return path


def engine_command(family: str, workdir: Path, port: int, threads: int) -> list[str]:
    """The engine's own server on ``port`` with ``threads`` threads: osrm-routed or valhalla_service."""
    if family == "osrm":
        binary, dataset = osrm_routed(), osrm_dataset()
        return [str(binary), "--algorithm", "ch", "--ip", "127.0.0.1", "--port", str(port), "--threads", str(threads), str(dataset)]
    return [str(valhalla_service()), str(valhalla_service_config(workdir, port)), str(threads)]


def roadkit_command(server: Path) -> list[str]:
    """roadkit serving the server file ``server`` (as ``bench.config`` writes it)."""
    return [sys.executable, "-m", "roadkit.cli", "serve", str(server)]


@contextmanager
def running(command: list[str], *, pinned: bool, ready: str, preload: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A server process (its own session, so that its children stop with it), up once ``ready`` answers."""
    env = os.environ | {"LD_PRELOAD": preload} if preload else None
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=pin_server if pinned else None,
        env=env,
    )
    try:
        wait_http(ready, timeout=180)
        yield process
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def accepted_per_worker(admin: int) -> list[int]:
    """Connections each roadkit worker accepted so far (the administrator's health); [] in same-process mode."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{admin}/admin/1.0.0/health?verbose=true", timeout=5) as response:
            body = json.loads(response.read())
    except (OSError, urllib.error.URLError, ValueError):
        return []
    workers = body["services"][0].get("workers") or []
    return [int(w["connections"]["accepted"]) for w in workers]
