"""The native OSRM API on a pgRouting resource: table through the simple API's matrix, every other service refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from roadkit.testing import service_client

COORDS = "7.41337,43.72956;7.41983,43.73115"


@pytest.fixture(scope="module")
def client(pg_example: Path) -> Iterator[TestClient]:
    with service_client(pg_example / "service.toml") as test_client:
        yield test_client


@pytest.mark.parametrize("service", ["route", "nearest", "trip", "match"])
def test_pgrouting_cannot_answer_native_requests(client: TestClient, service: str) -> None:
    response = client.get(f"/osrm/1.0.0/monaco-pgrouting/{service}/v1/car/{COORDS}")
    assert response.status_code == 400
    assert response.json() == {
        "code": "InvalidService",
        "message": f"Service {service} is not available on resource monaco-pgrouting (engine pgrouting)",
    }
    assert (
        client.get(
            "/simple/1.0.0/route", params={"resource": "monaco-pgrouting", "start": "7.41337,43.72956", "end": "7.41983,43.73115"}
        ).status_code
        == 200
    )


def test_table_is_the_matrix_within_its_limits(client: TestClient) -> None:
    coordinates = COORDS + ";7.4246,43.7383"
    response = client.get(
        f"/osrm/1.0.0/monaco-pgrouting/table/v1/car/{coordinates}?sources=0&destinations=1;2&annotations=duration,distance"
    )
    assert response.status_code == 200, response.text
    table = response.json()
    params = {"resource": "monaco-pgrouting", "sources": "7.41337,43.72956", "targets": "7.41983,43.73115|7.4246,43.7383"}
    matrix = client.get("/simple/1.0.0/matrix", params=params | {"timeUnit": "second"}).json()
    assert table["durations"] == [[round(v, 1) for v in row] for row in matrix["durations"]]
    assert table["distances"] == [[round(v, 1) for v in row] for row in matrix["distances"]]
    assert [w["location"] for w in table["destinations"]] == [[round(c, 6) for c in p["geometry"]] for p in matrix["targets"]]
    assert all(v > 0 for v in table["durations"][0])
    # The resource's matrix allows 2,500 cells: osrm-routed's max_table_size is its square root.
    (listed,) = [r for r in client.get("/osrm/1.0.0/resources").json() if r["id"] == "monaco-pgrouting"]
    assert listed["services"] == ["table"] and listed["limits"]["max_table_size"] == 50
    many = ";".join(["7.41337,43.72956"] * 51)
    too_big = client.get(f"/osrm/1.0.0/monaco-pgrouting/table/v1/car/{many}")
    assert (too_big.status_code, too_big.json()) == (400, {"message": "Too many table coordinates", "code": "TooBig"})
