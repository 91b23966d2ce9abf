"""The demo's capabilities advertise no constraint a request refuses: for each resource, operation and
profile, every constraint the capabilities list for it is applied by a real request (no 400), and every
one they leave out for a profile (``perProfile``) is a 400 naming ``constraints``."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx

from .conftest import Demo

START, END, OTHER = "7.41983,43.73115", "7.4226,43.7352", "7.4246,43.7383"
#: One request of each operation, completed by profile, cost and constraints.
REQUESTS = {
    "route": {"start": START, "end": END, "getSteps": "false"},
    "isochrone": {"point": OTHER, "costValue": "100"},
    "matrix": {"sources": f"{START}|{END}", "targets": OTHER},
}
SECOND = {"route": "optimization", "matrix": "optimization", "isochrone": "costType"}


def _values(parameters: dict[str, Any], name: str) -> list[str]:
    values = parameters[name]["values"]
    return list(values)


def _singles(keys: list[dict[str, Any]]) -> set[tuple[str, str, str, Any]]:
    """Every single constraint (key, type, operator, value) the key descriptors allow."""
    found = set()
    for key in keys:
        values = key.get("values", [30])  # a numeric key: any number
        for ctype, op, value in itertools.product(key["availableConstraintType"], key["availableOperators"], values):
            found.add((key["key"], ctype, op, value))
    return found


def _ask(demo: Demo, op: str, params: dict[str, str], single: tuple[str, str, str, Any]) -> httpx.Response:
    key, ctype, op_, value = single
    body = {"constraintType": ctype, "key": key, "operator": op_, "value": value}
    return httpx.get(f"{demo.service}/simple/1.0.0/{op}", params={**REQUESTS[op], **params, "constraints": json.dumps(body)}, timeout=30)


def test_every_constraint_advertised_for_a_profile_is_applied_and_no_other(road2_demo: Demo) -> None:
    caps = httpx.get(f"{road2_demo.service}/simple/1.0.0/getcapabilities").json()
    applied: dict[str, int] = {}
    refused: list[tuple[str, str, str, tuple[str, str, str, Any]]] = []
    for resource in caps["resources"]:
        for operation in resource["availableOperations"]:
            op = operation["id"]
            parameters = {p["id"]: p for p in operation["availableParameters"]}
            if "constraints" not in parameters:
                continue
            values = parameters["constraints"]["values"]
            every = _singles(values["keys"])
            second = SECOND[op]
            if "perProfile" in values:
                costs = [((e["profile"], e[second]), _singles(e["keys"])) for e in values["perProfile"]]
            else:  # every profile gets every key: the costs are those a request without constraints gets
                costs = []
                for profile, other in itertools.product(_values(parameters, "profile"), _values(parameters, second)):
                    plain = {"resource": resource["id"], "profile": profile, second: other}
                    status = httpx.get(f"{road2_demo.service}/simple/1.0.0/{op}", params={**REQUESTS[op], **plain}, timeout=30).status_code
                    if status != 400:  # 400: the resource computes no such cost
                        costs.append(((profile, other), every))
            assert costs, (resource["id"], op)
            for (profile, other), listed in costs:
                assert listed <= every, (resource["id"], op, profile, other)
                params = {"resource": resource["id"], "profile": profile, second: other}
                for single in sorted(every, key=str):
                    response = _ask(road2_demo, op, params, single)
                    where = (resource["id"], op, profile, other, single, response.text)
                    if single in listed:
                        # 404: no path without those ways; a point far from the ways left (pgRouting's `!=`).
                        snapped = response.status_code != 400 or response.json()["error"]["errorType"] == "point_not_snapped"
                        assert response.status_code in (200, 400, 404) and snapped, where
                        applied[resource["id"]] = applied.get(resource["id"], 0) + 1
                    else:
                        assert response.status_code == 400, where
                        assert response.json()["error"]["message"].startswith("Parameter 'constraints' is invalid: "), where
                        refused.append((resource["id"], op, profile, single))
    assert set(applied) == {"monaco-osrm", "monaco-valhalla", "monaco-pgrouting"}
    # OSRM's foot profile excludes no class: the pedestrian profile is listed without the bans.
    assert ("monaco-osrm", "route", "pedestrian", ("waytype", "banned", "=", "autoroute")) in refused
