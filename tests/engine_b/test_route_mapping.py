"""The Valhalla source's routes, field by field, against Valhalla's full OSRM-format answer to the same request.

The source asks Valhalla for the least it needs (no narrative, polyline6 shapes). These tests send
the same request body as the source, but in the richest form (OSRM format with the narrative and
GeoJSON shapes, as roadkit asked before), to a direct Actor, read that answer with the plain
reading below, and require the source's response to be the same: the cheaper request and its
reading must not change a single field of a route, over seeded random routes of every profile,
with intermediates, exclusions, preferences and timetables.
"""

from __future__ import annotations

import json
import random
from datetime import datetime
from typing import Any

import pytest

from roadkit.errors import RoadkitError
from roadkit.routing.model import Constraint, Coord, Cost, RouteRequest, RouteResponse
from roadkit_valhalla import ValhallaSource, translate
from roadkit_valhalla.options import ValhallaCost

#: The resource's bbox (Monaco, the motorway above it, Cap-d'Ail, Beausoleil) and Monaco itself.
AROUND = (7.349, 43.71, 7.491, 43.77)
MONACO = (7.409, 43.725, 7.439, 43.751)
TUNNELS = Constraint("banned", "waytype", "=", "tunnel", field="exclude_tunnels")
NO_MOTORWAY = Constraint("banned", "waytype", "=", "autoroute", field="exclude_highways")
AVOID_MOTORWAY = Constraint("avoid", "roads", "=", "autoroute", field="exclude_highways", ratio=9.0)
PREFER_MOTORWAY = Constraint("prefer", "roads", "=", "autoroute", field="exclude_highways")
NO_FERRY = Constraint("banned", "waytype", "=", "bac", field="exclude_ferries")


def random_points(rng: random.Random, box: tuple[float, float, float, float], count: int) -> tuple[Coord, ...]:
    return tuple((round(rng.uniform(box[0], box[2]), 5), round(rng.uniform(box[1], box[3]), 5)) for _ in range(count))


def requests() -> list[tuple[str, RouteRequest]]:
    """Seeded random route requests: every profile, 2 to 4 points, constraints, timetables, with and without steps."""
    rng = random.Random(20261123)
    cases: list[tuple[str, RouteRequest]] = []
    kinds: list[tuple[str, Cost, tuple[float, float, float, float], tuple[Constraint, ...], datetime | None]] = [
        ("car", Cost("car", "fastest"), AROUND, (), None),
        ("car-shortest", Cost("car", "shortest"), AROUND, (), None),
        ("car-no-tunnel", Cost("car", "fastest"), AROUND, (TUNNELS,), None),
        ("car-no-motorway", Cost("car", "fastest"), AROUND, (NO_MOTORWAY,), None),
        ("car-avoid-motorway", Cost("car", "fastest"), AROUND, (AVOID_MOTORWAY,), None),
        ("car-prefer-motorway", Cost("car", "fastest"), AROUND, (PREFER_MOTORWAY,), None),
        ("pedestrian", Cost("pedestrian", "fastest"), MONACO, (), None),
        ("pedestrian-no-ferry", Cost("pedestrian", "shortest"), MONACO, (NO_FERRY,), None),
        ("multimodal", Cost("multimodal", "fastest"), AROUND, (), datetime(2026, 6, 15, 8, 0)),
        ("multimodal-night", Cost("multimodal", "fastest"), MONACO, (), datetime(2026, 6, 15, 2, 30)),
    ]
    for name, cost, box, constraints, when in kinds:
        for i in range(6):
            points = random_points(rng, box, 2 + i % 3)
            cases.append((f"{name}-{i}", RouteRequest(points, cost, steps=i != 5, constraints=constraints, date_time=when)))
    # Fontvieille → Larvotto on the demo bus line 1: walking, riding, walking again.
    bus = RouteRequest(((7.4167, 43.7284), (7.4350, 43.7480)), Cost("multimodal", "fastest"), date_time=datetime(2026, 6, 15, 8, 0))
    return [*cases, ("multimodal-bus", bus)]


def rich_body(source: ValhallaSource, request: RouteRequest) -> dict[str, Any]:
    """The source's own request body, asking for the full OSRM-format answer with GeoJSON shapes."""
    body = translate.route_body(request, source.setting(request.cost))
    body.pop("directions_type", None)
    if not request.steps:
        body["directions_type"] = "none"
    body["directions_options"] = {"format": "osrm"}
    body["shape_format"] = "geojson"
    return body


def _coords(geometry: dict[str, Any]) -> list[tuple[float, float]]:
    return [(c[0], c[1]) for c in geometry["coordinates"]]


def expected(answer: dict[str, Any], request: RouteRequest, multimodal: bool) -> dict[str, Any]:
    """Valhalla's OSRM-format GeoJSON answer read plainly into the fields of a roadkit route."""
    route = answer["routes"][0]
    waypoints = [tuple(w["location"]) for w in answer["waypoints"]]
    portions = []
    for i, leg in enumerate(route["legs"]):
        steps = []
        for step in leg["steps"] if request.steps else []:
            maneuver = step["maneuver"]
            instruction = {"type": maneuver["type"]}
            if maneuver.get("modifier"):
                instruction["modifier"] = maneuver["modifier"]
            if "exit" in maneuver:
                instruction["exit"] = int(maneuver["exit"])
            attributes = {"name": step.get("name", "")}
            if multimodal:
                attributes["mode"] = step.get("mode", "")
            steps.append((_coords(step["geometry"]), step["distance"], step["duration"], attributes, instruction))
        portions.append((waypoints[i], waypoints[i + 1], leg["distance"], leg["duration"], steps))
    return {
        "start": waypoints[0],
        "end": waypoints[-1],
        "geometry": _coords(route["geometry"]),
        "distance": route["distance"],
        "duration": route["duration"],
        "portions": portions,
    }


def observed(response: RouteResponse) -> dict[str, Any]:
    """The same fields of the source's response."""
    return {
        "start": tuple(response.start),
        "end": tuple(response.end),
        "geometry": [(c[0], c[1]) for c in response.geometry],
        "distance": response.distance,
        "duration": response.duration,
        "portions": [
            (
                tuple(p.start),
                tuple(p.end),
                p.distance,
                p.duration,
                [([(c[0], c[1]) for c in s.geometry], s.distance, s.duration, s.attributes, s.instruction) for s in p.steps],
            )
            for p in response.portions
        ],
    }


@pytest.mark.parametrize(("name", "request_"), requests(), ids=[name for name, _ in requests()])
async def test_route_equals_valhallas_full_osrm_answer(source: ValhallaSource, actor: Any, name: str, request_: RouteRequest) -> None:
    try:
        answer = json.loads(actor.route(json.dumps(rich_body(source, request_))))
    except RuntimeError:
        # No route between these random points: the source must refuse it too, with an identified error.
        with pytest.raises(RoadkitError):
            await source.route(request_)
        return
    response = await source.route(request_)
    assert observed(response) == expected(answer, request_, request_.cost.profile == "multimodal")


async def test_the_random_routes_cover_the_maneuvers_that_need_care(source: ValhallaSource, actor: Any) -> None:
    """The cases above meet roundabouts, refs, ramps, ends of road and changes of mode, or prove little."""
    seen: set[str] = set()
    for _, request in requests():
        try:
            answer = json.loads(actor.route(json.dumps(rich_body(source, request))))
        except RuntimeError:
            continue
        for leg in answer["routes"][0]["legs"]:
            for step in leg["steps"]:
                seen.add(step["maneuver"]["type"])
                if step.get("ref"):
                    seen.add("ref")
    needed = {"roundabout", "exit roundabout", "rotary", "exit rotary", "end of road", "continue", "fork", "off ramp"}
    needed |= {"notification", "ref"}
    assert needed <= seen


def _encoded(points: list[tuple[float, float]]) -> str:
    from pypolyline.cutil import encode_coordinates

    return str(encode_coordinates([list(p) for p in points], 6).decode("ascii"))


def test_step_lines_that_do_not_add_up_are_read_step_by_step() -> None:
    line = [(7.41, 43.73), (7.42, 43.74), (7.43, 43.75)]
    other = [(7.40, 43.72), (7.41, 43.73), (7.42, 43.74), (7.43, 43.75)]  # one point more than the route's line
    steps = [
        {"geometry": _encoded(other), "maneuver": {"type": "depart"}, "distance": 1.0, "duration": 1.0},
        {"geometry": _encoded([other[-1], other[-1]]), "maneuver": {"type": "arrive"}, "distance": 0.0, "duration": 0.0},
    ]
    answer = {
        "code": "Ok",
        "waypoints": [{"location": list(other[0])}, {"location": list(other[-1])}],
        "routes": [
            {"geometry": _encoded(line), "distance": 1.0, "duration": 1.0, "legs": [{"steps": steps, "distance": 1.0, "duration": 1.0}]}
        ],
    }
    request = RouteRequest((other[0], other[-1]), Cost("car", "fastest"))
    response = translate.route_response(answer, request, ValhallaCost("car", "auto", "fastest"))
    assert [s.geometry for s in response.portions[0].steps] == [other, [other[-1], other[-1]]]
    assert response.geometry == line


async def test_the_steps_intersections_are_cut_out_of_the_answer_and_nothing_else(source: ValhallaSource, actor: Any) -> None:
    """The source parses the answer without its steps' intersections: the rest must be the full answer's, key for key."""
    cut = 0
    for _, request in requests():
        body = translate.route_body(request, source.setting(request.cost))
        try:
            text = actor.route(json.dumps(body))
        except RuntimeError:
            continue
        full = json.loads(text)
        for route in full["routes"]:
            for leg in route["legs"]:
                for step in leg["steps"]:
                    cut += "intersections" in step
                    step.pop("intersections", None)
        shortened = translate.without_intersections(text)
        assert '"intersections"' not in shortened
        assert json.loads(shortened) == full
    assert cut > 100


def test_an_answer_whose_steps_do_not_pair_intersections_and_maneuvers_is_parsed_whole() -> None:
    steps = [
        {"intersections": [{"location": [7.41, 43.73]}], "maneuver": {"type": "depart"}, "name": "a"},
        {"intersections": [{"location": [7.42, 43.74]}], "name": "no maneuver"},
        {"intersections": [{"location": [7.43, 43.75]}], "maneuver": {"type": "arrive"}, "name": "b"},
    ]
    text = json.dumps({"routes": [{"legs": [{"steps": steps}]}]}, separators=(",", ":"))
    assert translate.without_intersections(text) == text  # cutting to the next maneuver would drop the second step
    # As many intersections as maneuvers, but not in the same steps.
    steps = [
        {"intersections": [{"geometry_index": 0}], "name": "a", "geometry": "abc"},
        {"name": "b", "maneuver": {"type": "arrive"}, "geometry": "def"},
    ]
    text = json.dumps({"routes": [{"legs": [{"steps": steps}]}]}, separators=(",", ":"))
    assert translate.without_intersections(text) == text
    assert translate.without_intersections('{"routes":[]}') == '{"routes":[]}'
    assert translate.read_route(text) == json.loads(text)
