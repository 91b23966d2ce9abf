"""Stored routes: one SQLite file (WAL mode) that every worker of a service shares and a restart keeps."""

from __future__ import annotations

import secrets
import sqlite3
import time
from pathlib import Path

import attrs

SCHEMA = """
CREATE TABLE IF NOT EXISTS routes (
    id TEXT PRIMARY KEY,
    resource TEXT NOT NULL,
    name TEXT,
    created REAL NOT NULL,
    status TEXT NOT NULL,
    definition BLOB NOT NULL,
    answer BLOB
);
CREATE INDEX IF NOT EXISTS routes_by_resource ON routes (resource, created);
CREATE INDEX IF NOT EXISTS routes_by_age ON routes (created);
"""


@attrs.frozen
class Stored:
    id: str
    name: str | None
    #: ``accepted``, ``running``, ``successful`` or ``failed``.
    status: str
    definition: bytes
    #: The route as it was answered (``successful``) or the error (``failed``); None before.
    answer: bytes | None


class RouteStore:
    """The routes of a service's OGC APIs; on each write, routes older than ``keep`` seconds and the oldest
    beyond ``most`` are purged (a flood of requests fills no disk)."""

    def __init__(self, path: Path, keep: float, most: int = 10_000) -> None:
        self.path = path
        self.keep = keep
        self.most = most
        self._db: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        # Opened on first use, in the worker that uses it (a connection is not shared across processes).
        if self._db is None:
            db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            self._db = db
        return self._db

    def add(self, resource: str, name: str | None, definition: bytes, status: str, answer: bytes | None = None) -> str:
        db = self._connection()
        db.execute("DELETE FROM routes WHERE created < ?", (time.time() - self.keep,))
        route_id = secrets.token_urlsafe(12)
        db.execute(
            "INSERT INTO routes (id, resource, name, created, status, definition, answer) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (route_id, resource, name, time.time(), status, definition, answer),
        )
        db.execute("DELETE FROM routes WHERE id IN (SELECT id FROM routes ORDER BY created DESC LIMIT -1 OFFSET ?)", (self.most,))
        return route_id

    def update(self, resource: str, route_id: str, status: str, answer: bytes | None = None) -> bool:
        cursor = self._connection().execute(
            "UPDATE routes SET status = ?, answer = ? WHERE resource = ? AND id = ?", (status, answer, resource, route_id)
        )
        return cursor.rowcount > 0

    def get(self, resource: str, route_id: str) -> Stored | None:
        row = (
            self._connection()
            .execute(
                "SELECT id, name, status, definition, answer FROM routes WHERE resource = ? AND id = ? AND created >= ?",
                (resource, route_id, time.time() - self.keep),
            )
            .fetchone()
        )
        return None if row is None else Stored(*row)

    def list(self, resource: str) -> list[tuple[str, str | None]]:
        """(id, name) of the resource's routes, oldest first."""
        rows = self._connection().execute(
            "SELECT id, name FROM routes WHERE resource = ? AND created >= ? ORDER BY created, id", (resource, time.time() - self.keep)
        )
        return [(row[0], row[1]) for row in rows]

    def delete(self, resource: str, route_id: str) -> bool:
        cursor = self._connection().execute("DELETE FROM routes WHERE resource = ? AND id = ?", (resource, route_id))
        return cursor.rowcount > 0
