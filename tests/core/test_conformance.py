"""Specification points checked line by line: error logging levels, required parameters."""

from __future__ import annotations

import logging

import pytest

from roadkit.apis.simple.capabilities import _parameter
from roadkit.errors import EngineError, EngineTimeout, NoIsochroneFound, NoPathFound, SourceUnavailable
from roadkit.routing.operations import OPERATIONS
from roadkit.web.api import error_response


@pytest.mark.parametrize(
    "error", [EngineError("OSRM could not answer"), EngineTimeout("too slow"), SourceUnavailable("red"), NoPathFound(), NoIsochroneFound()]
)
def test_identified_errors_are_logged_at_debug_whatever_their_status(error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="roadkit"):
        response = error_response(error)
    assert response.status_code >= 400
    records = [r for r in caplog.records if r.name.startswith("roadkit")]
    assert records and all(r.levelno == logging.DEBUG for r in records), [(r.levelname, r.getMessage()) for r in records]


def test_unidentified_errors_are_still_logged_as_errors(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="roadkit"):
        assert error_response(ZeroDivisionError("bug")).status_code == 500
    assert [r.levelno for r in caplog.records if r.name.startswith("roadkit")] == [logging.ERROR]


def test_cost_type_is_advertised_as_optional_since_a_default_applies() -> None:
    spec = next(s for s in OPERATIONS["isochrone"] if s.name == "costType")
    entry = _parameter(spec)
    assert entry["required"] == "false" and entry["default"] == "true"  # Road2 types both as strings
    assert [s.name for s in OPERATIONS["isochrone"] if s.required] == ["resource", "point", "costValue"]
