"""Core's own hook implementations, registered first and marked ``trylast`` so plugins override them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roadkit import hookimpl
from roadkit.api import Api
from roadkit.model import Cost
from roadkit.source import Source


@hookimpl(trylast=True)
def roadkit_resolve_cost(source: Source, cost: Cost) -> Any:
    return source.resolve_cost(cost)


@hookimpl(trylast=True)
def roadkit_cost_units() -> dict[str, tuple[str, float]]:
    from roadkit.units import CORE_UNITS

    return dict(CORE_UNITS)


@hookimpl(trylast=True)
def roadkit_apis() -> Sequence[Api]:
    from roadkit.apis.simple import SIMPLE_API

    return [SIMPLE_API]


@hookimpl(trylast=True)
def roadkit_commands() -> Sequence[Any]:
    from roadkit.cli import core_commands

    return core_commands()
