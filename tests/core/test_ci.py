"""What CI enforces: warnings are errors, the configured line length, lint before the tests, a coverage floor."""

from __future__ import annotations

import ast
import tomllib
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_a_warning_is_an_error() -> None:
    with pytest.raises(UserWarning, match="not ignored"):
        warnings.warn("a warning is not ignored", UserWarning, stacklevel=1)


def test_every_ignored_warning_is_precise() -> None:
    filters = CONFIG["tool"]["pytest"]["ini_options"]["filterwarnings"]
    assert filters[0] == "error"
    for entry in filters[1:]:
        action, message, _category, module = ([*entry.split(":"), "", "", ""])[:4]
        assert action == "ignore" and (message or module), f"{entry!r} ignores a whole category"


def test_the_line_length_is_enforced() -> None:
    lint = CONFIG["tool"]["ruff"]["lint"]
    assert CONFIG["tool"]["ruff"]["line-length"] == 140
    assert "E" in lint["select"] and "E501" not in lint.get("ignore", [])


def test_the_tests_session_lints_first_and_measures_coverage() -> None:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    (tests,) = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "tests"]
    calls = sorted((node.lineno, ast.unparse(node.func)) for node in ast.walk(tests) if isinstance(node, ast.Call))
    names = [name for _, name in calls]
    assert "_lint" in names and "session.run" in names
    assert names.index("_lint") < names.index("session.run"), "lint runs before pytest, to fail fast"
    (lint,) = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "_lint"]
    text = ast.unparse(lint)
    assert "'ruff', 'check'" in text and "'ruff', 'format', '--check'" in text and "'mypy'" in text
    assert "--cov" in ast.unparse(tests)
    report = CONFIG["tool"]["coverage"]
    assert report["report"]["fail_under"] >= 80
    # Installed, non-editable distributions: measured by package name, never by a source path.
    assert all("/" not in source for source in report["run"]["source"])
