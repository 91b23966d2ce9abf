"""The native OSRM API's source protocol: what a source answers for the OSRM plugin's ``osrm/1.0.0`` API to serve it.

The OSRM plugin serves the API; a source of any kind answers it by implementing :class:`NativeSource`
(the OSRM and Valhalla sources do)::

    async def native(self, request: NativeRequest) -> NativeAnswer

``request.params`` holds the options already parsed as osrm-routed parses them (keys named as in
osrm-bindings); ``request.path`` is the URL osrm-routed would receive, ``/{service}/v{version}/{profile}/{query}``
(``profile`` is the name the client used, ``cost`` the resource's cost it chose), so that a source
forwarding to a remote osrm-routed sends ``/{service}/v1/{its profile}/{request.query}`` (the query is
as osrm-routed's parser received it: URI-decoded) and returns the server's status and body unchanged.
Limits of the resource, narrowed by the source's own (its ``native_limits``), are in ``request.limits``;
:meth:`NativeLimits.exceeded` applies them the way osrm-routed does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import attrs

from roadkit.routing.model import Cost

__all__ = ["JSON_TYPE", "NativeAnswer", "NativeLimits", "NativeRequest", "NativeSource", "valid_coordinate"]

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
    #: osrm-routed's default is unlimited; a match's work grows steeply with its radiuses (measured on
    #: Monaco, 100 points: 0.07 s at 30 m, 0.5 s at 50 m, 30 s at 100 m), so roadkit bounds them.
    max_matching_radius: float = 50.0

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
        """osrm-routed's ``(code, message)`` for a request past these limits, as its engine words them, else None."""
        return _exceeded(service, params, self)


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
    """A source that answers native OSRM requests: a source kind declares it by subclassing it beside :class:`Source`."""

    #: The services of the native API this source answers (``route``, ``nearest``, ``table``...).
    native_services: ClassVar[tuple[str, ...]]

    @property
    def native_bbox(self) -> tuple[float, float, float, float] | None:
        """None, or the box ``(xmin, ymin, xmax, ymax)`` in WGS 84 outside which the source refuses a
        coordinate with osrm-routed's NoSegment before asking its engine (the API's document says so)."""
        return None

    @property
    def native_limits(self) -> Mapping[str, int]:
        """The source's own limits (a :class:`NativeLimits` field name -> its largest value), which narrow the resource's."""
        return {}

    async def native(self, request: NativeRequest) -> NativeAnswer:
        """The answer osrm-routed would give to ``request`` on this source's data."""
        ...


def _exceeded(service: str, params: dict[str, Any], limits: NativeLimits) -> tuple[str, str] | None:
    """``(code, message)`` when the request exceeds a limit, as osrm-routed's engine words it."""
    n = len(params["coordinates"])
    if service == "route":
        if 0 < limits.max_viaroute_size < n:
            return "TooBig", f"Number of entries {n} is higher than current maximum ({limits.max_viaroute_size})"
        if limits.max_alternatives >= 0 and params.get("number_of_alternatives", 0) > limits.max_alternatives:
            return "TooBig", f"Requested number of alternatives is higher than current maximum ({limits.max_alternatives})"
    elif service == "table":
        if not all(valid_coordinate(lon, lat) for lon, lat in params["coordinates"]):
            return "InvalidOptions", "Coordinates are invalid"
        sources = len(params.get("sources") or ()) or n
        destinations = len(params.get("destinations") or ()) or n
        if limits.max_table_size > 0 and sources * destinations > limits.max_table_size**2:
            return "TooBig", "Too many table coordinates"
    elif service == "trip":
        # a one-way trip needs a fixed start or end (osrm-routed checks this first)
        if not params.get("roundtrip", True) and params.get("source") != "first" and params.get("destination") != "last":
            return "NotImplemented", "This request is not supported"
        if 0 < limits.max_trip_size < n:
            return "TooBig", "Too many trip coordinates"
    elif service == "match":
        if 0 < limits.max_matching_size < n:
            return "TooBig", "Too many trace coordinates"
        if limits.max_matching_radius > 0 and any(r is not None and r > limits.max_matching_radius for r in params.get("radiuses") or ()):
            return "TooBig", "Radius search size is too large for map matching."
    elif service == "nearest":
        # osrm-routed's order: results, then coordinates' validity, then their number
        number = params.get("number_of_results", 1)
        if 0 < limits.max_nearest_size < number:
            return "TooBig", f"Number of results {number} is higher than current maximum ({limits.max_nearest_size})"
        if not all(valid_coordinate(lon, lat) for lon, lat in params["coordinates"]):
            return "InvalidOptions", "Coordinates are invalid"
        if 0 < limits.max_nearest_locations < n:
            return "TooBig", f"Number of coordinates {n} is higher than current maximum ({limits.max_nearest_locations})"
    return None


def valid_coordinate(lon: float, lat: float) -> bool:
    """OSRM's ``Coordinate::IsValid`` on its fixed-point values."""
    x, y = _fixed(lon), _fixed(lat)
    return -180_000_000 <= x <= 180_000_000 and -90_000_000 <= y <= 90_000_000


def _fixed(value: float) -> int:
    # std::lround: halves away from zero
    scaled = value * 1_000_000
    return int(scaled + 0.5) if scaled >= 0 else -int(-scaled + 0.5)
