"""Write the fictitious Monaco demo bus feed (GTFS) next to this script.

The lines are invented for the roadkit example; their stops lie on real Monaco streets: each line
follows a Valhalla ``bus`` route between two ends and gets a stop about every 350 m along it.
Run it with a Valhalla configuration of road tiles built from ``../monaco.osm.pbf``::

    python examples/monaco/gtfs/generate.py path/to/valhalla.json

The output is deterministic, so the committed feed can be checked against a fresh run.
"""

from __future__ import annotations

import csv
import itertools
import math
import sys
from pathlib import Path

FEED = Path(__file__).resolve().parent / "monaco-demo-bus"
STOP_SPACING_M = 350.0
BUS_SPEED_MPS = 18 / 3.6
FIRST_DEPARTURE_MIN = 5 * 60
LAST_DEPARTURE_MIN = 23 * 60
HEADWAY_MIN = 10
DWELL_MIN = 0

# (route id, short name, long name, colour, start lon/lat, end lon/lat)
LINES = [
    ("R1", "1", "Fontvieille - Larvotto (fictitious)", "D62828", (7.4167, 43.7284), (7.4350, 43.7480)),
    ("R2", "2", "Monaco-Ville - Place de la Source (fictitious)", "1D4ED8", (7.4235, 43.7310), (7.4200, 43.7395)),
    ("R3", "3", "Jardin Exotique - Casino (fictitious)", "15803D", (7.4125, 43.7312), (7.4275, 43.7395)),
]


def _meters(a: tuple[float, float], b: tuple[float, float]) -> float:
    lat = math.radians((a[1] + b[1]) / 2)
    dx = math.radians(b[0] - a[0]) * math.cos(lat) * 6371008.8
    dy = math.radians(b[1] - a[1]) * 6371008.8
    return math.hypot(dx, dy)


def _stops_along(actor: object, start: tuple[float, float], end: tuple[float, float]) -> list[tuple[str, float, float]]:
    """(street name, lon, lat) every STOP_SPACING_M along the bus route from start to end."""
    answer = actor.route(  # type: ignore[attr-defined]
        {
            "locations": [{"lon": start[0], "lat": start[1]}, {"lon": end[0], "lat": end[1]}],
            "costing": "bus",
            "directions_options": {"format": "osrm"},
            "shape_format": "geojson",
        }
    )
    stops: list[tuple[str, float, float]] = []
    travelled, next_stop = 0.0, 0.0
    for step in answer["routes"][0]["legs"][0]["steps"]:
        coords = step["geometry"]["coordinates"]
        for a, b in itertools.pairwise(coords):
            if travelled >= next_stop and step["name"]:
                stops.append((step["name"], round(a[0], 6), round(a[1], 6)))
                next_stop = travelled + STOP_SPACING_M
            travelled += _meters(a, b)
    last = answer["routes"][0]["legs"][0]["steps"][-1]
    end_xy = last["geometry"]["coordinates"][-1]
    if _meters((stops[-1][1], stops[-1][2]), (end_xy[0], end_xy[1])) > STOP_SPACING_M / 3:
        stops.append((last["name"] or stops[-1][0], round(end_xy[0], 6), round(end_xy[1], 6)))
    return stops


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def _write(name: str, header: list[str], rows: list[list[object]]) -> None:
    with (FEED / name).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def main(config: str) -> int:
    import valhalla

    actor = valhalla.Actor(config)
    FEED.mkdir(exist_ok=True)
    stops: dict[tuple[float, float], list[object]] = {}
    names: dict[str, int] = {}
    routes, trips, stop_times = [], [], []
    for route_id, short, long_name, colour, start, end in LINES:
        routes.append([route_id, "DEMO", short, long_name, 3, colour, "FFFFFF"])
        line_stops = []
        for street, lon, lat in _stops_along(actor, start, end):
            if (lon, lat) not in stops:
                names[street] = names.get(street, 0) + 1
                label = street if names[street] == 1 else f"{street} {names[street]}"
                stops[(lon, lat)] = [f"S{len(stops) + 1:03d}", f"{label} (fictitious)", lat, lon]
            line_stops.append(stops[(lon, lat)])
        hops = [max(1, round(_meters((a[3], a[2]), (b[3], b[2])) / BUS_SPEED_MPS / 60)) for a, b in itertools.pairwise(line_stops)]
        for direction, ordered, times in ((0, line_stops, hops), (1, line_stops[::-1], hops[::-1])):
            for departure in range(FIRST_DEPARTURE_MIN, LAST_DEPARTURE_MIN + 1, HEADWAY_MIN):
                trip_id = f"{route_id}-{direction}-{_clock(departure)[:5].replace(':', '')}"
                trips.append([route_id, "EVERYDAY", trip_id, str(ordered[-1][1]).replace(" (fictitious)", ""), direction])
                clock = departure
                for seq, stop in enumerate(ordered):
                    stop_times.append([trip_id, _clock(clock), _clock(clock), stop[0], seq + 1])
                    if seq < len(times):
                        clock += times[seq] + DWELL_MIN
    _write(
        "agency.txt",
        ["agency_id", "agency_name", "agency_url", "agency_timezone", "agency_lang"],
        [["DEMO", "roadkit demo buses (fictitious)", "https://example.org/roadkit", "Europe/Monaco", "fr"]],
    )
    _write("stops.txt", ["stop_id", "stop_name", "stop_lat", "stop_lon"], list(stops.values()))
    _write(
        "routes.txt",
        ["route_id", "agency_id", "route_short_name", "route_long_name", "route_type", "route_color", "route_text_color"],
        routes,
    )
    _write("trips.txt", ["route_id", "service_id", "trip_id", "trip_headsign", "direction_id"], trips)
    _write("stop_times.txt", ["trip_id", "arrival_time", "departure_time", "stop_id", "stop_sequence"], stop_times)
    _write(
        "calendar.txt",
        ["service_id", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "start_date", "end_date"],
        [["EVERYDAY", 1, 1, 1, 1, 1, 1, 1, "20200101", "20391231"]],
    )
    _write(
        "feed_info.txt",
        ["feed_publisher_name", "feed_publisher_url", "feed_lang", "feed_start_date", "feed_end_date", "feed_version"],
        [["roadkit example (fictitious data)", "https://example.org/roadkit", "fr", "20200101", "20391231", "1"]],
    )
    print(f"{FEED}: {len(routes)} routes, {len(stops)} stops, {len(trips)} trips, {len(stop_times)} stop times")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
