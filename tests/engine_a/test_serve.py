"""`roadkit serve` as a user runs it: the Monaco example on free ports, real HTTP, clean stop."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.core.conftest import free_port
from tests.service_support import start_problems


def _ports(example: Path) -> tuple[int, int]:
    admin_port, service_port = free_port(), free_port()
    server = example / "server.toml"
    server.write_text(re.sub(r"port = 8079", f"port = {admin_port}", server.read_text()))
    service = example / "service.toml"
    service.write_text(re.sub(r"port = 8080", f"port = {service_port}", service.read_text()))
    return admin_port, service_port


def test_roadkit_serve_runs_the_example_and_stops_cleanly(osrm_example: Path, tmp_path: Path) -> None:
    import shutil

    example = tmp_path / "monaco"
    shutil.copytree(osrm_example, example, symlinks=True)
    admin_port, service_port = _ports(example)
    process = subprocess.Popen(
        [sys.executable, "-m", "roadkit.cli", "serve", str(example / "server.toml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        health = None
        for _ in range(300):
            try:
                health = httpx.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health?verbose=true")
                if health.status_code == 200:
                    break
            except httpx.ConnectError:
                pass
            time.sleep(0.05)
        assert health is not None and health.status_code == 200, health and health.text
        assert [s["state"] for s in health.json()["services"][0]["sources"]] == ["green"] * 3
        route = httpx.get(
            f"http://127.0.0.1:{service_port}/simple/1.0.0/route",
            params={"resource": "monaco-osrm", "start": "7.41337,43.72956", "end": "7.41983,43.73115", "geometryFormat": "polyline"},
        )
        assert route.status_code == 200 and isinstance(route.json()["geometry"], str)
        assert httpx.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main").json()["lifecycle"] == "ready"
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert "admin API listening" in output and "service main stopped" in output
    assert "Traceback" not in output


def test_roadkit_check_reports_missing_data(osrm_example: Path, tmp_path: Path) -> None:
    import shutil

    example = tmp_path / "monaco"
    shutil.copytree(osrm_example, example, symlinks=True)
    (example / "data").unlink()
    (example / "data").mkdir()
    result = subprocess.run([sys.executable, "-m", "roadkit.cli", "check", str(example / "server.toml")], capture_output=True, text=True)
    assert result.returncode == 1
    assert "monaco-car-fastest.source: storage: data file" in result.stderr and "roadkit prepare" in result.stderr


def test_roadkit_reports_configuration_problems_without_a_traceback(tmp_path: Path) -> None:
    server = tmp_path / "server.toml"
    server.write_text('[administrator.listener]\nport = "x"\n[[services]]\nid = 3\nconfiguration = "nope.toml"\n')
    result = subprocess.run([sys.executable, "-m", "roadkit.cli", "serve", str(server)], capture_output=True, text=True)
    assert result.returncode == 2
    assert f"{server}: administrator.listener.port: expected an integer, got 'x'" in result.stderr
    assert f"{server}: services[0].id: expected a string, got 3" in result.stderr
    assert "Traceback" not in result.stderr


def test_roadkit_check_builds_the_resources_and_finds_what_start_would(osrm_example: Path, tmp_path: Path) -> None:
    import shutil

    example = tmp_path / "monaco"
    shutil.copytree(osrm_example, example, symlinks=True)
    resource = example / "resources" / "monaco-osrm.resource"
    text = resource.read_text()
    text = text.replace('start = { bbox = "7.349,43.71,7.491,43.77"', 'start = { bbox = "7.491,43.71,7.349,43.77"', 1)
    text = text.replace(
        'profile = { values = ["car", "pedestrian"], default = "car" }', 'profile = { values = ["car", "pedestrian"], default = "bike" }', 1
    )
    resource.write_text(text)
    result = subprocess.run([sys.executable, "-m", "roadkit.cli", "check", str(example / "server.toml")], capture_output=True, text=True)
    assert result.returncode == 1, result.stdout
    expected = [
        f"{resource}: operations.route.start.bbox: expected xmin < xmax and ymin < ymax, got '7.491,43.71,7.349,43.77'",
        f"{resource}: operations.route.profile.default: expected one of ['car', 'pedestrian'], got 'bike'",
    ]
    assert [line for line in result.stderr.splitlines() if line.startswith(str(resource))] == expected
    problems = start_problems(example / "service.toml")
    assert problems == expected  # the check found exactly what start finds


def test_roadkit_check_reads_road2s_sample_configuration_with_the_installed_engines(tmp_path: Path) -> None:
    import json
    import shutil

    road2 = tmp_path / "road2"
    shutil.copytree(Path(__file__).parents[1] / "core" / "road2", road2)
    admin = json.loads((road2 / "road2.json").read_text())
    admin["administration"]["network"]["server"]["host"] = "127.0.0.1"  # 0.0.0.0 needs admin authentication
    (road2 / "road2.json").write_text(json.dumps(admin))
    result = subprocess.run([sys.executable, "-m", "roadkit.cli", "check", str(road2 / "road2.json")], capture_output=True, text=True)
    assert "service main: 3 source(s), 1 resource file(s)" in result.stdout, result.stderr
    problems = [line for line in result.stderr.splitlines() if line.startswith(str(road2))]
    # Road2's sample points at data under /home/docker: only the missing data is reported, the files are fine.
    assert problems and all(": storage: data file /home/docker/" in p and "is missing" in p for p in problems), problems
    assert result.returncode == 1
