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


def test_every_parameter_is_advertised_with_road2s_min_and_max() -> None:
    # The specification: "a parameter minimum may be 0"; Road2's rule: 0 for an optional parameter, 1 or more for a required one.
    entries = {op: {spec.name: _parameter(spec) for spec in OPERATIONS[op]} for op in ("route", "isochrone", "nearest")}
    for op, parameters in entries.items():
        for name, entry in parameters.items():
            assert entry["min"] == (1 if entry["required"] == "true" else 0) and entry["max"] >= max(entry["min"], 1), (op, name)
    route = entries["route"]
    bounds = {name: (route[name]["min"], route[name]["max"]) for name in route}
    assert {k: bounds[k] for k in ("resource", "profile", "optimization", "crs", "date_time")} == {
        "resource": (1, 1),
        "profile": (0, 1),
        "optimization": (0, 1),
        "crs": (0, 1),
        "date_time": (0, 1),
    }
    assert (bounds["intermediates"], bounds["waysAttributes"], bounds["constraints"]) == ((0, 10), (0, 10), (0, 3))
    assert route["intermediates"]["explode"] == "false" and route["intermediates"]["style"] == "pipeDelimited"  # Road2's string
    assert "explode" not in route["profile"]
