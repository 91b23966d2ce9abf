"""PostgreSQL storage (``backend.postgres_dsn``) with an asyncpg connection pool."""

from __future__ import annotations

from typing import Any

import asyncpg

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

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    title TEXT NOT NULL,
    type TEXT NOT NULL,
    date TEXT NOT NULL,
    geojson JSONB NOT NULL,
    size BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS documents_owner ON documents (owner, seq);
CREATE TABLE IF NOT EXISTS sessions (
    id_hash TEXT PRIMARY KEY,
    subject TEXT NOT NULL,
    access_token TEXT NOT NULL,
    refresh_token TEXT NOT NULL,
    id_token TEXT NOT NULL,
    access_expires_at DOUBLE PRECISION NOT NULL,
    refresh_expires_at DOUBLE PRECISION NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS login_requests (
    id_hash TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    nonce TEXT NOT NULL,
    app TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
"""


class PostgresStorage:
    """Documents in ``documents``, portal sessions in ``sessions``, logins in progress in ``login_requests``."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._pool: asyncpg.Pool | None = None

    @property
    def pool(self) -> asyncpg.Pool:
        """The open pool."""
        assert self._pool is not None, "storage is not open"
        return self._pool

    async def open(self) -> None:
        """Create the pool and the tables."""
        self._pool = await asyncpg.create_pool(self.dsn, min_size=1, max_size=5)
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(SCHEMA)
            # Tables created before quotas had no size column: add it and count the rows already there.
            exists = await conn.fetchval(
                "SELECT 1 FROM information_schema.columns WHERE table_name = 'documents' AND column_name = 'size' "
                "AND table_schema = current_schema()"
            )
            if not exists:
                await conn.execute("ALTER TABLE documents ADD COLUMN size BIGINT NOT NULL DEFAULT 0")
                await conn.execute("UPDATE documents SET size = octet_length(title) + octet_length(geojson::text)")

    async def close(self) -> None:
        """Close the pool."""
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def list_documents(self, owner: str, *, limit: int, before: int | None = None) -> list[Document]:
        """At most ``limit`` of the owner's documents, newest first (``seq < before`` when given)."""
        rows = await self.pool.fetch(
            "SELECT id, owner, title, type, date, geojson::text AS geojson, seq FROM documents "
            "WHERE owner = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
            owner,
            before if before is not None else 2**63 - 1,
            limit,
        )
        return [
            Document(
                id=r["id"],
                owner=r["owner"],
                title=r["title"],
                type=r["type"],
                date=r["date"],
                geojson=decode_geojson(r["geojson"]),
                seq=r["seq"],
            )
            for r in rows
        ]

    async def add_document(self, owner: str, title: str, type_: str, geojson: dict[str, Any], *, quota: Quota) -> Document:
        """Insert a document unless it takes the owner past ``quota``.

        A transaction-scoped advisory lock on the owner serialises that owner's saves, so that
        concurrent ones cannot all pass the check.
        """
        text = Document.geojson_text(geojson)
        size = stored_size(title, text)
        document_id, date = new_id(), utc_now_iso()
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('roadkit-documents:' || $1, 0))", owner)
            row = await conn.fetchrow("SELECT count(*) AS count, coalesce(sum(size), 0) AS used FROM documents WHERE owner = $1", owner)
            count, used = int(row["count"]), int(row["used"])
            if count >= quota.documents:
                raise QuotaExceeded("documents", quota.documents, count, 1)
            if used + size > quota.bytes:
                raise QuotaExceeded("bytes", quota.bytes, used, size)
            seq = await conn.fetchval(
                "INSERT INTO documents (id, owner, title, type, date, geojson, size) "
                "VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7) RETURNING seq",
                document_id,
                owner,
                title,
                type_,
                date,
                text,
                size,
            )
        return Document(id=document_id, owner=owner, title=title, type=type_, date=date, geojson=geojson, seq=int(seq))

    async def delete_document(self, owner: str, document_id: str) -> bool:
        """Delete when it is the owner's."""
        status: str = await self.pool.execute("DELETE FROM documents WHERE owner = $1 AND id = $2", owner, document_id)
        return status != "DELETE 0"

    async def save_session(self, record: SessionRecord) -> None:
        """Insert or replace a session."""
        await self.pool.execute(
            f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
            "ON CONFLICT (id_hash) DO UPDATE SET subject = EXCLUDED.subject, access_token = EXCLUDED.access_token, "
            "refresh_token = EXCLUDED.refresh_token, id_token = EXCLUDED.id_token, "
            "access_expires_at = EXCLUDED.access_expires_at, refresh_expires_at = EXCLUDED.refresh_expires_at, "
            "created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at",
            *session_values(record),
        )

    async def get_session(self, id_hash: str) -> SessionRecord | None:
        """A session by cookie hash."""
        row = await self.pool.fetchrow(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id_hash = $1", id_hash)
        return SessionRecord(*row.values()) if row else None

    async def delete_session(self, id_hash: str) -> None:
        """Forget a session."""
        await self.pool.execute("DELETE FROM sessions WHERE id_hash = $1", id_hash)

    async def save_login_request(self, request: LoginRequest, *, expired_before: float, max_pending: int) -> None:
        """Purge expired logins, remember this one, drop the oldest past ``max_pending`` (one transaction)."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("DELETE FROM login_requests WHERE created_at < $1", expired_before)
            await conn.execute(
                "INSERT INTO login_requests (id_hash, state, code_verifier, nonce, app, created_at) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id_hash) DO NOTHING",
                request.id_hash,
                request.state,
                request.code_verifier,
                request.nonce,
                request.app,
                request.created_at,
            )
            await conn.execute(
                "DELETE FROM login_requests WHERE id_hash IN (SELECT id_hash FROM login_requests "
                "ORDER BY created_at DESC, id_hash DESC OFFSET $1)",
                max_pending,
            )

    async def count_login_requests(self) -> int:
        """How many logins are in progress."""
        count: int = await self.pool.fetchval("SELECT count(*) FROM login_requests")
        return count

    async def take_login_request(self, id_hash: str) -> LoginRequest | None:
        """Return and delete a login in progress (one statement, so two callers cannot both get it)."""
        row = await self.pool.fetchrow(
            "DELETE FROM login_requests WHERE id_hash = $1 RETURNING id_hash, state, code_verifier, nonce, app, created_at",
            id_hash,
        )
        return LoginRequest(*row.values()) if row else None
