"""Storage of documents and portal sessions: SQLite by default, PostgreSQL when a DSN is set."""

from __future__ import annotations

from ..config import BackendSection
from .base import Document, LoginRequest, Quota, QuotaExceeded, SessionRecord, Storage


def open_storage(backend: BackendSection) -> Storage:
    """The storage the configuration asks for (not opened yet: call ``await storage.open()``)."""
    dsn = backend.dsn()
    if dsn:
        from .postgres import PostgresStorage

        return PostgresStorage(dsn)
    from .sqlite import SqliteStorage

    return SqliteStorage(backend.database)


__all__ = ["Document", "LoginRequest", "Quota", "QuotaExceeded", "SessionRecord", "Storage", "open_storage"]
