"""``/documents`` on SQLite and on a private PostgreSQL cluster: CRUD, validation, isolation."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .apps_support import Stack, running_stack
from .oidc_flow import tokens_for

ROUTE = {
    "type": "Feature",
    "properties": {"distance": 1234.5},
    "geometry": {"type": "LineString", "coordinates": [[7.41, 43.73], [7.42, 43.74]]},
}
ISOCHRONE = {
    "type": "FeatureCollection",
    "features": [
        {
            "type": "Feature",
            "properties": {},
            "geometry": {"type": "Polygon", "coordinates": [[[7.4, 43.7], [7.5, 43.7], [7.4, 43.8], [7.4, 43.7]]]},
        }
    ],
}


@pytest.fixture(params=["sqlite", "postgresql"])
def docs_stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    """The stack with SQLite storage, then with PostgreSQL storage."""
    overrides = None
    if request.param == "postgresql":
        overrides = {"backend": {"postgres_dsn": request.getfixturevalue("fresh_pg_dsn")}}
    with running_stack(overrides) as stack:
        yield stack


class Api:
    """The backend's document API for one user."""

    def __init__(self, stack: Stack, username: str) -> None:
        with httpx.Client() as http:
            token = tokens_for(http, stack.iam.url, f"{stack.app_url}/", username=username, password=f"{username}-password")["access_token"]
        self.base = stack.backend_url
        self.headers = {"Authorization": f"Bearer {token}"}

    def list(self) -> list[dict]:
        response = httpx.get(f"{self.base}/documents", headers=self.headers)
        assert response.status_code == 200, response.text
        return list(response.json())

    def create(self, body: object) -> httpx.Response:
        return httpx.post(f"{self.base}/documents", headers=self.headers, json=body)

    def delete(self, document_id: str) -> httpx.Response:
        return httpx.delete(f"{self.base}/documents/{document_id}", headers=self.headers)


def test_create_list_delete(docs_stack: Stack) -> None:
    demo = Api(docs_stack, "demo")
    assert demo.list() == []
    created = demo.create({"title": "To the port", "type": "route", "geojson": ROUTE})
    assert created.status_code == 201
    doc = created.json()
    assert doc["title"] == "To the port" and doc["type"] == "route" and doc["geojson"] == ROUTE
    assert doc["date"].endswith("Z") and "T" in doc["date"] and doc["id"]
    second = demo.create({"title": "10 minutes", "type": "isochrone", "geojson": ISOCHRONE}).json()
    assert [d["id"] for d in demo.list()] == [second["id"], doc["id"]]
    assert demo.delete(doc["id"]).status_code == 204
    assert [d["id"] for d in demo.list()] == [second["id"]]
    assert demo.delete(doc["id"]).status_code == 404


def test_users_only_see_their_own_documents(docs_stack: Stack) -> None:
    demo, alice = Api(docs_stack, "demo"), Api(docs_stack, "alice")
    mine = demo.create({"title": "demo's", "type": "route", "geojson": ROUTE}).json()
    theirs = alice.create({"title": "alice's", "type": "isochrone", "geojson": ISOCHRONE}).json()
    assert [d["id"] for d in demo.list()] == [mine["id"]]
    assert [d["id"] for d in alice.list()] == [theirs["id"]]
    refused = alice.delete(mine["id"])
    assert refused.status_code == 404 and refused.json()["error"]["errorType"] == "not_found"
    assert [d["id"] for d in demo.list()] == [mine["id"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": "", "type": "route", "geojson": ROUTE}, "title"),
        ({"title": "x" * 201, "type": "route", "geojson": ROUTE}, "title"),
        ({"title": "ok", "type": "map", "geojson": ROUTE}, "type"),
        ({"title": "ok", "type": "route", "geojson": "LINESTRING(0 0)"}, "geojson"),
        ({"title": "ok", "type": "route", "geojson": {"type": "Circle"}}, "geojson.type"),
        ({"title": "ok", "type": "route", "geojson": {"type": "FeatureCollection"}}, "geojson.features"),
        ({"title": "ok", "type": "route", "geojson": {"type": "Point"}}, "geojson.coordinates"),
        ({"title": "ok", "type": "route", "geojson": ROUTE, "owner": "alice"}, "owner"),
        (["not", "an", "object"], "body"),
    ],
)
def test_invalid_documents_get_400_naming_the_field(stack: Stack, body: object, field: str) -> None:
    response = Api(stack, "demo").create(body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["errorType"] == "invalid_request" and error["message"].startswith(f"{field}:")


def test_malformed_json_wrong_type_and_oversized_bodies(stack: Stack) -> None:
    api = Api(stack, "demo")
    broken = httpx.post(f"{api.base}/documents", headers={**api.headers, "Content-Type": "application/json"}, content=b"{")
    assert broken.status_code == 400 and broken.json()["error"]["message"].startswith("body:")
    form = httpx.post(f"{api.base}/documents", headers=api.headers, data={"title": "x"})
    assert form.status_code == 415
    huge = {"title": "big", "type": "route", "geojson": {**ROUTE, "properties": {"pad": "x" * (2 * 1024 * 1024)}}}
    assert api.create(huge).status_code == 413

    def chunks() -> Iterator[bytes]:
        yield b'{"title": "big", "type": "route", "geojson": {"pad": "'
        for _ in range(300):
            yield b"x" * 10000
        yield b'"}}'

    streamed = httpx.post(f"{api.base}/documents", headers={**api.headers, "Content-Type": "application/json"}, content=chunks())
    assert streamed.status_code == 413
