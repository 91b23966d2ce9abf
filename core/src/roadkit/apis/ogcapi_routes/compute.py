"""A route computed on the resource's engine and written in the OGC Route Exchange Model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from shapely import LineString, MultiPolygon, Polygon, make_valid

from roadkit.apis.ogcapi_routes.definition import Definition, NotRoutable
from roadkit.apis.ogcapi_routes.offer import Offer
from roadkit.errors import NoPathFound, ParameterInvalid
from roadkit.routing.model import Cost, RouteRequest, Step

if TYPE_CHECKING:
    from roadkit.web.view import ServiceView

WGS84 = "EPSG:4326"


def _instruction(step: Step) -> str:
    modifier = str(step.instruction.get("modifier", ""))
    if "left" in modifier:
        return "left"
    if "right" in modifier:
        return "right"
    return "continue"


def local_departure(departure: datetime, zone: ZoneInfo) -> datetime:
    """A UTC departure as the engine reads it: the network's wall-clock time, to the minute."""
    return departure.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0)


def _speed_limit(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    if isinstance(value, str) and value.strip().isdigit():
        return float(value.strip())
    return None


async def compute(service: ServiceView, offer: Offer, definition: Definition) -> dict[str, Any]:
    """The route of ``definition`` as a Route Exchange Model document (a GeoJSON FeatureCollection)."""
    began = datetime.now(UTC)
    xmin, ymin, xmax, ymax = offer.bbox
    for index, (x, y) in enumerate(definition.waypoints):
        if not (xmin <= x <= xmax and ymin <= y <= ymax):
            raise NotRoutable(f"waypoint {index} is outside the resource's area ({xmin:g},{ymin:g},{xmax:g},{ymax:g})")
    resource = offer.resource
    source = resource.source_for_route(definition.mode, definition.preference)
    operation = resource.operation("route")
    attributes = tuple(
        a for a in ("name", "maxspeed") if "waysAttributes" in operation.parameters and a in _values(operation["waysAttributes"])
    )
    local = None
    if definition.departure is not None and offer.zone is not None:
        local = local_departure(definition.departure, offer.zone)
        first, last = source.date_time_years
        if not first <= local.year <= last:
            raise NotRoutable(f"inputs.when.value.timestamp: the engine reads years from {first} to {last}")
    project = service.projections.transform
    request = RouteRequest(
        points=tuple(project(list(definition.waypoints), WGS84, source.projection)),
        cost=Cost(definition.mode, definition.preference),
        steps=True,
        ways_attributes=attributes,
        date_time=local,
        avoid=tuple(tuple(project(list(ring), WGS84, source.projection)) for ring in definition.obstacles),
    )
    try:
        result = await source.route(request)
    except (ParameterInvalid, NoPathFound) as exc:
        # The definition was valid: a point the engine can't snap, no path, a limit of the engine (its
        # message names its own parameter) is a route the resource can't compute.
        raise NotRoutable(exc.message) from None
    line = [[round(x, 7), round(y, 7)] for x, y in project(result.geometry, source.projection, WGS84)]
    if definition.obstacles and len(line) > 1:
        # The engine's word is not taken for it: a route that still crosses an obstacle is no answer.
        areas = make_valid(MultiPolygon([Polygon(ring) for ring in definition.obstacles]))
        if LineString(line).intersects(areas):
            raise NotRoutable("no route avoids the obstacles")
    if len(line) < 2:
        line = line * 2 if line else [[*definition.waypoints[0]], [*definition.waypoints[-1]]]
    segments: list[dict[str, Any]] = []
    for portion in result.portions:
        for step in portion.steps:
            (end,) = project([step.geometry[-1]], source.projection, WGS84) if step.geometry else [tuple(line[-1])]
            properties: dict[str, Any] = {
                "featureType": "segment",
                "length_m": round(step.distance, 1),
                "duration_s": round(step.duration, 1),
            }
            name = step.attributes.get("name")
            if isinstance(name, str) and name:
                properties["roadName"] = name
            properties["instructions"] = _instruction(step)
            if (limit := _speed_limit(step.attributes.get("maxspeed"))) is not None:
                properties["speedLimit"], properties["speedLimitUnit"] = limit, "kmph"
            segments.append(
                {
                    "type": "Feature",
                    "geometry": {"type": "Point", "coordinates": [round(end[0], 7), round(end[1], 7)]},
                    "properties": properties,
                }
            )
    overview: dict[str, Any] = {"featureType": "overview"}
    if definition.name is not None:
        overview["name"] = definition.name
    overview["length_m"] = round(sum(s["properties"]["length_m"] for s in segments), 1) if segments else round(result.distance, 1)
    overview["duration_s"] = round(sum(s["properties"]["duration_s"] for s in segments), 1) if segments else round(result.duration, 1)
    overview["processingTime"] = began.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    start: dict[str, Any] = {"featureType": "start"}
    end_point: dict[str, Any] = {"featureType": "end"}
    if definition.departure is not None:
        start["timestamp"] = definition.departure.isoformat().replace("+00:00", "Z")
        arrival = datetime.fromtimestamp(definition.departure.timestamp() + overview["duration_s"], UTC)
        end_point["timestamp"] = arrival.isoformat().replace("+00:00", "Z")
    features = [
        {"type": "Feature", "geometry": {"type": "LineString", "coordinates": line}, "properties": overview},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": line[0]}, "properties": start},
        *segments,
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": line[-1]}, "properties": end_point},
    ]
    numbered = [
        {"type": "Feature", "id": number, "geometry": f["geometry"], "properties": f["properties"]} for number, f in enumerate(features, 1)
    ]
    document: dict[str, Any] = {"type": "FeatureCollection"}
    if definition.name is not None:
        document["name"] = definition.name
    document["features"] = numbered
    return document


def _values(parameter: Any) -> tuple[str, ...]:
    return tuple(getattr(parameter, "values", ()))
