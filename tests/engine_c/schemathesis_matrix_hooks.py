"""schemathesis hooks of the pgRouting simple API's run: a schema-valid matrix is refused only for a point far from roads.

The document states the box of the points, not where the roads are: a point of the Monaco box out at
sea, farther than the source's ``search.snap_radius`` from every road, is a 400 ``point_not_snapped``
naming its parameter and index (a route answers 404 there). The run lets 400s of ``/matrix`` through
``positive_data_acceptance``; the check below fails on any other refusal.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis


@schemathesis.check
def matrix_refusals_are_points_far_from_roads(ctx: Any, response: Any, case: Any) -> bool | None:
    """A schema-valid matrix refused (400) only because one of its points has no road near enough."""
    if case.meta is None or not case.meta.generation.mode.is_positive or response.status_code != 400:
        return None
    if not case.operation.path.endswith("/matrix"):
        return None
    error = json.loads(response.content).get("error", {})
    if error.get("errorType") == "point_not_snapped":
        return None
    raise AssertionError(f"a schema-valid matrix was refused for something the document states: {error}")
