"""prefer / avoid constraints on Valhalla: applied as use_* costing options, with an effect on real routes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from roadkit_valhalla.preferences import preference_value
from tests.engine_b.conftest import client_of
from tests.service_support import start_problems

ROUTE = "/simple/1.0.0/route"
# Starts on the A8 motorway (La Provençale) above Monaco: the fastest way stays on it.
ON_THE_MOTORWAY = {"start": "7.36305,43.74436", "end": "7.43819,43.75549"}
# Down to the coast: the fastest way keeps off the motorway, a strong enough liking takes it.
DOWN_TO_THE_COAST = {"start": "7.36305,43.74436", "end": "7.36348,43.72998"}

PREFERENCE_KEY = (
    '  { keyType = "name-valhalla", key = "roads", availableConstraintType = ["banned", "prefer", "avoid"], availableValues = [\n'
    '    { value = "autoroute", field = "exclude_highways" }, { value = "peage", field = "exclude_tolls" } ] },\n'
)
END_OF_ROUTE_KEYS = "  ] },\n]\n\n[operations.isochrone]"


def with_preferences(example: Path) -> Path:
    """The example's resource with a second route constraint key that allows prefer and avoid."""
    resource = example / "resources" / "monaco-valhalla.resource"
    text = resource.read_text()
    assert END_OF_ROUTE_KEYS in text
    resource.write_text(text.replace(END_OF_ROUTE_KEYS, "  ] },\n" + PREFERENCE_KEY + "]\n\n[operations.isochrone]", 1))
    return resource


@pytest.fixture(scope="module")
def prefs_example(tmp_path_factory: pytest.TempPathFactory, valhalla_example: Path) -> Path:
    target = tmp_path_factory.mktemp("prefs") / "example"
    shutil.copytree(valhalla_example, target, symlinks=True)
    with_preferences(target)
    return target


@pytest.fixture(scope="module")
def prefs(prefs_example: Path) -> Iterator[TestClient]:
    with client_of(prefs_example) as test_client:
        yield test_client


def route(client: TestClient, **params: Any) -> Any:
    response = client.get(ROUTE, params={"resource": "monaco-valhalla", "getSteps": "false", **params})
    assert response.status_code == 200, response.text
    return response.json()


def constraint(ctype: str, value: str, ratio: float | None = None) -> str:
    body: dict[str, Any] = {"constraintType": ctype, "key": "roads", "operator": "=", "value": value}
    if ratio is not None:
        body["costRatio"] = ratio
    return json.dumps(body)


def test_cost_ratios_map_to_valhalla_preferences() -> None:
    assert preference_value("use_highways", 1.0) == 0.5 and preference_value("use_tolls", 1.0) == 0.5
    assert preference_value("use_highways", 9.0) == 0.0 and preference_value("use_highways", 100.0) == 0.0
    assert preference_value("use_highways", 0.8) == 1.0  # Valhalla favours highways by at most 12.5 %
    assert preference_value("use_highways", 1.2) == pytest.approx(0.4209, abs=1e-4)  # 8·(1 − 2u)² = 0.2
    assert preference_value("use_tolls", 3.0) == 0.25 and preference_value("use_ferry", 2.0) == 0.25


def test_avoid_takes_a_route_off_the_motorway(prefs: TestClient, actor: Any) -> None:
    free = route(prefs, **ON_THE_MOTORWAY)
    avoided = route(prefs, **ON_THE_MOTORWAY, constraints=constraint("avoid", "autoroute", 9))
    assert avoided["constraints"] == [{"type": "avoid", "key": "roads", "operator": "=", "value": "autoroute"}]
    assert avoided["geometry"] != free["geometry"] and avoided["distance"] > free["distance"] * 1.1
    start, end = ([float(v) for v in ON_THE_MOTORWAY[k].split(",")] for k in ("start", "end"))
    body = {
        "locations": [{"lon": start[0], "lat": start[1]}, {"lon": end[0], "lat": end[1]}],
        "costing": "auto",
        "costing_options": {"auto": {"use_highways": 0.0}},
        "directions_options": {"format": "osrm"},
    }
    direct = json.loads(actor.route(json.dumps(body)))["routes"][0]
    assert avoided["distance"] == pytest.approx(direct["distance"], rel=1e-6)
    # A mild avoidance (the resource's default ratio 1.2) is not worth the detour here.
    assert route(prefs, **ON_THE_MOTORWAY, constraints=constraint("avoid", "autoroute"))["distance"] == free["distance"]


def _road_classes(actor: Any, geometry: dict[str, Any]) -> set[str]:
    """The road classes of the ways a GeoJSON line runs on (Valhalla's own reading of its edges)."""
    shape = [{"lon": lon, "lat": lat} for lon, lat in geometry["coordinates"]]
    traced = json.loads(actor.trace_attributes(json.dumps({"shape": shape, "shape_match": "edge_walk", "costing": "auto"})))
    return {edge["road_class"] for edge in traced["edges"]}


def test_a_banned_way_type_is_a_hard_ban(prefs: TestClient, actor: Any) -> None:
    # Valhalla lets a route start on an excluded way: the start goes to the nearest allowed way, as on OSRM.
    free = route(prefs, **ON_THE_MOTORWAY, geometryFormat="geojson")
    banned = route(prefs, **ON_THE_MOTORWAY, geometryFormat="geojson", constraints=constraint("banned", "autoroute"))
    assert "motorway" in _road_classes(actor, free["geometry"])
    assert "motorway" not in _road_classes(actor, banned["geometry"])
    assert banned["distance"] > free["distance"] * 1.1


def test_prefer_takes_the_motorway_when_it_is_close_enough(prefs: TestClient) -> None:
    free = route(prefs, **DOWN_TO_THE_COAST)
    preferred = route(prefs, **DOWN_TO_THE_COAST, constraints=constraint("prefer", "autoroute"))
    assert preferred["geometry"] != free["geometry"]
    assert preferred["duration"] > free["duration"]  # slower, but on the preferred ways


def test_a_preference_the_profile_does_not_read_is_a_400(prefs: TestClient) -> None:
    response = prefs.get(
        ROUTE,
        params={"resource": "monaco-valhalla", "profile": "pedestrian", **ON_THE_MOTORWAY, "constraints": constraint("avoid", "autoroute")},
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "Parameter 'constraints' is invalid: avoid roads=autoroute can't be applied with profile 'pedestrian' "
        "and optimization 'fastest' on this resource (Valhalla costing pedestrian has no use_highways option)"
    )


def test_capabilities_advertise_prefer_and_avoid(prefs: TestClient) -> None:
    resource = prefs.get("/simple/1.0.0/getcapabilities").json()["resources"][0]
    route_op = next(op for op in resource["availableOperations"] if op["id"] == "route")
    keys = next(p for p in route_op["availableParameters"] if p["id"] == "constraints")["values"]["keys"]
    assert {
        "key": "roads",
        "availableConstraintType": ["banned", "prefer", "avoid"],
        "availableOperators": ["="],
        "values": ["autoroute", "peage"],
    } in keys


def test_a_preference_valhalla_has_no_weight_for_is_refused_in_the_configuration(prefs_example: Path, tmp_path: Path) -> None:
    example = tmp_path / "example"
    shutil.copytree(prefs_example, example, symlinks=True)
    resource = example / "resources" / "monaco-valhalla.resource"
    resource.write_text(
        resource.read_text().replace('{ value = "peage", field = "exclude_tolls" }', '{ value = "tunnel", field = "exclude_tunnels" }')
    )
    problems = start_problems(example / "service.toml")
    assert problems == [
        f"{resource}: operations.route.constraints.keys[key=roads].availableConstraintType: 'prefer' is not applied by source "
        "'monaco-valhalla' (valhalla): Valhalla weighs only exclude_ferries, exclude_highways, exclude_tolls or a use_* costing option; "
        "field 'exclude_tunnels' has no preference weight (allow only banned for it)",
        f"{resource}: operations.route.constraints.keys[key=roads].availableConstraintType: 'avoid' is not applied by source "
        "'monaco-valhalla' (valhalla): Valhalla weighs only exclude_ferries, exclude_highways, exclude_tolls or a use_* costing option; "
        "field 'exclude_tunnels' has no preference weight (allow only banned for it)",
    ]


def _constraints_entry(client: TestClient, op: str) -> Any:
    resource = client.get("/simple/1.0.0/getcapabilities").json()["resources"][0]
    operation = next(o for o in resource["availableOperations"] if o["id"] == op)
    return next(p for p in operation["availableParameters"] if p["id"] == "constraints")["values"]


def test_capabilities_list_per_profile_the_preferences_its_costing_reads(prefs: TestClient) -> None:
    values = _constraints_entry(prefs, "route")
    per_profile = {(e["profile"], e["optimization"]): e["keys"] for e in values["perProfile"]}
    assert set(per_profile) == {
        ("car", "fastest"),
        ("car", "shortest"),
        ("pedestrian", "fastest"),
        ("pedestrian", "shortest"),
        ("multimodal", "fastest"),
    }
    assert per_profile["car", "fastest"] == values["keys"]  # auto reads use_highways and use_tolls
    way_type = values["keys"][0]
    # The pedestrian costings weigh neither motorways nor tolls: only the bans are left of the key "roads".
    for cost in (("pedestrian", "fastest"), ("pedestrian", "shortest"), ("multimodal", "fastest")):
        assert per_profile[cost] == [
            way_type,
            {"key": "roads", "availableConstraintType": ["banned"], "availableOperators": ["="], "values": ["autoroute", "peage"]},
        ]
    # The demo's resource bans only: every profile gets every key, so no perProfile is listed.
    isochrone = _constraints_entry(prefs, "isochrone")
    assert "perProfile" not in isochrone and "bannedCombinations" not in isochrone


def test_every_constraint_listed_for_a_profile_is_applied_and_no_other(prefs: TestClient) -> None:
    values = _constraints_entry(prefs, "route")
    checked = refused = 0
    for entry in values["perProfile"]:
        listed = {(k["key"], t, v) for k in entry["keys"] for t in k["availableConstraintType"] for v in k["values"]}
        for key in values["keys"]:
            for ctype in key["availableConstraintType"]:
                for value in key["values"]:
                    body = {"constraintType": ctype, "key": key["key"], "operator": "=", "value": value}
                    params = {"resource": "monaco-valhalla", "profile": entry["profile"], "optimization": entry["optimization"]}
                    params.update(getSteps="false", start="7.41983,43.73115", end="7.4226,43.7352", constraints=json.dumps(body))
                    response = prefs.get(ROUTE, params=params)
                    if (key["key"], ctype, value) in listed:
                        assert response.status_code in (200, 404), (params, response.text)  # 404: no path without those ways
                        checked += 1
                    else:
                        assert response.status_code == 400, (params, response.text)
                        assert "Parameter 'constraints' is invalid" in response.json()["error"]["message"]
                        refused += 1
    assert (checked, refused) == (5 * 5 + 5 * 2 + 2 * 4, 3 * 4)
