"""Core's own hook implementations of the routing model, registered first and marked ``trylast`` so plugins override them.

The simple API (:mod:`roadkit.apis.simple`) and the core commands (:mod:`roadkit.cli`) are default plugins too.
"""

from __future__ import annotations

from typing import Any

from roadkit import hookimpl
from roadkit.routing.model import Cost
from roadkit.routing.source import Source


@hookimpl(trylast=True)
def roadkit_resolve_cost(source: Source, cost: Cost) -> Any:
    return source.resolve_cost(cost)


@hookimpl(trylast=True)
def roadkit_cost_units() -> dict[str, tuple[str, float]]:
    from roadkit.routing.units import CORE_UNITS

    return dict(CORE_UNITS)
