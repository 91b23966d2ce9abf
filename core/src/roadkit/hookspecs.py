"""Every roadkit hook. Plugins implement them with ``from roadkit import hookimpl``.

Hooks run at assembly time (start-up, configuration, app building), never per request:
request-time work is the async methods of :class:`roadkit.routing.source.Source`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

if TYPE_CHECKING:
    # The names of the plugin contract (roadkit.contract), from the layers that define them.
    from roadkit.routing.model import Cost
    from roadkit.routing.source import Source
    from roadkit.web.api import Api
    from roadkit.web.view import ServiceView

hookspec = pluggy.HookspecMarker("roadkit")


@attrs.frozen
class Command:
    """A sub-command of ``roadkit``: ``configure`` adds its arguments, ``run`` returns the exit status."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


@hookspec
def roadkit_source_kinds() -> Sequence[type[Source]]:  # type: ignore[empty-body]
    """Return the Source classes this plugin provides (each names its kind in ``Source.kind``).

    Called once when the plugin manager's source registry is built. Two plugins providing the
    same kind is a start-up error naming both distributions.
    """


@hookspec(firstresult=True)
def roadkit_resolve_cost(source: Source, cost: Cost) -> Any:
    """Return the engine setting for ``cost`` on ``source`` (an OSRM dataset, a Valhalla costing...).

    Called when a source connects, once per cost it declares. The first non-None answer wins; core's
    default (``trylast``) asks ``source.resolve_cost(cost)``, so a plugin can override how a
    third-party source resolves its costs without subclassing it.
    """


@hookspec
def roadkit_cost_units() -> dict[str, tuple[str, float]]:  # type: ignore[empty-body]
    """Return the units this plugin knows: ``{unit: (cost_type, factor to the engine unit)}``.

    The engine units are seconds for ``time`` and meters for ``distance``. Called once when a
    service is assembled; the merged table converts isochrone cost values and route totals.
    Core's default gives hour/minute/second and meter/kilometer; a plugin may add units (``mile``).
    """


@hookspec
def roadkit_capabilities(service: ServiceView, capabilities: dict[str, Any]) -> None:
    """Add to the simple API's GetCapabilities document, in place (parameters, profiles, fields).

    Called once when the simple API is built for a service, after core has filled info, provider
    (with the INSPIRE fields language/keywords/contact), api, operations and resources.
    """


@hookspec
def roadkit_apis() -> Sequence[Api]:  # type: ignore[empty-body]
    """Return the APIs this plugin serves (name, version, routes, OpenAPI document).

    Called when a service builds its app; the service mounts those its configuration lists.
    Core contributes ``simple/1.0.0`` through its default plugin.
    """


@hookspec
def roadkit_commands() -> Sequence[Command]:  # type: ignore[empty-body]
    """Return sub-commands of the ``roadkit`` command (e.g. an engine's data preparation).

    Called once when the command line is parsed.
    """
