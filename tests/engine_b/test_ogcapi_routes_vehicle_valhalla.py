"""OGC API – Routes on Valhalla: the height and weight classes (Valhalla's truck costing).

Monaco's extract has a tunnel of the Basse Corniche limited to 4.3 m and a service road (Chemin du Cros
d'Aisnier) limited to 3.5 t: the routes through them show that the request's height and weight reach
the engine. Abstract tests (``test_ats_*``) follow OGC API – Routes Part 1, annex A.
"""

from __future__ import annotations

import itertools
from typing import Any

from shapely import LineString
from starlette.testclient import TestClient

from roadkit.routing.model import Cost, RouteRequest, Vehicle
from roadkit_valhalla.options import ValhallaCost
from roadkit_valhalla.translate import route_body
from tests import ogcapi_routes_support as ogc

RID = "monaco-valhalla"
ROUTES = f"/ogcapi-routes/1.0/{RID}/routes"
#: The Basse Corniche's tunnel (OSM maxheight 4.3), and two points on the road on either side of it.
TUNNEL = LineString([[7.368769, 43.720508], [7.370761, 43.72057], [7.373453, 43.720647], [7.374985, 43.72046], [7.376333, 43.720359]])
WEST, EAST = [7.3675, 43.7205], [7.3775, 43.7203]
#: Both ends of the Chemin du Cros d'Aisnier (OSM maxweight 3.5), the only way to its northern end.
LANE_START, LANE_END = [7.40260, 43.74884], [7.40370, 43.75162]
TOLERANCE_M = 60.0


def through_tunnel(route: dict[str, Any]) -> bool:
    line = LineString(route["features"][0]["geometry"]["coordinates"])
    return bool(line.intersection(TUNNEL.buffer(0.00005)).length > 0.9 * TUNNEL.length)


def test_the_height_and_weight_classes_are_declared(client: TestClient) -> None:
    assert {ogc.SPEC + "height", ogc.SPEC + "weight"} <= set(client.get(f"/ogcapi-routes/1.0/{RID}/conformance").json()["conformsTo"])
    post = client.get(f"/ogcapi-routes/1.0/{RID}/api").json()["paths"]["/routes"]["post"]
    definition = post["requestBody"]["content"]["application/json"]["schema"]
    inputs = definition["properties"]["inputs"]["properties"]
    assert (inputs["height"]["maximum"], inputs["weight"]["maximum"]) == (10.0, 100.0)  # Valhalla's truck costing reads no more
    assert definition["properties"]["height"] == inputs["height"]  # beside "inputs" too


def test_a_vehicle_higher_than_a_tunnel_goes_round_it(client: TestClient) -> None:
    plain = ogc.valid_route(client.post(ROUTES, json=ogc.definition(WEST, EAST)))
    assert through_tunnel(plain)
    low = ogc.valid_route(client.post(ROUTES, json=ogc.definition(WEST, EAST, height=4.0)))
    assert through_tunnel(low) and low["features"][0]["properties"]["maxHeight_m"] == 4.0
    for body in (ogc.definition(WEST, EAST, height=4.5), {**ogc.definition(WEST, EAST), "height": 4.5}):
        high = ogc.valid_route(client.post(ROUTES, json=body))
        assert not through_tunnel(high)
        properties = high["features"][0]["properties"]
        assert properties["maxHeight_m"] == 4.5 and properties["length_m"] > plain["features"][0]["properties"]["length_m"]


def test_a_vehicle_heavier_than_the_only_way_allows_has_no_route(client: TestClient) -> None:
    light = ogc.valid_route(client.post(ROUTES, json=ogc.definition(LANE_START, LANE_END, weight=3.0)))
    assert light["features"][0]["properties"]["maxWeight_t"] == 3.0
    heavy = client.post(ROUTES, json=ogc.definition(LANE_START, LANE_END, weight=4.0))
    assert heavy.status_code == 422, heavy.text


def test_heights_and_weights_the_engine_cant_read_are_refused(client: TestClient) -> None:
    for member, value, expected in (("height", 10.5, "from 0 to 10"), ("weight", 101, "from 0 to 100"), ("height", -0.1, "from 0")):
        for body in (ogc.definition(WEST, EAST, **{member: value}), {**ogc.definition(WEST, EAST), member: value}):
            answer = client.post(ROUTES, json=body)
            assert answer.status_code == 400 and expected in answer.text, answer.text
    # Pedestrians are not vehicles: a valid request that this resource can't route.
    answer = client.post(ROUTES, json=ogc.definition(WEST, EAST, mode="pedestrian", height=2.0))
    assert answer.status_code == 422 and "not a motor vehicle" in answer.text


def check_compute_route_success(client: TestClient, member: str, values: tuple[float, ...]) -> None:
    """Every ordered pair of three positions and each value of ``member`` beside ``inputs``, as annex A sends them."""
    key = "maxHeight_m" if member == "height" else "maxWeight_t"
    for (start, end), value in itertools.product(itertools.permutations(ogc.FIVE[:3], 2), values):
        answer = client.post(ROUTES, json={**ogc.definition(start, end), member: value}, headers={"accept": "application/geo+json"})
        route = ogc.valid_route(answer)
        line = route["features"][0]["geometry"]["coordinates"]
        assert ogc.distance_m(line[0], start) < TOLERANCE_M and ogc.distance_m(line[-1], end) < TOLERANCE_M, (start, end, value)
        assert route["features"][0]["properties"].get(key, value) >= value


def test_ats_height_compute_route_success(client: TestClient) -> None:
    """/conf/height/compute-route-success: routes for vehicles 2, 3 and 5 m high between every ordered pair of three positions."""
    check_compute_route_success(client, "height", (2, 3, 5))


def test_ats_weight_compute_route_success(client: TestClient) -> None:
    """/conf/weight/compute-route-success: routes for vehicles of 3, 5 and 10 t between every ordered pair of three positions."""
    check_compute_route_success(client, "weight", (3, 5, 10))


def test_a_vehicle_route_is_a_trucks_with_the_costs_own_options() -> None:
    shortest = ValhallaCost("car", "auto", "shortest", options={"auto": {"shortest": True}})

    def body(vehicle: Vehicle | None) -> dict[str, Any]:
        return route_body(RouteRequest(points=((7.41, 43.73), (7.42, 43.74)), cost=Cost("car", "shortest"), vehicle=vehicle), shortest)

    assert body(Vehicle(height=4.2))["costing"] == "truck"
    # Not asked, the weight limits nothing; the axle load follows the weight (none here).
    assert body(Vehicle(height=4.2))["costing_options"] == {"truck": {"shortest": True, "height": 4.2, "weight": 0.0, "axle_load": 0.0}}
    assert body(Vehicle(weight=30))["costing_options"]["truck"] == {"shortest": True, "height": 0.0, "weight": 30.0, "axle_load": 9.07}
    plain = body(None)
    assert plain["costing"] == "auto" and plain["costing_options"] == {"auto": {"shortest": True}}
