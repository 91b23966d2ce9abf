"""Who is calling: a bearer access token (local mode) or the portal's session cookie (remote mode)."""

from __future__ import annotations

from typing import Any

import attrs
from starlette.requests import Request

from .config import ClientConfig
from .errors import ApiError
from .oidc import IamUnavailable, InvalidToken, OidcProvider
from .sessions import PortalSessions

SESSION_COOKIE = "roadkit_session"


@attrs.frozen
class Principal:
    """The authenticated user, from a validated access token's claims."""

    subject: str
    username: str
    email: str
    first_name: str
    last_name: str
    name: str

    @classmethod
    def from_claims(cls, claims: dict[str, Any]) -> Principal:
        """Build from Keycloak's standard profile claims."""
        first, last = str(claims.get("given_name") or ""), str(claims.get("family_name") or "")
        return cls(
            subject=str(claims["sub"]),
            username=str(claims.get("preferred_username") or ""),
            email=str(claims.get("email") or ""),
            first_name=first,
            last_name=last,
            name=str(claims.get("name") or " ".join(p for p in (first, last) if p)),
        )

    def profile(self) -> dict[str, str]:
        """The ``GET /me`` body."""
        return {
            "id": self.subject,
            "username": self.username,
            "email": self.email,
            "firstName": self.first_name,
            "lastName": self.last_name,
            "name": self.name,
        }


def _challenge(realm: str, error: str | None = None, description: str | None = None) -> dict[str, str]:
    value = f'Bearer realm="{realm}"'
    if error:
        value += f', error="{error}"'
    if description:
        value += f', error_description="{description}"'
    return {"WWW-Authenticate": value}


class Authenticator:
    """Resolves a request to a :class:`Principal` or raises a 401/503 :class:`ApiError`."""

    def __init__(self, config: ClientConfig, provider: OidcProvider, sessions: PortalSessions | None) -> None:
        self.config = config
        self.provider = provider
        self.sessions = sessions

    def _unauthorized(self, message: str, error: str | None = None) -> ApiError:
        description = message if error else None
        return ApiError(401, error or "unauthorized", message, _challenge(self.config.iam.realm, error, description))

    async def _validate(self, token: str) -> Principal:
        try:
            claims = await self.provider.validate_access_token(token, self.config.authorized_parties)
        except InvalidToken as exc:
            raise self._unauthorized(str(exc), "invalid_token") from None
        except IamUnavailable:
            raise ApiError(503, "iam_unavailable", "The identity provider cannot be reached") from None
        return Principal.from_claims(claims)

    async def principal(self, request: Request) -> Principal:
        """The caller; bearer tokens win over the cookie when both are sent."""
        header = request.headers.get("authorization")
        if header is not None and self.config.backend.local_mode:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise self._unauthorized("Authorization must be 'Bearer <access token>'", "invalid_request")
            return await self._validate(token.strip())
        cookie = request.cookies.get(SESSION_COOKIE)
        if cookie and self.sessions is not None and self.config.backend.remote_mode:
            try:
                session_token = await self.sessions.access_token(cookie)
            except IamUnavailable:
                raise ApiError(503, "iam_unavailable", "The identity provider cannot be reached") from None
            if session_token is None:
                raise self._unauthorized("Session expired or ended", "invalid_token")
            return await self._validate(session_token)
        raise self._unauthorized("Authentication required")
