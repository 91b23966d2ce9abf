"""In-memory state of the development IAM: SSO sessions, login transactions and codes.

Everything lives in one process and disappears on restart, which is what a development and
test IAM wants. Times come from the shared :class:`~roadkit_deviam.clock.Clock`.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

import attrs

from .clock import Clock
from .config import IamConfig


@attrs.define
class ClientSession:
    """What one client holds inside a user session (Keycloak's client session)."""

    client_id: str
    current_refresh_jti: str | None = None
    refresh_use_count: int = 0
    timestamp: int = 0
    used_refresh_jtis: set[str] = attrs.Factory(set)


@attrs.define
class UserSession:
    """An SSO session (Keycloak's user session); its id is the ``session_state``/``sid``."""

    id: str
    user_id: str
    started: float
    last_activity: float
    auth_time: int
    clients: dict[str, ClientSession] = attrs.Factory(dict)


@attrs.define
class LoginTransaction:
    """A pending authorization request waiting for the login form (Keycloak's auth session tab)."""

    tab_id: str
    browser_id: str
    params: dict[str, str]
    created: float


@attrs.define
class AuthorizationCode:
    """A single-use authorization code and what it was issued for."""

    code: str
    client_id: str
    redirect_uri: str
    session_id: str
    user_id: str
    scope: str
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    expires_at: float


class IamState:
    """All mutable state; handlers run on one event loop and never await between reads and writes."""

    def __init__(self, config: IamConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.sessions: dict[str, UserSession] = {}
        self.transactions: dict[str, LoginTransaction] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        #: Codes already exchanged -> (session id, client id), so a replay can detach the client session.
        self.used_codes: dict[str, tuple[str, str]] = {}
        self.revoked_access_jtis: set[str] = set()

    # -- SSO sessions -------------------------------------------------------------------
    def create_session(self, user_id: str) -> UserSession:
        """Start an SSO session for a user who just logged in."""
        now = self.clock.now()
        session = UserSession(id=str(uuid.uuid4()), user_id=user_id, started=now, last_activity=now, auth_time=int(now))
        self.sessions[session.id] = session
        return session

    def active_session(self, session_id: str | None) -> UserSession | None:
        """The session if it exists and has passed neither its idle nor its max lifetime."""
        if not session_id:
            return None
        session = self.sessions.get(session_id)
        if session is None:
            return None
        now = self.clock.now()
        lifetimes = self.config.lifetimes
        if now - session.last_activity > lifetimes.sso_session_idle or now - session.started > lifetimes.sso_session_max:
            self.sessions.pop(session_id, None)
            return None
        return session

    def session_expiry(self, session: UserSession) -> int:
        """When the session ends if nothing happens (refresh tokens expire then)."""
        lifetimes = self.config.lifetimes
        return int(min(session.last_activity + lifetimes.sso_session_idle, session.started + lifetimes.sso_session_max))

    def touch(self, session: UserSession) -> None:
        """Record activity, which pushes the idle timeout back."""
        session.last_activity = self.clock.now()

    def end_session(self, session_id: str) -> bool:
        """End an SSO session; its codes and refresh tokens stop working."""
        removed = self.sessions.pop(session_id, None) is not None
        for code in [c for c in self.codes.values() if c.session_id == session_id]:
            self.codes.pop(code.code, None)
        return removed

    def end_sessions_of(self, user_id: str | None) -> int:
        """End every session of a user, or of everyone when ``user_id`` is None."""
        ids = [s.id for s in self.sessions.values() if user_id is None or s.user_id == user_id]
        for session_id in ids:
            self.end_session(session_id)
        return len(ids)

    # -- login transactions --------------------------------------------------------------
    def create_transaction(self, browser_id: str, params: dict[str, str]) -> LoginTransaction:
        """Remember an authorization request while the login form is shown."""
        self._expire_transactions()
        tx = LoginTransaction(tab_id=secrets.token_urlsafe(16), browser_id=browser_id, params=params, created=self.clock.now())
        self.transactions[tx.tab_id] = tx
        return tx

    def take_transaction(self, tab_id: str) -> LoginTransaction | None:
        """Look up a pending login that has not timed out (it stays until it completes)."""
        self._expire_transactions()
        return self.transactions.get(tab_id)

    def _expire_transactions(self) -> None:
        limit = self.clock.now() - self.config.lifetimes.login_timeout
        for tab_id in [t.tab_id for t in self.transactions.values() if t.created < limit]:
            self.transactions.pop(tab_id, None)

    # -- authorization codes -------------------------------------------------------------
    def issue_code(self, **fields: Any) -> AuthorizationCode:
        """Create a single-use code valid for the configured access-code lifespan."""
        code = AuthorizationCode(
            code=f"{secrets.token_urlsafe(24)}.{uuid.uuid4()}",
            expires_at=self.clock.now() + self.config.lifetimes.access_code,
            **fields,
        )
        self.codes[code.code] = code
        return code

    def consume_code(self, value: str) -> AuthorizationCode | None:
        """Remove and return a code; a second call with the same value returns None.

        A replayed code detaches the client session it produced, as Keycloak does, so tokens
        obtained with a stolen-and-replayed code stop refreshing.
        """
        code = self.codes.pop(value, None)
        if code is not None:
            self.used_codes[value] = (code.session_id, code.client_id)
            return code
        if value in self.used_codes:
            session_id, client_id = self.used_codes[value]
            session = self.sessions.get(session_id)
            if session is not None:
                session.clients.pop(client_id, None)
        return None

    def diagnostics(self) -> dict[str, Any]:
        """Counts and ids for ``GET /_testing/state`` (never tokens or codes)."""
        return {
            "clock_offset": self.clock.offset,
            "sessions": [
                {
                    "id": s.id,
                    "user_id": s.user_id,
                    "username": (u.username if (u := self.config.user_by_id(s.user_id)) else None),
                    "clients": sorted(s.clients),
                }
                for s in self.sessions.values()
            ],
            "pending_logins": len(self.transactions),
            "pending_codes": len(self.codes),
        }
