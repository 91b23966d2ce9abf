"""pgRouting through the simple API: no hostile number reaches the SQL (costRatio, numeric constraint values, every parameter)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient

from roadkit.testing import service_client
from tests.core.test_hostile_simple_api import fuzz_simple_api
from tests.engine_c.conftest import END, START
from tests.hostile import check_refused, raw_get

RESOURCE = "monaco-pgrouting"
ROUTE = {"resource": RESOURCE, "start": f"{START[0]},{START[1]}", "end": f"{END[0]},{END[1]}"}


@pytest.fixture(scope="module")
def client(pg_example: Path) -> Iterator[TestClient]:
    with service_client(pg_example / "service.toml") as test_client:
        yield test_client


def test_a_cost_ratio_or_a_numeric_value_that_is_no_finite_number_is_a_400(client: TestClient) -> None:
    avoid = '{"constraintType":"avoid","key":"wayType","operator":"=","value":"tunnel","costRatio":%s}'
    speed = '{"constraintType":"banned","key":"vitesse","operator":">","value":%s}'
    assert client.get("/simple/1.0.0/route", params={**ROUTE, "constraints": avoid % "2"}).status_code == 200
    assert client.get("/simple/1.0.0/route", params={**ROUTE, "constraints": speed % "90"}).status_code == 200
    for template in (avoid, speed):
        for number in ("NaN", "Infinity", "-Infinity", "1e999", "9" * 400, "9" * 5000):
            text = template % number
            what = f"constraints={text[:100]}"
            answer = raw_get(client, "/simple/1.0.0/route", urlencode({**ROUTE, "constraints": text}).encode())
            check_refused(answer, "constraints", what=what)
            body = json.dumps(ROUTE)[:-1] + f', "constraints": [{text}]}}'
            posted = client.post("/simple/1.0.0/route", content=body, headers={"content-type": "application/json"})
            check_refused(posted, "constraints", what=f"POST {what}")
    large = client.get("/simple/1.0.0/route", params={**ROUTE, "constraints": avoid % "1e300"})
    assert "costRatio: expected a positive number of at most 1000" in check_refused(large, "constraints", what="1e300")


def test_hostile_values_in_every_parameter_are_400s_on_pgrouting(client: TestClient) -> None:
    valid = {
        "/route": ROUTE,
        "/isochrone": {"resource": RESOURCE, "point": ROUTE["start"], "costValue": "60"},
        "/nearest": {"resource": RESOURCE, "coordinates": ROUTE["start"]},
    }
    assert fuzz_simple_api(client, valid) > 1000
