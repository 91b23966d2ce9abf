"""How a source answers native OSRM requests: the interface the native API calls.

A source kind that can answer the native OSRM API implements::

    async def native(self, request: NativeRequest) -> NativeAnswer

``request.params`` holds the options already parsed as osrm-routed parses them (keys named as in
osrm-bindings); ``request.path`` is the URL osrm-routed would receive, ``/{service}/v{version}/{profile}/{query}``
(``profile`` is the name the client used, ``cost`` the resource's cost it chose), so that a source
forwarding to a remote osrm-routed sends ``/{service}/v1/{its profile}/{request.query}`` (the query is
as osrm-routed's parser received it: URI-decoded) and returns the server's status and body unchanged.
Limits of the resource, narrowed by the source's own (its ``native_limits``), are in ``request.limits``;
:meth:`NativeLimits.exceeded` applies them the way osrm-routed does.

Two more attributes, read with ``getattr`` so that another engine's plugin need not import this one:
``native_services`` (the services the source answers) and ``native_bbox`` (None, or the box
``(xmin, ymin, xmax, ymax)`` in WGS 84 outside which the source refuses a coordinate with osrm-routed's
NoSegment before asking its engine: the document then describes coordinates inside it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from roadkit.contract import Cost

JSON_TYPE = "application/json; charset=UTF-8"


@attrs.frozen
class NativeLimits:
    """osrm-routed's request limits (its command-line options), per resource; -1 means unlimited."""

    max_viaroute_size: int = 500
    max_trip_size: int = 100
    max_table_size: int = 100
    max_matching_size: int = 100
    max_nearest_size: int = 100
    max_nearest_locations: int = 10
    max_alternatives: int = 3
    max_matching_radius: float = -1.0

    def narrowed(self, most: Mapping[str, int]) -> NativeLimits:
        """These limits, each of ``most`` (a source's own: limit name -> its largest value) lowered to it."""
        if not most:  # an OSRM source: the resource's limits as they are (no copy per request)
            return self
        changes: dict[str, Any] = {}
        for name, value in most.items():
            current = getattr(self, name)
            # -1 is unlimited everywhere; 0 too, but for max_alternatives (0: none)
            unlimited = current < 0 if name == "max_alternatives" else current <= 0
            changes[name] = value if unlimited else min(current, value)
        return attrs.evolve(self, **changes)

    def exceeded(self, service: str, params: dict[str, Any]) -> tuple[str, str] | None:
        """osrm-routed's ``(code, message)`` for a request past these limits, else None.

        For the sources of other engines answering native requests, which check the limits themselves
        (they get them as ``request.limits``, without importing this plugin).
        """
        from roadkit_osrm.native.checks import check_limits

        return check_limits(service, params, self)


@attrs.frozen
class NativeRequest:
    """A parsed native request: the service, the raw OSRM query and its parsed options."""

    service: str
    version: int
    profile: str
    query: str
    params: dict[str, Any]
    cost: Cost
    limits: NativeLimits = NativeLimits()
    #: the JSON body of a POST request (osrm-routed 26 answers route, match, table and nearest by POST
    #: to ``/{service}/v1/{profile}``); None for a GET. A forwarding source POSTs it unchanged.
    body: bytes | None = None


@attrs.frozen
class NativeAnswer:
    """What the client receives: status, body bytes, content type (osrm-routed's, unchanged)."""

    status: int
    body: bytes
    content_type: str = JSON_TYPE


@runtime_checkable
class NativeSource(Protocol):
    """A source that answers native OSRM requests."""

    async def native(self, request: NativeRequest) -> NativeAnswer:
        """The answer osrm-routed would give to ``request`` on this source's data."""
        ...
