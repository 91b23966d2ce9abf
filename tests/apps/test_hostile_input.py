"""The backend against a hostile client: non-finite numbers, deep nesting, lone surrogates,
unreadable stored rows, and anonymous logins that would grow the database; SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from .apps_support import Stack, running_stack
from .test_documents import ROUTE, Api
from .test_portal import portal_login


class Db:
    """Direct access to the backend's database (SQLite file or PostgreSQL DSN), behind its back."""

    def __init__(self, sqlite_path: Path | None = None, dsn: str | None = None) -> None:
        self.sqlite_path, self.dsn = sqlite_path, dsn

    def execute(self, sql_sqlite: str, sql_pg: str, *args: object) -> list[tuple[object, ...]]:
        if self.sqlite_path is not None:
            with sqlite3.connect(self.sqlite_path) as db:
                return [tuple(row) for row in db.execute(sql_sqlite, args).fetchall()]

        async def run() -> list[tuple[object, ...]]:
            conn = await asyncpg.connect(self.dsn)
            try:
                return [tuple(row.values()) for row in await conn.fetch(sql_pg, *args)]
            finally:
                await conn.close()

        return asyncio.run(run())

    def count(self, table: str) -> int:
        return int(self.execute(f"SELECT count(*) FROM {table}", f"SELECT count(*) FROM {table}")[0][0])


@pytest.fixture(params=["sqlite", "postgresql"])
def db_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Stack, Db]]:
    """The stack on SQLite, then on PostgreSQL, with a handle on its database; at most 5 pending logins."""
    overrides: dict[str, object] = {"portal": {"max_pending_logins": 5}}
    if request.param == "postgresql":
        dsn = request.getfixturevalue("fresh_pg_dsn")
        overrides["backend"] = {"postgres_dsn": dsn}
        db = Db(dsn=dsn)
    else:
        path = tmp_path / "client.sqlite3"
        overrides["backend"] = {"database": str(path)}
        db = Db(sqlite_path=path)
    with running_stack(overrides) as stack:
        yield stack, db


def raw_post(api: Api, body: bytes) -> httpx.Response:
    return httpx.post(f"{api.base}/documents", headers={**api.headers, "Content-Type": "application/json"}, content=body)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_are_refused_and_nothing_is_stored(db_stack: tuple[Stack, Db], number: str) -> None:
    stack, db = db_stack
    api = Api(stack, "demo")
    body = (
        '{"title": "t", "type": "route", "geojson": {"type": "Feature", "properties": {}, '
        f'"geometry": {{"type": "LineString", "coordinates": [[7.41, 43.73], [{number}, 43.74]]}}}}}}'
    )
    response = raw_post(api, body.encode())
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith("body:")
    assert db.count("documents") == 0
    assert api.list() == []


def test_an_unrenderable_stored_document_does_not_break_the_list(db_stack: tuple[Stack, Db], http: httpx.Client) -> None:
    stack, db = db_stack
    api = Api(stack, "demo")
    good = api.create({"title": "good", "type": "route", "geojson": ROUTE}).json()
    bad = api.create({"title": "bad", "type": "route", "geojson": ROUTE}).json()
    # A row written behind the API's back (or before input was checked): NaN in SQLite (JSONB refuses
    # it), nesting deeper than Python's parser goes in JSONB (valid there).
    deep = '{"type":"Point","coordinates":' + "[" * 3000 + "]" * 3000 + "}"
    db.execute(
        "UPDATE documents SET geojson = ? WHERE id = ?",
        "UPDATE documents SET geojson = $1::jsonb WHERE id = $2",
        '{"type":"Point","coordinates":[NaN,1]}' if db.sqlite_path else deep,
        bad["id"],
    )
    listed = api.list()  # local mode (bearer token)
    assert [(d["id"], d["geojson"]) for d in listed] == [(bad["id"], None), (good["id"], ROUTE)]
    # Remote mode: the same user through the portal's cookie sees the same list.
    assert portal_login(stack, http).headers["location"].endswith("?success=1")
    remote = http.get(f"{stack.backend_url}/documents")
    assert remote.status_code == 200 and [d["id"] for d in remote.json()] == [bad["id"], good["id"]]
    assert http.delete(f"{stack.backend_url}/documents/{bad['id']}").status_code == 204
    assert [d["id"] for d in api.list()] == [good["id"]]


def test_deep_nesting_is_a_400_without_a_traceback(stack: Stack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    api = Api(stack, "demo")
    for depth in (100, 5000, 100_000):
        deep = b'{"title": "t", "type": "route", "geojson": ' + b"[" * depth + b"]" * depth + b"}"
        response = raw_post(api, deep)
        assert response.status_code == 400, (depth, response.text)
        assert "nested deeper than" in response.json()["error"]["message"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []
    assert api.list() == []


def test_lone_surrogates_are_a_400_naming_the_field(stack: Stack) -> None:
    api = Api(stack, "demo")
    title = raw_post(api, b'{"title": "a\\ud800b", "type": "route", "geojson": {"type": "Point", "coordinates": [1, 2]}}')
    assert title.status_code == 400 and title.json()["error"]["message"].startswith("title:"), title.text
    nested = raw_post(
        api, b'{"title": "t", "type": "route", "geojson": {"type": "Feature", "geometry": null, "properties": {"name": "\\udfff"}}}'
    )
    assert nested.status_code == 400 and nested.json()["error"]["message"].startswith("geojson.properties.name:")
    key = raw_post(api, b'{"title": "t", "type": "route", "geojson": {"type": "Feature", "geometry": null, "properties": {"\\ud800": 1}}}')
    assert key.status_code == 400, key.text
    # A valid pair is text (U+1F600), accepted.
    pair = raw_post(api, b'{"title": "smile \\ud83d\\ude00", "type": "route", "geojson": {"type": "Point", "coordinates": [1, 2]}}')
    assert pair.status_code == 201 and pair.json()["title"] == "smile \U0001f600"


def test_anonymous_logins_are_purged_and_bounded(db_stack: tuple[Stack, Db]) -> None:
    stack, db = db_stack
    with httpx.Client() as anonymous:
        for _ in range(8):
            assert anonymous.get(f"{stack.backend_url}/login", params={"app": "roadkit"}).status_code == 302
        assert db.count("login_requests") == 5  # portal.max_pending_logins
        newest = db.execute("SELECT max(created_at) FROM login_requests", "SELECT max(created_at) FROM login_requests")[0][0]
        stack.advance(601)  # past portal.login_timeout
        assert anonymous.get(f"{stack.backend_url}/login", params={"app": "roadkit"}).status_code == 302
    rows = db.execute("SELECT created_at FROM login_requests", "SELECT created_at FROM login_requests")
    assert len(rows) == 1 and float(rows[0][0]) > float(newest)  # type: ignore[arg-type]
