"""Keycloak-shaped tokens: RS256 access, ID and refresh tokens, and the token endpoint response."""

from __future__ import annotations

import base64
import hashlib
import uuid
from typing import Any

from .config import Client, IamConfig, User
from .http import allowed_origins
from .keys import KeyRing
from .state import ClientSession, IamState, UserSession

#: Scopes this realm knows; ``profile`` and ``email`` are default client scopes (always granted).
KNOWN_SCOPES = ("openid", "profile", "email", "roles", "web-origins", "acr", "basic", "address", "phone")
DEFAULT_SCOPES = ("profile", "email")


def unknown_scopes(requested: str) -> list[str]:
    """Requested scope values this realm does not define."""
    return [s for s in requested.split() if s not in KNOWN_SCOPES]


def granted_scope(requested: str) -> str:
    """The ``scope`` string Keycloak returns: openid first when asked, then the default scopes."""
    asked = requested.split()
    granted = (["openid"] if "openid" in asked else []) + list(DEFAULT_SCOPES)
    granted += [s for s in asked if s not in granted and s in ("address", "phone")]
    return " ".join(granted)


def _audience(values: list[str]) -> str | list[str]:
    # Keycloak writes a single audience as a string and several as an array.
    return values[0] if len(values) == 1 else values


def _at_hash(access_token: str) -> str:
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest[: len(digest) // 2]).rstrip(b"=").decode("ascii")


class TokenIssuer:
    """Builds and signs tokens for a user session and client, with the realm's lifetimes."""

    def __init__(self, config: IamConfig, state: IamState, keys: KeyRing) -> None:
        self.config = config
        self.state = state
        self.keys = keys

    def _profile_claims(self, user: User) -> dict[str, Any]:
        return {
            "email_verified": user.email_verified,
            "name": user.name,
            "preferred_username": user.username,
            "given_name": user.first_name,
            "family_name": user.last_name,
            "email": user.email,
        }

    def access_token(self, user: User, client: Client, session: UserSession, scope: str) -> tuple[str, dict[str, Any]]:
        """A signed access token and its claims."""
        now = self.state.clock.now_int()
        realm = self.config.realm
        claims: dict[str, Any] = {
            "exp": now + self.config.lifetimes.access_token,
            "iat": now,
            "auth_time": session.auth_time,
            "jti": str(uuid.uuid4()),
            "iss": self.config.issuer,
            "aud": _audience(["account", *client.audiences]),
            "sub": user.id,
            "typ": "Bearer",
            "azp": client.client_id,
            "sid": session.id,
            "session_state": session.id,
            "acr": "1",
            "allowed-origins": sorted(allowed_origins(client.web_origins, client.redirect_uris)),
            "realm_access": {"roles": [f"default-roles-{realm}", "offline_access", "uma_authorization", *user.roles]},
            "resource_access": {"account": {"roles": ["manage-account", "manage-account-links", "view-profile"]}},
            "scope": scope,
            **self._profile_claims(user),
        }
        return self.keys.sign(claims), claims

    def id_token(self, user: User, client: Client, session: UserSession, access_token: str, nonce: str | None) -> str:
        """A signed ID token for ``client`` (``aud`` = client id)."""
        now = self.state.clock.now_int()
        claims: dict[str, Any] = {
            "exp": now + self.config.lifetimes.access_token,
            "iat": now,
            "auth_time": session.auth_time,
            "jti": str(uuid.uuid4()),
            "iss": self.config.issuer,
            "aud": client.client_id,
            "sub": user.id,
            "typ": "ID",
            "azp": client.client_id,
            "sid": session.id,
            "session_state": session.id,
            "at_hash": _at_hash(access_token),
            "acr": "1",
            **self._profile_claims(user),
        }
        if nonce:
            claims["nonce"] = nonce
        return self.keys.sign(claims)

    def refresh_token(self, user: User, client: Client, session: UserSession, scope: str, nonce: str | None) -> tuple[str, dict[str, Any]]:
        """A signed refresh token that expires with the SSO session's idle/max limit."""
        now = self.state.clock.now_int()
        claims: dict[str, Any] = {
            "exp": self.state.session_expiry(session),
            "iat": now,
            "jti": str(uuid.uuid4()),
            "iss": self.config.issuer,
            "aud": self.config.issuer,
            "sub": user.id,
            "typ": "Refresh",
            "azp": client.client_id,
            "sid": session.id,
            "session_state": session.id,
            "scope": scope,
        }
        if nonce:
            claims["nonce"] = nonce
        return self.keys.sign(claims), claims

    def token_response(self, user: User, client: Client, session: UserSession, scope: str, nonce: str | None) -> dict[str, Any]:
        """The token endpoint's JSON body, field for field like Keycloak's."""
        self.state.touch(session)
        access, access_claims = self.access_token(user, client, session, scope)
        refresh, refresh_claims = self.refresh_token(user, client, session, scope, nonce)
        client_session = session.clients.setdefault(client.client_id, ClientSession(client_id=client.client_id))
        client_session.timestamp = access_claims["iat"]
        now = access_claims["iat"]
        body: dict[str, Any] = {
            "access_token": access,
            "expires_in": access_claims["exp"] - now,
            "refresh_expires_in": max(0, refresh_claims["exp"] - now),
            "refresh_token": refresh,
            "token_type": "Bearer",
        }
        if "openid" in scope.split():
            body["id_token"] = self.id_token(user, client, session, access, nonce)
        body.update({"not-before-policy": 0, "session_state": session.id, "scope": scope})
        return body
