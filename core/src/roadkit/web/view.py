"""What a plugin sees of a running service: a read-only view, so that plugin-facing code needs no serving code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from roadkit.config.models import ServiceConfig
    from roadkit.routing.projections import ProjectionRegistry
    from roadkit.routing.resources import Resource
    from roadkit.routing.source import Source
    from roadkit.routing.units import UnitRegistry


class ServiceView(Protocol):
    """What a plugin may read of a running service (the ``service`` its API routes and hooks receive).

    Read-only: a plugin never replaces a service's sources or resources. ``state`` is ``ready`` once
    the service serves requests.
    """

    @property
    def id(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def config(self) -> ServiceConfig: ...

    @property
    def sources(self) -> Mapping[str, Source]: ...

    @property
    def resources(self) -> Mapping[str, Resource]: ...

    @property
    def projections(self) -> ProjectionRegistry: ...

    @property
    def units(self) -> UnitRegistry:
        """Every unit the plugins know (time and distance units of requests and answers)."""
        ...

    def resource(self, rid: str) -> Resource:
        """The resource with this id (a 400 naming ``resource`` when unknown)."""
        ...

    def extend_capabilities(self, capabilities: dict[str, Any]) -> None:
        """Let every plugin add to a GetCapabilities document of this service, in place."""
        ...
