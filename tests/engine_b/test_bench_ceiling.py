"""bench/investigations/ceiling_valhalla.py, the benchmark's thinnest Python server on the Actor: it must answer what the Actor answers.

Its requests/s are read as the most a Python server on the Actor can reach; a server that answered
errors fast, or other bodies than the Actor's, would make that ceiling a lie.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roadkit.config import allocator
from roadkit.process.allocator import loaded
from tests.engine_b.conftest import START, VIA
from tests.engine_servers import EngineServer, free_port

CEILING = Path(__file__).parents[2] / "bench" / "investigations" / "ceiling_valhalla.py"
ISOCHRONE = {"locations": [{"lon": START[0], "lat": START[1]}], "costing": "auto", "contours": [{"time": 5.0}], "polygons": True}
ROUTE = {
    "locations": [{"lon": START[0], "lat": START[1]}, {"lon": VIA[0], "lat": VIA[1]}],
    "costing": "auto",
    "directions_options": {"format": "osrm"},
    "shape_format": "geojson",
}


@pytest.fixture(scope="module", params=["raw", "uvicorn"])
def ceiling(request: pytest.FixtureRequest, valhalla_config: Path) -> Iterator[EngineServer]:
    """The ceiling server in both forms (its own HTTP protocol, an ASGI app under uvicorn)."""
    port = free_port()
    command = [sys.executable, str(CEILING), str(valhalla_config), str(port), "--workers", "2", "--http", request.param]
    server = EngineServer("ceiling", command, port, "/")
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


def get(server: EngineServer, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
    query = "?json=" + urllib.parse.quote(json.dumps(body)) if body is not None else ""
    try:
        with urllib.request.urlopen(server.url + path + query, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_answers_are_the_actors_text(ceiling: EngineServer, actor: Any) -> None:
    for path, body in (("/isochrone", ISOCHRONE), ("/route", ROUTE)):
        status, answer = get(ceiling, path, body)
        assert status == 200, answer
        assert answer.decode() == getattr(actor, path[1:])(json.dumps(body))
    assert json.loads(get(ceiling, "/isochrone", ISOCHRONE)[1])["features"][0]["geometry"]["type"] == "Polygon"


def test_refusals_are_not_answers(ceiling: EngineServer) -> None:
    status, answer = get(ceiling, "/isochrone", {"costing": "auto"})
    assert (status, answer) == (400, b"Insufficiently specified required parameter 'locations'")
    assert get(ceiling, "/status")[0] == 404
    assert get(ceiling, "/isochrone")[0] == 404


def test_workers_run_with_roadkits_default_allocator(ceiling: EngineServer) -> None:
    """One process per worker under the launcher, each with the allocator a roadkit worker preloads by default."""
    assert ceiling.process is not None
    children = Path(f"/proc/{ceiling.process.pid}/task/{ceiling.process.pid}/children").read_text().split()
    assert len(children) == 2
    library = allocator.preload("auto")
    expected = "system" if library is None else next(name for name, files in allocator.LIBRARIES.items() if library.name in files)
    assert [loaded(pid, library) for pid in children] == [expected, expected]
