"""The OGC API – Routes' stored routes: one SQLite file shared by a service's workers, purged after ``keep`` seconds."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from roadkit.apis.ogcapi_routes.store import RouteStore


def test_two_workers_share_the_routes(tmp_path: Path) -> None:
    path = tmp_path / "routes.sqlite"
    first, second = RouteStore(path, 3600), RouteStore(path, 3600)
    route_id = first.add("r", "to the port", b'{"inputs":{}}', "successful", b'{"type":"FeatureCollection"}')
    item = second.get("r", route_id)
    assert item is not None and (item.name, item.status, item.answer) == ("to the port", "successful", b'{"type":"FeatureCollection"}')
    assert second.list("r") == [(route_id, "to the port")] and second.list("other") == []
    assert second.get("other", route_id) is None  # a route belongs to its resource's API
    assert second.delete("r", route_id) and first.get("r", route_id) is None and not first.delete("r", route_id)
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_routes_older_than_keep_are_gone(tmp_path: Path) -> None:
    store = RouteStore(tmp_path / "routes.sqlite", 0.3)
    old = store.add("r", None, b"{}", "successful", b"{}")
    time.sleep(0.4)
    assert store.get("r", old) is None and store.list("r") == []  # past its time: not served any more
    store.add("r", None, b"{}", "successful", b"{}")  # and removed from the file on the next write
    assert sqlite3.connect(tmp_path / "routes.sqlite").execute("SELECT count(*) FROM routes WHERE id = ?", (old,)).fetchone() == (0,)
