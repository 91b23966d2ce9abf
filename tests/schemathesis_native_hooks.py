"""schemathesis hooks of the native OSRM API's run: which refusals of a schema-valid request are allowed.

The document states every syntax, id, enumeration and limit the API checks, so a schema-valid request
is never refused for one of them. What OpenAPI can't state, osrm-routed checks on the whole request:
the number of bearings, radiuses, hints, approaches or timestamps must equal the number of coordinates
(each is its own query parameter, the coordinates are in the path), indices (sources, destinations,
waypoints) must point at coordinates, a trace must match the roads, an exclude class must be one the
dataset's profile declares, a radius or bearing may leave no road to snap to. Without a radius or a bearing
every coordinate the document allows snaps (osrm-routed snaps anywhere but in a trace, where each point snaps
within its GPS precision; a Valhalla source refuses a point outside its area, and the document describes that
area only): NoSegment is then a failure. The run lets these 400s
through ``positive_data_acceptance`` (``expected-statuses``); the check below fails on any other. One more:
JSON Schema's integers include ``18.0``, which osrm-routed reads as a double and refuses where it wants an
integer (roadkit answers as it does).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

import schemathesis

#: osrm-routed's answers when nothing connects the points.
NOTHING_FOUND = frozenset({"NoRoute", "NoMatch", "NoTrips", "NoTable"})
#: Options that may leave a coordinate no road to snap to (osrm-routed's NoSegment).
SNAP_LIMITS = ("radiuses", "bearings")
#: osrm-routed's messages for the whole-request rules above, and for two the regular expressions can't
#: state either: timestamps that increase, a one-way trip that fixes its start or its end.
WHOLE_REQUEST_RULES = (
    re.compile(r"^Number of elements in \w+ size \d+ does not match coordinate size \d+$"),
    re.compile(r"^Exclude flag combination is not supported\.$"),
    re.compile(r"^First and last coordinates must be specified as waypoints\.$"),
    re.compile(r"^Waypoints must be supplied in increasing order\.$"),
    re.compile(r"^Timestamps need to be monotonically increasing\.$"),
    re.compile(r"^This request is not supported$"),
)
#: Options holding indices of coordinates, and options with one entry per coordinate: one index past the
#: last, or (match) approaches of another number than the coordinates, is InvalidOptions with an empty message.
INDEX_OPTIONS = ("sources", "destinations", "waypoints")
PER_COORDINATE = ("bearings", "radiuses", "hints", "approaches", "timestamps")


def _integral_float(value: Any) -> bool:
    """Whether a JSON value holds a number like ``18.0``: JSON Schema's integer, which osrm-routed reads as a double."""
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_integral_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_integral_float(v) for v in value)
    return False


def _entries(value: Any) -> int | None:
    """How many entries an option holds (a list in a body, ';'-separated text in a query)."""
    if isinstance(value, list):
        return len(value)
    return value.count(";") + 1 if isinstance(value, str) else None


def _options(case: Any) -> dict[str, Any]:
    """The options of a request: its query, or its JSON body."""
    return {**(case.query or {}), **(case.body if isinstance(case.body, dict) else {})}


def _limits_snapping(case: Any) -> bool:
    """Whether the request gives a radius or a bearing for some coordinate."""
    options = _options(case)
    for name in SNAP_LIMITS:
        value = options.get(name)
        entries = value if isinstance(value, list) else value.split(";") if isinstance(value, str) else []
        if any(entry not in (None, "", "unlimited") for entry in entries):
            return True
    return False


def _index_or_count_rule(case: Any) -> bool:
    """Whether the request has indices, or per-coordinate options whose number differs from the coordinates'."""
    options = _options(case)
    if any(name in options for name in INDEX_OPTIONS):
        return True
    # path parameters are kept percent-encoded
    path = unquote((case.path_parameters or {}).get("coordinates", ""))
    coordinates = case.body.get("coordinates") if isinstance(case.body, dict) else path
    count = _entries(coordinates) if not (isinstance(coordinates, str) and coordinates.startswith("polyline")) else None
    return count is None or any(_entries(options[name]) != count for name in PER_COORDINATE if name in options)


@schemathesis.check
def native_refusals_are_whole_request_rules(ctx: Any, response: Any, case: Any) -> bool | None:
    """A schema-valid native request refused (400) only for a rule that spans several parameters."""
    if case.meta is None or not case.meta.generation.mode.is_positive or response.status_code != 400:
        return None
    if "/v1/" not in case.operation.path:
        return None
    answer = json.loads(response.content)
    code, message = answer.get("code"), answer.get("message", "")
    if code in NOTHING_FOUND or any(rule.search(message) for rule in WHOLE_REQUEST_RULES):
        return None
    if code == "NoSegment" and (_limits_snapping(case) or "/match/" in case.operation.path):
        return None  # match snaps each point within its GPS precision (5 m unless radiuses say otherwise)
    if code == "InvalidOptions" and message == "" and _index_or_count_rule(case):
        return None
    if code == "InvalidQuery" and "integer" in message and _integral_float(case.body):
        return None
    raise AssertionError(f"a schema-valid request was refused for something the document states: {code}: {message}")
