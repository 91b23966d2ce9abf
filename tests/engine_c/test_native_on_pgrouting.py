"""The native OSRM API on a pgRouting resource: listed nowhere, every service refused with InvalidService."""

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


@pytest.mark.parametrize("service", ["route", "nearest", "table", "trip", "match"])
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


def test_pgrouting_resources_are_not_listed(client: TestClient) -> None:
    assert all(r["id"] != "monaco-pgrouting" for r in client.get("/osrm/1.0.0/resources").json())
