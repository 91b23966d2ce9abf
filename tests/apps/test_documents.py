"""``/documents`` on SQLite and on a private PostgreSQL cluster: CRUD, validation, isolation."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncpg
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


def _refused(response: httpx.Response, error_type: str, setting: str) -> None:
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["errorType"] == error_type and setting in error["message"]


@pytest.fixture(params=["sqlite", "postgresql"])
def quota_stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    """The stack with small quotas and pages, on SQLite then on PostgreSQL."""
    backend: dict[str, object] = {"max_documents_per_user": 3, "max_stored_bytes_per_user": 2000, "documents_page_size": 2}
    if request.param == "postgresql":
        backend["postgres_dsn"] = request.getfixturevalue("fresh_pg_dsn")
    with running_stack({"backend": backend}) as stack:
        yield stack


def test_the_document_quota_refuses_the_next_save_and_stores_nothing(quota_stack: Stack) -> None:
    demo, alice = Api(quota_stack, "demo"), Api(quota_stack, "alice")
    kept = [demo.create({"title": f"doc {i}", "type": "route", "geojson": ROUTE}).json()["id"] for i in range(3)]
    _refused(demo.create({"title": "one more", "type": "route", "geojson": ROUTE}), "document_quota_exceeded", "max_documents_per_user = 3")
    listed = httpx.get(f"{demo.base}/documents", params={"limit": 10}, headers=demo.headers).json()
    assert sorted(d["id"] for d in listed) == sorted(kept)
    # The quota is per user, and a deletion frees a place.
    assert alice.create({"title": "alice's", "type": "route", "geojson": ROUTE}).status_code == 201
    assert demo.delete(kept[0]).status_code == 204
    assert demo.create({"title": "again", "type": "route", "geojson": ROUTE}).status_code == 201


def test_the_size_quota_counts_every_stored_byte(quota_stack: Stack) -> None:
    demo = Api(quota_stack, "demo")
    big = {**ROUTE, "properties": {"pad": "x" * 1200}}
    assert demo.create({"title": "big", "type": "route", "geojson": big}).status_code == 201
    _refused(demo.create({"title": "big 2", "type": "route", "geojson": big}), "storage_quota_exceeded", "max_stored_bytes_per_user")
    assert [d["title"] for d in httpx.get(f"{demo.base}/documents", headers=demo.headers).json()] == ["big"]
    # A small one still fits under the 2000 bytes.
    assert demo.create({"title": "small", "type": "route", "geojson": ROUTE}).status_code == 201


def test_concurrent_saves_cannot_overshoot_the_quota(quota_stack: Stack) -> None:
    demo = Api(quota_stack, "demo")
    body = {"title": "race", "type": "route", "geojson": ROUTE}
    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = sorted(pool.map(lambda _: demo.create(body).status_code, range(10)))
    assert statuses == [201] * 3 + [409] * 7
    assert len(httpx.get(f"{demo.base}/documents", params={"limit": 10}, headers=demo.headers).json()) == 3


def walk(api: Api, limit: int | None = None) -> tuple[list[str], int]:
    """Every document id by following the Link headers, and the number of pages read."""
    ids: list[str] = []
    url: str | None = f"{api.base}/documents" + (f"?limit={limit}" if limit else "")
    pages = 0
    while url:
        response = httpx.get(url, headers=api.headers)
        assert response.status_code == 200, response.text
        page = response.json()
        assert page, "a page with a next link is never empty"
        ids += [d["id"] for d in page]
        pages += 1
        link = response.headers.get("link")
        url = re.fullmatch(r'<([^>]+)>; rel="next"', link).group(1) if link else None  # type: ignore[union-attr]
    return ids, pages


def test_pages_walk_every_document_exactly_once_newest_first(docs_stack: Stack) -> None:
    demo, alice = Api(docs_stack, "demo"), Api(docs_stack, "alice")
    created = [demo.create({"title": f"doc {i}", "type": "route", "geojson": ROUTE}).json()["id"] for i in range(7)]
    alice.create({"title": "not demo's", "type": "route", "geojson": ROUTE})
    newest_first = created[::-1]
    assert walk(demo, 3) == (newest_first, 3)
    assert walk(demo, 7) == (newest_first, 1)
    assert walk(demo) == (newest_first, 1)  # the default page (100) holds them all
    # Documents saved or deleted during a walk neither repeat nor hide the others.
    first = httpx.get(f"{demo.base}/documents", params={"limit": 3}, headers=demo.headers)
    demo.create({"title": "during the walk", "type": "route", "geojson": ROUTE})
    assert demo.delete(newest_first[4]).status_code == 204
    ids = [d["id"] for d in first.json()]
    url = re.fullmatch(r'<([^>]+)>; rel="next"', first.headers["link"]).group(1)  # type: ignore[union-attr]
    while url:
        page = httpx.get(url, headers=demo.headers)
        ids += [d["id"] for d in page.json()]
        link = page.headers.get("link")
        url = re.fullmatch(r'<([^>]+)>; rel="next"', link).group(1) if link else ""  # type: ignore[union-attr]
    assert ids == [i for i in newest_first if i != newest_first[4]]


def test_the_default_page_size_and_bad_page_parameters(quota_stack: Stack) -> None:
    demo = Api(quota_stack, "demo")
    for i in range(3):
        demo.create({"title": f"doc {i}", "type": "route", "geojson": ROUTE})
    first = httpx.get(f"{demo.base}/documents", headers=demo.headers, params={})
    assert len(first.json()) == 2 and first.headers["link"].startswith(f"<{quota_stack.backend_url}/documents?limit=2&cursor=")
    exposed = httpx.get(f"{demo.base}/documents", headers={**demo.headers, "Origin": quota_stack.app_url})
    assert "link" in exposed.headers["access-control-expose-headers"].lower()
    for params, field in [
        ({"limit": "0"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "²"}, "limit"),
        ({"limit": "9" * 40}, "limit"),
        ({"cursor": "nope"}, "cursor"),
        ({"cursor": "djE6LTE"}, "cursor"),  # "v1:-1"
        ({"cursor": "x" * 100}, "cursor"),
        ({"cursor": "%%%"}, "cursor"),
    ]:
        response = httpx.get(f"{demo.base}/documents", headers=demo.headers, params=params)
        assert response.status_code == 400, (params, response.text)
        assert response.json()["error"]["message"].startswith(f"{field}:")
    # A cursor only pages the caller's own documents.
    alice = Api(quota_stack, "alice")
    cursor = first.headers["link"].split("cursor=")[1].split(">")[0]
    assert httpx.get(f"{alice.base}/documents", headers=alice.headers, params={"cursor": cursor}).json() == []


OLD_SCHEMA = """CREATE TABLE documents (seq {serial} PRIMARY KEY, id TEXT NOT NULL UNIQUE, owner TEXT NOT NULL,
title TEXT NOT NULL, type TEXT NOT NULL, date TEXT NOT NULL, geojson {json} NOT NULL)"""


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_documents_stored_before_quotas_count_against_them(database: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # A table written by an earlier version has no size column: it is added and filled at start.
    from roadkit_deviam.testing import iam_test_config

    demo = iam_test_config().user_by_name("demo")
    assert demo is not None
    geojson = {"type": "Feature", "properties": {"pad": "x" * 1500}, "geometry": None}
    row = ("old-1", demo.id, "été", "route", "2024-01-01T00:00:00.000Z", json.dumps(geojson))
    if database == "sqlite":
        path = tmp_path / "old.sqlite3"
        with sqlite3.connect(path) as db:
            db.execute(OLD_SCHEMA.format(serial="INTEGER", json="TEXT"))
            db.execute("INSERT INTO documents (id, owner, title, type, date, geojson) VALUES (?, ?, ?, ?, ?, ?)", row)
        overrides: dict[str, object] = {"database": str(path)}

        def sizes() -> list[int]:
            with sqlite3.connect(path) as db:
                return [r[0] for r in db.execute("SELECT size FROM documents ORDER BY seq")]

    else:
        dsn = request.getfixturevalue("fresh_pg_dsn")

        async def run(sql: str, *args: object) -> list[int]:
            conn = await asyncpg.connect(dsn)
            try:
                return [r[0] for r in await conn.fetch(sql, *args)]
            finally:
                await conn.close()

        asyncio.run(run(OLD_SCHEMA.format(serial="BIGSERIAL", json="JSONB")))
        asyncio.run(run("INSERT INTO documents (id, owner, title, type, date, geojson) VALUES ($1, $2, $3, $4, $5, $6::jsonb)", *row))
        overrides = {"postgres_dsn": dsn}

        def sizes() -> list[int]:
            return asyncio.run(run("SELECT size FROM documents ORDER BY seq"))

    overrides["max_stored_bytes_per_user"] = 2000
    with running_stack({"backend": overrides}) as stack:
        # Stored as written (SQLite), or rendered by PostgreSQL, with a space after ':' and ',' both ways.
        assert sizes() == [len("été".encode()) + len(json.dumps(geojson))]
        api = Api(stack, "demo")
        assert [d["id"] for d in api.list()] == ["old-1"]
        big = {**ROUTE, "properties": {"pad": "x" * 600}}
        _refused(api.create({"title": "new", "type": "route", "geojson": big}), "storage_quota_exceeded", "max_stored_bytes_per_user")
        assert api.create({"title": "new", "type": "route", "geojson": ROUTE}).status_code == 201
        assert len(sizes()) == 2
