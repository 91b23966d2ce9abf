"""What one resource offers through the OGC API – Routes: preferences, modes, waypoints, conformance classes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

from roadkit.routing.parameters import EnumParameter, PointParameter

if TYPE_CHECKING:
    from roadkit.routing.resources import Resource

SPEC = "http://www.opengis.net/spec/ogcapi-routes-1/1.0.0-draft.1/conf/"
COMMON = (
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/landing-page",
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/json",
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/oas30",
)
REM = "http://www.opengis.net/spec/rem-1/1.0.0-draft.1/conf/rem"
#: The standard's preferences: the optimizations of roadkit's resources that have one.
PREFERENCES = ("fastest", "shortest")
#: The most waypoints of a request (the intermediate-waypoints class asks for at least 5).
MAX_WAYPOINTS = 25
#: The most obstacle polygons of a request, and positions of each polygon's outer ring.
MAX_OBSTACLES = 20
MAX_RING = 200
#: The vehicle dimensions of the standard (the height and weight classes), as a source's ``vehicle_limits`` names them.
VEHICLE_DIMENSIONS = ("height", "weight")


@attrs.frozen
class Offer:
    """A resource's routing seen through the standard."""

    resource: Resource
    preferences: tuple[str, ...]
    modes: tuple[str, ...]
    bbox: tuple[float, float, float, float]
    projection: str
    #: The network's time zone when its engine reads a departure time (the time class), else None.
    zone: ZoneInfo | None

    @property
    def time(self) -> bool:
        return self.zone is not None

    @property
    def obstacles(self) -> bool:
        """Whether every engine of the resource's routes avoids areas (the obstacles class)."""
        return all(source.avoids_areas for source in self.resource.route_index.values())

    @property
    def vehicle_limits(self) -> dict[str, float]:
        """The vehicle dimensions every engine of the resource's routes keeps within (the height and weight
        classes), each with the largest value all of them read."""
        sources = list(self.resource.route_index.values())
        limits = {}
        for dimension in VEHICLE_DIMENSIONS:
            values = [source.vehicle_limits.get(dimension) for source in sources]
            if sources and all(value is not None for value in values):
                limits[dimension] = min(value for value in values if value is not None)
        return limits

    @property
    def id(self) -> str:
        return self.resource.id

    @property
    def title(self) -> str:
        return self.resource.config.description or self.resource.id

    def conformance(self) -> dict[str, Any]:
        extra = [*self.vehicle_limits, *(name for name, offered in (("obstacles", self.obstacles), ("time", self.time)) if offered)]
        classes = ["core", "mode", "intermediate-waypoints", *extra, "manage-routes"]
        return {
            "conformsTo": [*COMMON, *(SPEC + c for c in classes), REM],
            "properties": {
                SPEC + "core": {"preferences": list(self.preferences)},
                SPEC + "mode": {"modes": list(self.modes)},
            },
        }


def _ordered(parameter: EnumParameter, keep: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The parameter's values, its default first (the standard's default is the first one listed)."""
    values = [v for v in parameter.values if keep is None or v in keep]
    if parameter.default_value in values:
        values.remove(parameter.default_value)
        values.insert(0, parameter.default_value)
    return tuple(values)


def offer_of(resource: Resource) -> Offer | None:
    """What the resource offers, None when it computes no route with a standard preference."""
    operation = resource.operations.get("route")
    if operation is None:
        return None
    profile, optimization, start = operation["profile"], operation["optimization"], operation["start"]
    if not isinstance(profile, EnumParameter) or not isinstance(optimization, EnumParameter) or not isinstance(start, PointParameter):
        return None
    preferences = _ordered(optimization, PREFERENCES)
    pairs = resource.route_index
    modes = tuple(p for p in _ordered(profile) if any((p, o) in pairs for o in preferences))
    if not preferences or not modes:
        return None
    if start.projection != "EPSG:4326":
        return None  # the standard's waypoints are WGS 84: a resource whose area is given otherwise is not offered
    settings = resource.api_settings.get("ogcapi-routes")
    zone = settings.zone() if isinstance(settings, Settings) and "date_time" in operation.parameters else None
    return Offer(resource, preferences, modes, start.bbox, start.projection, zone)


@attrs.frozen
class Settings:
    """A resource's ``[apis.ogcapi-routes]`` table."""

    #: The IANA time zone of the network (``Europe/Monaco``): a request's UTC time becomes the engine's local time.
    timezone: str | None = None

    def zone(self) -> ZoneInfo | None:
        return None if self.timezone is None else ZoneInfo(self.timezone)


def parse_settings(table: Any, path: Any) -> Settings:
    """``[apis.ogcapi-routes]`` of a resource file: a known time zone, or an error naming the file and key."""
    from roadkit.config.convert import structure
    from roadkit.errors import ConfigurationError

    settings: Settings = structure(dict(table), Settings, path, prefix="apis.ogcapi-routes")
    if settings.timezone is not None:
        try:
            ZoneInfo(settings.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigurationError(
                [f"{path}: apis.ogcapi-routes.timezone: expected an IANA time zone, got {settings.timezone!r}"]
            ) from None
    return settings
