"""Records and the storage interface shared by the SQLite and PostgreSQL implementations."""

from __future__ import annotations

import datetime
import json
import uuid
from typing import Any, Protocol

import attrs


def utc_now_iso() -> str:
    """The current time as ISO 8601 UTC with milliseconds, e.g. ``2026-01-02T03:04:05.678Z``."""
    now = datetime.datetime.now(datetime.UTC)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    """A fresh document identifier."""
    return str(uuid.uuid4())


def renderable(value: Any) -> bool:
    """True when ``value`` renders as strict JSON text in UTF-8 (no NaN/Infinity, no lone surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, TypeError, UnicodeEncodeError, RecursionError):
        return False
    return True


def decode_geojson(text: str) -> dict[str, Any] | None:
    """A stored GeoJSON text as an object, or None when it cannot be read or rendered.

    Rows written before input was checked (``NaN``, ``1e400`` in JSONB...) must not break a list.
    """
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return None
    return value if isinstance(value, dict) and renderable(value) else None


@attrs.frozen
class Document:
    """A saved route or isochrone of one user; ``geojson`` is None when the stored text is unreadable.

    ``seq`` orders the documents (newest has the highest) and anchors the pages of a list.
    """

    id: str
    owner: str
    title: str
    type: str
    date: str
    geojson: dict[str, Any] | None
    seq: int = 0

    def as_json(self) -> dict[str, Any]:
        """The API representation (the owner is implicit: it is the caller)."""
        return {"id": self.id, "title": self.title, "type": self.type, "date": self.date, "geojson": self.geojson}

    @staticmethod
    def geojson_text(geojson: dict[str, Any]) -> str:
        """Compact, strict JSON text for storage (NaN and Infinity raise ValueError)."""
        return json.dumps(geojson, separators=(",", ":"), allow_nan=False)


def stored_size(title: str, geojson_text: str) -> int:
    """Bytes a document counts against its owner's quota: its title and GeoJSON text in UTF-8."""
    return len(title.encode("utf-8")) + len(geojson_text.encode("utf-8"))


@attrs.frozen
class Quota:
    """What one owner may keep: a number of documents and a number of bytes (:func:`stored_size`)."""

    documents: int
    bytes: int


class QuotaExceeded(Exception):
    """A new document would take its owner past a :class:`Quota`; nothing was stored."""

    def __init__(self, kind: str, limit: int, used: int, size: int) -> None:
        super().__init__(f"{kind} quota exceeded")
        #: ``"documents"`` or ``"bytes"``.
        self.kind = kind
        self.limit = limit
        self.used = used
        self.size = size


@attrs.define
class SessionRecord:
    """A portal session: the IAM tokens kept server-side, keyed by the hash of the cookie value."""

    id_hash: str
    subject: str
    access_token: str
    refresh_token: str
    id_token: str
    access_expires_at: float
    refresh_expires_at: float
    created_at: float
    expires_at: float


#: The columns of the sessions table, in the order of :class:`SessionRecord`'s fields.
SESSION_COLUMNS = ", ".join(field.name for field in attrs.fields(SessionRecord))


def session_values(record: SessionRecord) -> tuple[Any, ...]:
    """A session's values in the order of :data:`SESSION_COLUMNS`."""
    return attrs.astuple(record)


@attrs.frozen
class LoginRequest:
    """A portal login in progress: state, PKCE verifier and nonce, bound to a pre-login cookie."""

    id_hash: str
    state: str
    code_verifier: str
    nonce: str
    app: str
    created_at: float


class Storage(Protocol):
    """What the backend needs from a database. Every method is safe to call concurrently."""

    async def open(self) -> None:
        """Connect and create the tables when missing."""

    async def close(self) -> None:
        """Release connections."""

    async def list_documents(self, owner: str, *, limit: int, before: int | None = None) -> list[Document]:
        """At most ``limit`` of the owner's documents, newest first, only those with ``seq < before`` when given."""

    async def add_document(self, owner: str, title: str, type_: str, geojson: dict[str, Any], *, quota: Quota) -> Document:
        """Store a new document and return it; :class:`QuotaExceeded` (nothing stored) past ``quota``.

        The check and the insert are one transaction per owner: concurrent saves cannot overshoot.
        """

    async def delete_document(self, owner: str, document_id: str) -> bool:
        """Delete one of the owner's documents; False when the owner has no such document."""

    async def save_session(self, record: SessionRecord) -> None:
        """Insert or replace a portal session."""

    async def get_session(self, id_hash: str) -> SessionRecord | None:
        """A portal session by cookie hash."""

    async def delete_session(self, id_hash: str) -> None:
        """Forget a portal session."""

    async def save_login_request(self, request: LoginRequest, *, expired_before: float, max_pending: int) -> None:
        """Remember a portal login in progress; first forget those created before ``expired_before``,
        and keep at most ``max_pending`` (the oldest are dropped)."""

    async def count_login_requests(self) -> int:
        """How many logins are in progress (tests, monitoring)."""

    async def take_login_request(self, id_hash: str) -> LoginRequest | None:
        """Return and delete a login in progress (single use)."""
