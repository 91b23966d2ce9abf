"""A route computed on the resource's engine and written in the OGC Route Exchange Model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from shapely import LineString, MultiPolygon, Point, Polygon, make_valid

from roadkit.apis.ogcapi_routes.definition import Definition, NotRoutable
from roadkit.apis.ogcapi_routes.offer import Offer
from roadkit.errors import NoPathFound, ParameterInvalid
from roadkit.routing.model import Cost, RouteRequest, Step, Vehicle

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
    areas = make_valid(MultiPolygon([Polygon(ring) for ring in definition.obstacles])) if definition.obstacles else None
    for index, waypoint in enumerate(definition.waypoints):
        if areas is not None and Point(waypoint).intersects(areas):
            raise NotRoutable(f"waypoint {index} is inside an obstacle: no route avoids it")
    resource = offer.resource
    source = resource.source_for_route(definition.mode, definition.preference)
    operation = resource.operation("route")
    attributes = tuple(
        a for a in ("name", "maxspeed") if "waysAttributes" in operation.parameters and a in _values(operation["waysAttributes"])
    )
    moment = definition.departure
    if moment is None and offer.zone is not None:
        moment = began.replace(microsecond=0)  # the time class's default: an immediate departure
    local = None
    if moment is not None and offer.zone is not None:
        first, last = source.date_time_years
        try:  # the network's time of 9999-12-31T23:00Z is past the last date Python writes
            local = local_departure(moment, offer.zone)
        except OverflowError:
            local = None
        if local is None or not first <= local.year <= last:
            raise NotRoutable(f"inputs.when.value.timestamp: the engine reads years from {first} to {last}")
    project = service.projections.transform
    request = RouteRequest(
        points=tuple(project(list(definition.waypoints), WGS84, source.projection)),
        cost=Cost(definition.mode, definition.preference),
        steps=True,
        ways_attributes=attributes,
        date_time=local,
        arrive_by=definition.arrival,
        avoid=tuple(tuple(project(list(ring), WGS84, source.projection)) for ring in definition.obstacles),
        vehicle=None if definition.height is None and definition.weight is None else Vehicle(definition.height, definition.weight),
    )
    try:
        result = await source.route(request)
    except (ParameterInvalid, NoPathFound) as exc:
        # The definition was valid: a point the engine can't snap, no path, a limit of the engine (its
        # message names its own parameter) is a route the resource can't compute.
        raise NotRoutable(exc.message) from None
    line = [[round(x, 7), round(y, 7)] for x, y in project(result.geometry, source.projection, WGS84)]
    # The engine's word is not taken for it: a route that still crosses an obstacle is no answer.
    if areas is not None and len(line) > 1 and LineString(line).intersects(areas):
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
    # The engine left out every way whose limit is below the vehicle's: what it guarantees is the request's
    # own height and weight (a way without a known limit may be on the route, so no larger value is known).
    if definition.height is not None:
        overview["maxHeight_m"] = definition.height
    if definition.weight is not None:
        overview["maxWeight_t"] = definition.weight
    if definition.obstacles:
        overview["obstacles"] = "avoided: the route crosses no obstacle polygon"
    overview["processingTime"] = began.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    start: dict[str, Any] = {"featureType": "start"}
    end_point: dict[str, Any] = {"featureType": "end"}
    if moment is not None:
        leaves = moment.timestamp() - (overview["duration_s"] if definition.arrival else 0)
        try:
            start["timestamp"], end_point["timestamp"] = _utc(leaves), _utc(leaves + overview["duration_s"])
        except (OverflowError, ValueError):  # a route that leaves before year 1 or arrives after 9999
            raise NotRoutable("inputs.when.value.timestamp: the route's times are past the last date an answer can hold") from None
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
    every = [*line, *(s["geometry"]["coordinates"] for s in segments)]
    document["bbox"] = [min(p[0] for p in every), min(p[1] for p in every), max(p[0] for p in every), max(p[1] for p in every)]
    document["features"] = numbered
    return document


def _utc(seconds: float) -> str:
    """A POSIX time as RFC 3339 writes it in UTC (time zone Z)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _values(parameter: Any) -> tuple[str, ...]:
    return tuple(getattr(parameter, "values", ()))
