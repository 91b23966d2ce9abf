"""Constraints the OSRM datasets can't apply: 400s naming the parameter, sources stay green, capabilities say what works."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from roadkit.config import load_service
from roadkit.plugins import Plugins
from roadkit.serving.service import Service
from tests.service_support import start_problems

ROUTE = "/simple/1.0.0/route"
BASE = {"resource": "monaco-osrm", "start": "7.41337,43.72956", "end": "7.41983,43.73115"}


def ban(value: str) -> dict[str, str]:
    return {"constraintType": "banned", "key": "wayType", "operator": "=", "value": value}


def health(client: TestClient) -> dict[str, Any]:
    service: Service = client.app.state.service  # type: ignore[attr-defined]
    return service.health()


def test_a_ban_combination_the_car_dataset_lacks_is_a_400_and_the_source_stays_green(client: TestClient) -> None:
    response = client.post(ROUTE, json={**BASE, "constraints": [ban("autoroute"), ban("peage")]})
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert message.startswith("Parameter 'constraints' is invalid: banning waytype=autoroute, waytype=peage together is not possible")
    assert "profile 'car' and optimization 'fastest'" in message
    assert "possible bans: waytype=autoroute; waytype=peage; waytype=bac" in message
    state = health(client)
    assert state["state"] == "green" and {s["state"] for s in state["sources"]} == {"green"}
    assert client.post(ROUTE, json={**BASE, "constraints": [ban("peage")]}).status_code == 200


def test_tunnels_and_bridges_are_banned_with_the_combinations_the_demo_profile_declares(client: TestClient) -> None:
    # From the north-east of Monaco to its south-west: the fastest car route takes tunnels and a bridge.
    trip = {**BASE, "start": "7.4246,43.7383", "end": "7.41983,43.73115"}

    def distance(*values: str) -> float:
        response = client.post(ROUTE, json={**trip, **({"constraints": [ban(v) for v in values]} if values else {})})
        assert response.status_code == 200, response.text
        return float(response.json()["distance"])

    # Each ban changes the route (so none is ignored): 2416 m, 2597 m, 1340 m and 1521 m.
    assert len({distance(), distance("pont"), distance("autoroute", "tunnel"), distance("autoroute", "tunnel", "pont")}) == 4
    # A combination the profile does not declare is a 400 that lists those it does.
    response = client.post(ROUTE, json={**trip, "constraints": [ban("tunnel")]})
    assert response.status_code == 400, response.text
    assert "waytype=autoroute + waytype=tunnel + waytype=pont" in response.json()["error"]["message"]


def test_any_ban_on_the_pedestrian_dataset_is_a_400_and_the_source_stays_green(client: TestClient) -> None:
    response = client.get(ROUTE, params={**BASE, "profile": "pedestrian", "constraints": json.dumps(ban("autoroute"))})
    assert response.status_code == 400, response.text
    assert "possible bans: none" in response.json()["error"]["message"]
    assert health(client)["state"] == "green"
    assert client.get(ROUTE, params={**BASE, "profile": "pedestrian"}).status_code == 200


def test_capabilities_advertise_the_ban_combinations_each_dataset_applies(client: TestClient) -> None:
    resource = next(r for r in client.get("/simple/1.0.0/getcapabilities").json()["resources"] if r["id"] == "monaco-osrm")
    route = next(op for op in resource["availableOperations"] if op["id"] == "route")
    constraints = next(p for p in route["availableParameters"] if p["id"] == "constraints")
    # Those the demo's car profile declares (profiles/car-bans.lua): no more, no fewer.
    declared = [
        [{"key": "waytype", "value": v} for v in values]
        for values in (["autoroute"], ["peage"], ["bac"], ["pont"], ["autoroute", "tunnel"], ["autoroute", "tunnel", "pont"])
    ]
    assert constraints["values"]["bannedCombinations"] == [
        {"profile": "car", "optimization": "fastest", "combinations": declared},
        {"profile": "car", "optimization": "shortest", "combinations": declared},
        {"profile": "pedestrian", "optimization": "fastest", "combinations": []},
    ]


def test_an_engine_refusal_reaching_the_source_is_a_400_without_a_state_change(osrm_datasets: dict[str, Path]) -> None:
    import asyncio

    from roadkit.config.models import SourceConfig
    from roadkit.errors import ParameterInvalid
    from roadkit.routing.model import Constraint, Cost, RouteRequest
    from roadkit_osrm.source import OsrmSource

    async def run() -> None:
        config = SourceConfig(
            Path("car.source"),
            "car",
            "osrm",
            options={"storage": {"file": str(osrm_datasets["car-fastest"])}, "cost": {"profile": "car", "optimization": "fastest"}},
        )
        source = OsrmSource.from_config(config)
        await source.connect()
        try:
            both = tuple(Constraint("banned", "waytype", "=", v, field=f) for v, f in (("autoroute", "motorway"), ("peage", "toll")))
            with pytest.raises(ParameterInvalid) as caught:
                await source.route(RouteRequest(((7.41337, 43.72956), (7.41983, 43.73115)), Cost("car", "fastest"), constraints=both))
            assert caught.value.parameter == "constraints"
            assert str(source.state) == "green" and source.reason == ""
            assert sorted(map(sorted, source.supported_bans(["motorway", "toll", "ferry", "tunnel", "bridge"], 3) or [])) == [
                ["bridge"],
                ["bridge", "motorway", "tunnel"],
                ["ferry"],
                ["motorway"],
                ["motorway", "tunnel"],
                ["toll"],
            ]
        finally:
            await source.disconnect()

    asyncio.run(run())


def test_prefer_and_avoid_on_an_osrm_resource_are_refused_in_the_configuration(osrm_example: Path, tmp_path: Path) -> None:
    example = tmp_path / "monaco"
    shutil.copytree(osrm_example, example, symlinks=True)
    resource = example / "resources" / "monaco-osrm.resource"
    resource.write_text(
        resource.read_text().replace('availableConstraintType = ["banned"]', 'availableConstraintType = ["banned", "avoid"]')
    )
    problems = start_problems(example / "service.toml")
    assert any(
        p.startswith(
            f"{resource}: operations.route.constraints.keys[key=waytype].availableConstraintType: 'avoid' is not applied by source"
        )
        and "OSRM can only exclude" in p
        for p in problems
    ), problems


def test_an_osrm_dataset_missing_at_start_joins_its_resource_when_it_appears(osrm_example: Path, tmp_path: Path) -> None:
    import time

    from roadkit.serving.app import create_app

    example = tmp_path / "monaco"
    shutil.copytree(osrm_example, example, symlinks=True, ignore=shutil.ignore_patterns("data"))
    built = (osrm_example / "data" / "osrm").resolve()
    (example / "data" / "osrm").mkdir(parents=True)
    for name in ("car-shortest", "pedestrian-fastest"):
        (example / "data" / "osrm" / name).symlink_to(built / name, target_is_directory=True)
    service_file = example / "service.toml"
    service_file.write_text(
        service_file.read_text().replace(
            "engine_timeout = 10.0", "engine_timeout = 10.0\nconnect_retry_initial = 0.05\nconnect_retry_max = 0.1"
        )
    )
    app = create_app(load_service(service_file), Plugins.create())
    with TestClient(app) as client:
        service: Service = app.state.service
        assert [s.id for s in service.resources["monaco-osrm"].sources] == ["monaco-osrm-car-shortest", "monaco-osrm-pedestrian-fastest"]
        response = client.get(ROUTE, params=BASE)
        assert (
            response.status_code == 400
            and "Parameters 'profile' and 'optimization' are not compatible: profile 'car' with optimization 'fastest'" in response.text
        )
        red = next(s for s in service.health()["sources"] if s["id"] == "monaco-osrm-car-fastest")
        assert red["state"] == "red" and red["connection"]["attempts"] >= 1 and "monaco.osrm" in red["connection"]["lastError"]
        (example / "data" / "osrm" / "car-fastest").symlink_to(built / "car-fastest", target_is_directory=True)
        deadline = time.monotonic() + 20
        while len(service.resources["monaco-osrm"].sources) < 3:
            assert time.monotonic() < deadline, service.health()
            time.sleep(0.05)
        assert client.get(ROUTE, params=BASE).status_code == 200
        assert service.health()["state"] == "green"
