"""SQLite storage (the default): the standard library driver, run off the event loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .base import (
    SESSION_COLUMNS,
    Document,
    LoginRequest,
    Quota,
    QuotaExceeded,
    SessionRecord,
    decode_geojson,
    new_id,
    session_values,
    stored_size,
    utc_now_iso,
)

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    title TEXT NOT NULL,
    type TEXT NOT NULL,
    date TEXT NOT NULL,
    geojson TEXT NOT NULL,
    size INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS documents_owner ON documents (owner, seq);
CREATE TABLE IF NOT EXISTS sessions (
    id_hash TEXT PRIMARY KEY,
    subject TEXT NOT NULL,
    access_token TEXT NOT NULL,
    refresh_token TEXT NOT NULL,
    id_token TEXT NOT NULL,
    access_expires_at REAL NOT NULL,
    refresh_expires_at REAL NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS login_requests (
    id_hash TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    nonce TEXT NOT NULL,
    app TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


def _add_size_column(db: sqlite3.Connection) -> None:
    # Tables created before quotas had no size column: add it and count the rows already there.
    columns = {row[1] for row in db.execute("PRAGMA table_info(documents)")}
    if "size" not in columns:
        db.execute("ALTER TABLE documents ADD COLUMN size INTEGER NOT NULL DEFAULT 0")
        db.execute("UPDATE documents SET size = length(CAST(title AS BLOB)) + length(CAST(geojson AS BLOB))")


class SqliteStorage:
    """One connection guarded by a lock; each call runs in a worker thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    async def _run(self, func: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            assert self._db is not None, "storage is not open"
            with self._lock, self._db:
                return func(self._db)

        return await asyncio.to_thread(call)

    async def open(self) -> None:
        """Open (creating the file and tables when missing)."""
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL" if self.path != ":memory:" else "PRAGMA journal_mode=MEMORY")
        await self._run(lambda db: db.executescript(SCHEMA))
        await self._run(_add_size_column)

    async def close(self) -> None:
        """Close the connection."""
        if self._db is not None:
            self._db.close()
            self._db = None

    async def list_documents(self, owner: str, *, limit: int, before: int | None = None) -> list[Document]:
        """At most ``limit`` of the owner's documents, newest first (``seq < before`` when given)."""
        rows = await self._run(
            lambda db: db.execute(
                "SELECT id, owner, title, type, date, geojson, seq FROM documents WHERE owner = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                (owner, before if before is not None else 2**63 - 1, limit),
            ).fetchall()
        )
        return [Document(id=r[0], owner=r[1], title=r[2], type=r[3], date=r[4], geojson=decode_geojson(r[5]), seq=r[6]) for r in rows]

    async def add_document(self, owner: str, title: str, type_: str, geojson: dict[str, Any], *, quota: Quota) -> Document:
        """Insert a document unless it takes the owner past ``quota`` (the lock makes check and insert one step)."""
        text = Document.geojson_text(geojson)
        size = stored_size(title, text)
        document_id, date = new_id(), utc_now_iso()

        def add(db: sqlite3.Connection) -> int:
            count, used = db.execute("SELECT count(*), coalesce(sum(size), 0) FROM documents WHERE owner = ?", (owner,)).fetchone()
            if count >= quota.documents:
                raise QuotaExceeded("documents", quota.documents, count, 1)
            if used + size > quota.bytes:
                raise QuotaExceeded("bytes", quota.bytes, used, size)
            cursor = db.execute(
                "INSERT INTO documents (id, owner, title, type, date, geojson, size) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (document_id, owner, title, type_, date, text, size),
            )
            return int(cursor.lastrowid or 0)

        seq = await self._run(add)
        return Document(id=document_id, owner=owner, title=title, type=type_, date=date, geojson=geojson, seq=seq)

    async def delete_document(self, owner: str, document_id: str) -> bool:
        """Delete when it is the owner's."""
        count = await self._run(lambda db: db.execute("DELETE FROM documents WHERE owner = ? AND id = ?", (owner, document_id)).rowcount)
        return count > 0

    async def save_session(self, record: SessionRecord) -> None:
        """Insert or replace a session."""
        values = session_values(record)
        await self._run(
            lambda db: db.execute(f"INSERT OR REPLACE INTO sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
        )

    async def get_session(self, id_hash: str) -> SessionRecord | None:
        """A session by cookie hash."""
        row = await self._run(lambda db: db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id_hash = ?", (id_hash,)).fetchone())
        return SessionRecord(*row) if row else None

    async def delete_session(self, id_hash: str) -> None:
        """Forget a session."""
        await self._run(lambda db: db.execute("DELETE FROM sessions WHERE id_hash = ?", (id_hash,)))

    async def save_login_request(self, request: LoginRequest, *, expired_before: float, max_pending: int) -> None:
        """Purge expired logins, remember this one, drop the oldest past ``max_pending`` (one transaction)."""

        def save(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM login_requests WHERE created_at < ?", (expired_before,))
            db.execute(
                "INSERT OR REPLACE INTO login_requests (id_hash, state, code_verifier, nonce, app, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (request.id_hash, request.state, request.code_verifier, request.nonce, request.app, request.created_at),
            )
            db.execute(
                "DELETE FROM login_requests WHERE id_hash IN (SELECT id_hash FROM login_requests "
                "ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)",
                (max_pending,),
            )

        await self._run(save)

    async def count_login_requests(self) -> int:
        """How many logins are in progress."""
        count: int = await self._run(lambda db: db.execute("SELECT count(*) FROM login_requests").fetchone()[0])
        return count

    async def take_login_request(self, id_hash: str) -> LoginRequest | None:
        """Return and delete a login in progress."""

        def take(db: sqlite3.Connection) -> Any:
            row = db.execute(
                "SELECT id_hash, state, code_verifier, nonce, app, created_at FROM login_requests WHERE id_hash = ?",
                (id_hash,),
            ).fetchone()
            db.execute("DELETE FROM login_requests WHERE id_hash = ?", (id_hash,))
            return row

        row = await self._run(take)
        return LoginRequest(*row) if row else None
