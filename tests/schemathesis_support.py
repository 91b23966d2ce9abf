"""Running schemathesis against ``roadkit serve`` on a copy of an example: shared by the engines' schemathesis tests.

Each run is bounded (a fixed seed, a few examples per operation and phase) and must report every
case passed under ``--checks all``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.core.conftest import free_port

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
#: Examples per operation and phase.
MAX_EXAMPLES = 20
SEED = 20261123
#: The phases of the engines' simple-API runs in the suite; ``ROADKIT_SCHEMATHESIS_PHASES=coverage``
#: (or ``examples,coverage,fuzzing``) runs the long ones by hand.
SUITE_PHASES = os.environ.get("ROADKIT_SCHEMATHESIS_PHASES", "examples,fuzzing")


def _start(example: Path) -> tuple[subprocess.Popen[str], str, str]:
    admin_port, service_port = free_port(), free_port()
    server, service = example / "server.toml", example / "service.toml"
    server.write_text(re.sub(r"port = \d+", f"port = {admin_port}", server.read_text(), count=1))
    service.write_text(re.sub(r"port = \d+", f"port = {service_port}", service.read_text(), count=1))
    # The log goes to a file in the copy: a pipe nobody reads until the end fills up (64 KB) on a long
    # run, and the administrator then blocks writing a log line (every request of the run times out).
    with (example / "serve.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "roadkit.cli", "serve", str(server)], stdout=log, stderr=subprocess.STDOUT, text=True
        )
    return process, f"http://127.0.0.1:{admin_port}/admin/1.0.0", f"http://127.0.0.1:{service_port}/simple/1.0.0"


def _wait_green(process: subprocess.Popen[str], admin: str) -> bool:
    for _ in range(1200):
        if process.poll() is not None:
            return False  # e.g. a port taken between choosing and binding it: try other ports
        try:
            if httpx.get(f"{admin}/health").status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    return False


def serve(example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``roadkit serve`` on a copy of ``example`` until green: (admin API base, simple API base)."""
    for _ in range(3):
        copy = tmp_path_factory.mktemp("schemathesis") / example.name
        shutil.copytree(example, copy, symlinks=True)
        process, admin, simple = _start(copy)
        try:
            if _wait_green(process, admin):
                yield admin, simple
                return
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
    pytest.fail("the demo service did not start")


def run(url: str, tmp_path: Path, *extra: str, examples: int = MAX_EXAMPLES, env: dict[str, str] | None = None) -> str:
    """``schemathesis run --checks all`` on the document at ``url`` (a schemathesis.toml in ``tmp_path`` applies): its output."""
    command = [str(SCHEMATHESIS), "run", url, "--checks", "all", "--max-examples", str(examples), "--seed", str(SEED), "--no-color", *extra]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    print(result.stdout[-20000:])
    assert result.returncode == 0, (
        f"schemathesis found failures (exit {result.returncode}):\n{result.stdout[-8000:]}\n{result.stderr[-2000:]}"
    )
    assert re.search(r"(\d+) generated, \1 passed", result.stdout), result.stdout[-3000:]
    return result.stdout


def run_simple_api(simple: str, tmp_path: Path, paths: set[str]) -> str:
    """The suite's run on a simple API whose document has exactly ``paths`` (its phases: SUITE_PHASES)."""
    document = httpx.get(f"{simple}/openapi.json", timeout=30).json()
    assert set(document["paths"]) == paths
    # The fuzzing phase only: the coverage phase walks every variant's boundaries (Valhalla: 53,158 cases in
    # about 5 minutes), too long for the suite; ROADKIT_SCHEMATHESIS_PHASES=coverage runs it by hand.
    return run(f"{simple}/openapi.json", tmp_path, "--phases", SUITE_PHASES, examples=10)


#: The native OSRM API's runs: the coordinate operations and the POST ones, every check. A rule the document
#: can't express (the number of bearings, radiuses, hints, approaches or timestamps equals the number of
#: coordinates; indices below it; a trace that matches; exclude classes of the dataset's profile) may refuse
#: a schema-valid request with osrm-routed's 400: ``schemathesis_native_hooks.py`` checks that every such
#: refusal is one of these, never a syntax, id, enum, limit or area the document states.
NATIVE_HOOKS = Path(__file__).with_name("schemathesis_native_hooks.py")
NATIVE_CONFIG = """
[[operations]]
include-path-regex = "/v1/"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400"]
"""


def run_native_api(native: str, tmp_path: Path, *, examples: int = 3) -> str:
    """The suite's run on the native OSRM API at ``native`` (``.../osrm/1.0.0``): its examples, coverage and fuzzing phases."""
    (tmp_path / "schemathesis.toml").write_text(NATIVE_CONFIG)
    env = {"SCHEMATHESIS_HOOKS": str(NATIVE_HOOKS)}
    return run(f"{native}/openapi.json", tmp_path, "--phases", "examples,coverage,fuzzing", examples=examples, env=env)
