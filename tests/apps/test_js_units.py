"""Run the browser modules' unit tests (node's built-in runner) under pytest."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS_TESTS = ROOT / "apps" / "client" / "js-tests"


def test_javascript_unit_tests_pass() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (the JS unit tests need Node 20+)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.skip(f"node {version} is too old: the JS unit tests need Node 20+")
    result = subprocess.run(
        [node, "--test", "--test-reporter=spec", str(JS_TESTS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(result.stdout)
    print(result.stderr)
    assert result.returncode == 0, f"node --test failed with exit code {result.returncode}"
