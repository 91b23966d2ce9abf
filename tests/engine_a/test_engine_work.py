"""Bounded engine work on OSRM: limits refused before the engine, long calls off the worker's event loop."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from roadkit.plugins import Plugins
from roadkit.testing import service_client
from tests.core.conftest import free_port

#: 100 points a few metres apart: with 100 m radiuses the match has hundreds of candidates per point
#: (measured: about 30 s on Monaco, the GIL held all along).
TRACE = ";".join(f"{7.41 + i * 0.00002:.5f},{43.73 + i * 0.00002:.5f}" for i in range(100))
SLOW_MATCH = f"/osrm/1.0.0/slow/match/v1/car/{TRACE}?radiuses=" + ";".join(["100"] * 100)
SMALL_MATCH = "/osrm/1.0.0/slow/match/v1/car/7.41,43.73;7.4102,43.7302?radiuses=10;10"
NEAREST = "/simple/1.0.0/nearest?resource=monaco-osrm&coordinates=7.42,43.735"
ENGINE_TIMEOUT = 3.0


@pytest.fixture(scope="module")
def slow(osrm_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The Monaco service with an engine time-out of 3 s and a resource ``slow`` whose match radiuses are unbounded."""
    folder = tmp_path_factory.mktemp("slow")
    example = folder / "monaco"
    shutil.copytree(osrm_example, example, symlinks=True)
    (example / "resources" / "slow.resource").write_text(
        'id = "slow"\ntype = "osrm"\ndescription = "unbounded radiuses"\nsources = ["monaco-osrm-car-fastest"]\n'
        "[operations.nearest]\n[apis.osrm.limits]\nmax_matching_radius = -1\n"
    )
    service = example / "service.toml"
    service.write_text(service.read_text().replace("engine_timeout = 10.0", f"engine_timeout = {ENGINE_TIMEOUT}"))
    with service_client(service, Plugins.create()) as client:
        yield client


def test_match_radius_past_the_limit_is_a_400_before_the_engine(client: TestClient) -> None:
    trace = "7.41,43.73;7.4102,43.7302"
    started = time.perf_counter()
    refused = client.get(f"/osrm/1.0.0/monaco-osrm/match/v1/car/{trace}?radiuses=51;10")
    assert refused.status_code == 400
    assert refused.json() == {"code": "TooBig", "message": "Radius search size is too large for map matching."}
    assert time.perf_counter() - started < 1.0, "refused before the engine (no child process started)"
    assert client.get(f"/osrm/1.0.0/monaco-osrm/match/v1/car/{trace}?radiuses=50;10").status_code == 200
    posted = client.post(
        "/osrm/1.0.0/monaco-osrm/match/v1/car", json={"coordinates": [[7.41, 43.73], [7.4102, 43.7302]], "radiuses": [500, 5]}
    )
    assert posted.status_code == 400 and posted.json()["code"] == "TooBig"


def test_the_native_api_publishes_its_limits(client: TestClient) -> None:
    document = client.get("/osrm/1.0.0/openapi.json").json()
    text = str(document)
    assert "at most 50; larger: 400 TooBig" in text
    assert "at most 10000 (400 TooBig beyond)" in text
    assert "'maximum': 50.0" in text  # the POST body's radiuses of a match
    (listed,) = [r for r in client.get("/osrm/1.0.0/resources").json() if r["id"] == "monaco-osrm"]
    assert listed["limits"] == {
        "max_viaroute_size": 500,
        "max_trip_size": 100,
        "max_table_size": 100,
        "max_matching_size": 100,
        "max_nearest_size": 100,
        "max_nearest_locations": 10,
        "max_alternatives": 3,
        "max_matching_radius": 50.0,
    }


def test_table_of_too_many_cells_is_a_400(client: TestClient) -> None:
    coordinates = ";".join(f"{7.41 + i * 0.0001:.4f},43.73" for i in range(101))
    refused = client.get(f"/osrm/1.0.0/monaco-osrm/table/v1/car/{coordinates}")
    assert (refused.status_code, refused.json()) == (400, {"code": "TooBig", "message": "Too many table coordinates"})


def test_a_long_match_leaves_the_worker_answering_and_times_out(slow: TestClient) -> None:
    assert slow.get(SMALL_MATCH).status_code == 200  # starts the engine's child process
    answers: dict[str, Any] = {}

    def long_match() -> None:
        started = time.perf_counter()
        response = slow.get(SLOW_MATCH)
        answers["status"], answers["body"], answers["seconds"] = response.status_code, response.json(), time.perf_counter() - started

    thread = threading.Thread(target=long_match)
    thread.start()
    time.sleep(0.3)  # the match is running in the engine's child
    latencies = []
    while thread.is_alive():
        started = time.perf_counter()
        assert slow.get(NEAREST).status_code == 200
        latencies.append(time.perf_counter() - started)
        time.sleep(0.05)
    thread.join()
    assert answers["status"] == 504, answers
    assert ENGINE_TIMEOUT - 0.1 < answers["seconds"] < ENGINE_TIMEOUT + 2.0, answers
    assert len(latencies) >= 10 and max(latencies) < 0.5, latencies
    # The killed child is replaced at the next call.
    assert slow.get(SMALL_MATCH).status_code == 200


def test_a_served_worker_answers_during_a_long_match(osrm_example: Path, tmp_path: Path) -> None:
    """`roadkit serve` with one worker: the match runs in the engine's child, the worker's loop keeps answering."""
    example = tmp_path / "monaco"
    shutil.copytree(osrm_example, example, symlinks=True)
    (example / "resources" / "slow.resource").write_text(
        'id = "slow"\ntype = "osrm"\ndescription = "unbounded radiuses"\nsources = ["monaco-osrm-car-fastest"]\n'
        "[operations.nearest]\n[apis.osrm.limits]\nmax_matching_radius = -1\n"
    )
    admin_port, port = free_port(), free_port()
    server = example / "server.toml"
    server.write_text(server.read_text().replace("port = 8079", f"port = {admin_port}").replace('workers = "auto"', "workers = 1"))
    service = example / "service.toml"
    service.write_text(
        service.read_text().replace("port = 8080", f"port = {port}").replace("engine_timeout = 10.0", "engine_timeout = 3.0")
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "roadkit.cli", "serve", str(server)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + NEAREST).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        answers: dict[str, float] = {}

        def long_match() -> None:
            started = time.perf_counter()
            answers["status"] = httpx.get(base + SLOW_MATCH, timeout=60).status_code
            answers["seconds"] = time.perf_counter() - started

        thread = threading.Thread(target=long_match)
        thread.start()
        time.sleep(0.5)  # the child process started, the match running
        latencies = []
        with httpx.Client() as other:
            while thread.is_alive():
                started = time.perf_counter()
                assert other.get(base + NEAREST).status_code == 200
                latencies.append(time.perf_counter() - started)
                time.sleep(0.05)
        thread.join()
        assert answers["status"] == 504 and answers["seconds"] < 6.0, answers
        assert len(latencies) >= 10 and max(latencies) < 0.5, latencies
        assert httpx.get(base + SMALL_MATCH).status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output


def test_a_route_of_many_coordinates_leaves_the_worker_answering(client: TestClient) -> None:
    """500 coordinates with steps and annotations: about a second of engine work and 11 MB, off the loop."""
    coordinates = ";".join(f"{7.41 + (i * 37 % 200) * 0.0001:.4f},{43.725 + (i * 53 % 200) * 0.0001:.4f}" for i in range(500))
    url = f"/osrm/1.0.0/monaco-osrm/route/v1/car/{coordinates}?steps=true&annotations=true&overview=full&geometries=geojson"
    assert client.get(f"/osrm/1.0.0/monaco-osrm/match/v1/car/{SMALL_MATCH.split('/car/')[1]}").status_code == 200  # the child started
    answers: dict[str, Any] = {}

    def long_route() -> None:
        response = client.get(url)
        answers["status"], answers["legs"] = response.status_code, len(response.json()["routes"][0]["legs"])

    thread = threading.Thread(target=long_route)
    thread.start()
    latencies = []
    while thread.is_alive():
        started = time.perf_counter()
        assert client.get(NEAREST).status_code == 200
        latencies.append(time.perf_counter() - started)
        time.sleep(0.02)
    thread.join()
    assert answers == {"status": 200, "legs": 499}
    assert len(latencies) >= 5 and max(latencies) < 0.3, latencies
