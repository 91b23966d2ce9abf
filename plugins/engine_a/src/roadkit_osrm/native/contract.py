"""How a source answers native OSRM requests: the interface the native API calls.

A source kind that can answer the native OSRM API implements::

    async def native(self, request: NativeRequest) -> NativeAnswer

``request.params`` holds the options already parsed as osrm-routed parses them (keys named as in
osrm-bindings); ``request.path`` is the URL osrm-routed would receive, ``/{service}/v{version}/{profile}/{query}``
(``profile`` is the name the client used, ``cost`` the resource's cost it chose), so that a source
forwarding to a remote osrm-routed sends ``/{service}/v1/{its profile}/{request.query}`` (the query is
as osrm-routed's parser received it: URI-decoded) and returns the server's status and body unchanged.
Limits of the resource are in ``request.limits``;
:func:`roadkit_osrm.native.limits.check_limits` applies them the way osrm-routed does.
"""

from __future__ import annotations

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
