"""Portal sessions: IAM tokens kept server-side behind an opaque cookie, refreshed on demand.

The cookie holds 32 random bytes; the database stores only their SHA-256, so a copy of the
database does not give working cookies. Calls to the IAM use the confidential client with
HTTP Basic authentication; the secret never leaves the server.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import aiohttp

from .config import ClientConfig
from .oidc import IamUnavailable, OidcProvider
from .storage import SessionRecord, Storage

log = logging.getLogger("roadkit_client.portal")

#: Refresh this many seconds before the access token expires.
REFRESH_MARGIN = 30.0


class TokenRequestFailed(Exception):
    """The IAM refused a token request; ``error`` is the OAuth error code (never a token)."""

    def __init__(self, error: str, status: int) -> None:
        super().__init__(f"{error} (HTTP {status})")
        self.error = error
        self.status = status


def hash_cookie(value: str) -> str:
    """The stored key of a cookie value."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class PortalClient:
    """Token, logout and revocation requests of the confidential portal client."""

    def __init__(self, config: ClientConfig, provider: OidcProvider, http: aiohttp.ClientSession) -> None:
        self.config = config
        self.provider = provider
        self.http = http

    @property
    def _authorization(self) -> str:
        # RFC 6749 §2.3.1: form-urlencode both parts, then HTTP Basic.
        raw = f"{quote(self.config.portal.client_id, safe='')}:{quote(self.config.portal.secret(), safe='')}"
        return "Basic " + base64.b64encode(raw.encode("utf-8")).decode("ascii")

    async def _post(self, endpoint: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        url = await self.provider.endpoint(endpoint)
        timeout = aiohttp.ClientTimeout(total=self.config.iam.timeout)
        try:
            headers = {"Accept": "application/json", "Authorization": self._authorization}
            async with self.http.post(url, data=form, timeout=timeout, headers=headers) as response:
                text = await response.text()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise IamUnavailable(f"POST {endpoint}: {exc.__class__.__name__}") from None
        try:
            body = json.loads(text) if text else {}
        except ValueError:
            body = {}
        return status, body if isinstance(body, dict) else {}

    async def token(self, form: dict[str, str]) -> dict[str, Any]:
        """POST the token endpoint; returns the JSON body or raises :class:`TokenRequestFailed`."""
        status, body = await self._post("token_endpoint", form)
        if status != 200 or not isinstance(body.get("access_token"), str):
            raise TokenRequestFailed(str(body.get("error", "invalid_response")), status)
        return body

    async def exchange_code(self, code: str, redirect_uri: str, code_verifier: str) -> dict[str, Any]:
        """Authorization code grant with PKCE."""
        return await self.token(
            {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "code_verifier": code_verifier}
        )

    async def refresh(self, refresh_token: str) -> dict[str, Any]:
        """Refresh token grant (the IAM may rotate the refresh token)."""
        return await self.token({"grant_type": "refresh_token", "refresh_token": refresh_token})

    async def end_iam_session(self, refresh_token: str) -> None:
        """End the IAM session: Keycloak's back-channel logout, then revocation as a fallback."""
        try:
            status, _ = await self._post("end_session_endpoint", {"refresh_token": refresh_token})
            if status in (200, 204):
                return
            metadata = await self.provider.metadata()
            if metadata.get("revocation_endpoint"):
                await self._post("revocation_endpoint", {"token": refresh_token, "token_type_hint": "refresh_token"})
        except IamUnavailable as exc:
            log.warning("could not end the IAM session: %s", exc)


class PortalSessions:
    """Create, read (refreshing when needed) and end portal sessions."""

    def __init__(self, config: ClientConfig, storage: Storage, client: PortalClient, now: Callable[[], float] = time.time) -> None:
        self.config = config
        self.storage = storage
        self.client = client
        self.now = now
        self._locks: dict[str, asyncio.Lock] = {}

    def _record(self, id_hash: str, subject: str, tokens: dict[str, Any], created_at: float, previous_id_token: str = "") -> SessionRecord:
        now = self.now()
        refresh_in = tokens.get("refresh_expires_in")
        refresh_expires = now + float(refresh_in) if isinstance(refresh_in, (int, float)) and refresh_in > 0 else float("inf")
        return SessionRecord(
            id_hash=id_hash,
            subject=subject,
            access_token=str(tokens["access_token"]),
            refresh_token=str(tokens.get("refresh_token") or ""),
            id_token=str(tokens.get("id_token") or previous_id_token),
            access_expires_at=now + float(tokens.get("expires_in") or 60),
            refresh_expires_at=min(refresh_expires, created_at + self.config.portal.session_lifetime),
            created_at=created_at,
            expires_at=created_at + self.config.portal.session_lifetime,
        )

    async def create(self, subject: str, tokens: dict[str, Any]) -> str:
        """Store a new session for ``tokens``; returns the cookie value."""
        cookie = secrets.token_urlsafe(32)
        await self.storage.save_session(self._record(hash_cookie(cookie), subject, tokens, self.now()))
        return cookie

    async def access_token(self, cookie: str) -> str | None:
        """A valid access token for the session, refreshed when (nearly) expired; None when it is over."""
        id_hash = hash_cookie(cookie)
        record = await self.storage.get_session(id_hash)
        if record is None:
            return None
        now = self.now()
        if now >= record.expires_at:
            await self.storage.delete_session(id_hash)
            return None
        if now < record.access_expires_at - REFRESH_MARGIN:
            return record.access_token
        # One refresh at a time per session: with rotation, a second use of the same refresh
        # token would make Keycloak end the client session.
        lock = self._locks.setdefault(id_hash, asyncio.Lock())
        async with lock:
            record = await self.storage.get_session(id_hash)
            if record is None:
                return None
            if self.now() < record.access_expires_at - REFRESH_MARGIN:
                return record.access_token
            if not record.refresh_token or self.now() >= record.refresh_expires_at:
                await self.storage.delete_session(id_hash)
                return None
            try:
                tokens = await self.client.refresh(record.refresh_token)
            except TokenRequestFailed as failure:
                log.info("portal session ended by the IAM on refresh: %s", failure.error)
                await self.storage.delete_session(id_hash)
                return None
            updated = self._record(id_hash, record.subject, tokens, record.created_at, record.id_token)
            await self.storage.save_session(updated)
            return updated.access_token

    async def end(self, cookie: str) -> None:
        """End the IAM session and forget the portal session."""
        id_hash = hash_cookie(cookie)
        record = await self.storage.get_session(id_hash)
        await self.storage.delete_session(id_hash)
        self._locks.pop(id_hash, None)
        if record is not None and record.refresh_token:
            await self.client.end_iam_session(record.refresh_token)
