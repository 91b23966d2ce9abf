"""Who may use the admin API: loopback clients only when no authentication is configured, else bearer tokens.

Writes (POST, PUT, PATCH, DELETE, and Road2's ``GET .../restart``) always need a right: a loopback
client when ``[administrator.auth]`` is absent, a valid token carrying the configured role when it
is present. Reads need a token only with ``protect_reads``; the OpenAPI document and its viewer stay
open. A missing, wrong, expired or tampered token is a 401 with ``WWW-Authenticate``; a valid token
without the role a 403.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from roadkit.api import JSONResponse
from roadkit.auth.oidc import IamUnavailable, InvalidToken, OidcProvider
from roadkit.auth.tokens import StoredToken, read_tokens
from roadkit.config.models import AdminAuth, JwtAuth
from roadkit.errors import RoadkitError

log = logging.getLogger(__name__)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
REALM = "roadkit-admin"
TOKEN_REQUIRED = "A bearer token is required"


class Unauthorized(RoadkitError):
    """No usable credentials (401)."""

    status = 401
    code = "unauthorized"


class Forbidden(RoadkitError):
    """Credentials without the right (403)."""

    status = 403
    code = "forbidden"


def is_write(method: str, path: str) -> bool:
    """Whether a request changes something (Road2's restart is a GET)."""
    return method.upper() in WRITE_METHODS or path.rstrip("/").endswith("/restart")


def is_loopback_client(host: str | None) -> bool:
    """True when the peer address is on this machine."""
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _claim(claims: dict[str, Any], dotted: str) -> Any:
    value: Any = claims
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


class Authenticator:
    """Checks a request's right to use the admin API; owns the IAM client when JWTs are configured."""

    def __init__(self, auth: AdminAuth | None, now: Callable[[], float] = time.time) -> None:
        self.auth = auth
        self.now = now
        self.tokens: list[StoredToken] = read_tokens(auth.tokens_file) if auth is not None and auth.tokens_file is not None else []
        self._session: aiohttp.ClientSession | None = None
        self._provider: OidcProvider | None = None

    @property
    def configured(self) -> bool:
        return self.auth is not None and (self.auth.jwt is not None or self.auth.tokens_file is not None)

    def _oidc(self, jwt: JwtAuth) -> OidcProvider:
        if self._provider is None:
            self._session = aiohttp.ClientSession()
            self._provider = OidcProvider(jwt, self._session, now=self.now)
        return self._provider

    async def close(self) -> None:
        """Close the IAM client."""
        if self._session is not None:
            await self._session.close()
            self._session, self._provider = None, None

    async def check(self, request: Request) -> str | None:
        """The caller's name when the request may go on; raises Unauthorized or Forbidden otherwise."""
        write = is_write(request.method, request.url.path)
        if not self.configured:
            if write and not is_loopback_client(request.client.host if request.client else None):
                raise Forbidden(
                    "Write operations are accepted only from this machine (loopback) when the admin API has no authentication configured"
                )
            return None
        assert self.auth is not None
        if not write and not self.auth.protect_reads:
            return None
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized(TOKEN_REQUIRED)
        for stored in self.tokens:
            if stored.matches(token):
                return f"token:{stored.name}"
        if self.auth.jwt is None or token.count(".") != 2:
            raise Unauthorized("Invalid token")
        return await self._check_jwt(self.auth.jwt, token)

    async def _check_jwt(self, jwt: JwtAuth, token: str) -> str:
        provider = self._oidc(jwt)
        try:
            claims = await provider.decode(token)
            if claims.get("iss") != provider.issuer:
                raise InvalidToken("Invalid token issuer")
            if claims.get("typ", "Bearer") != "Bearer":
                raise InvalidToken("Not an access token")
            provider.check_times(claims)
            if jwt.audiences:
                audiences = claims.get("aud", [])
                audiences = [audiences] if isinstance(audiences, str) else list(audiences or [])
                if not set(audiences) & set(jwt.audiences):
                    raise InvalidToken("Invalid token audience")
        except InvalidToken as exc:
            raise Unauthorized(str(exc)) from None
        except IamUnavailable as exc:
            log.warning("admin API: the IAM can't be reached to check a token: %s", exc)
            raise RoadkitError("The IAM that checks admin tokens can't be reached", code="iam_unavailable", status=503) from None
        roles = _claim(claims, jwt.roles_claim)
        if not isinstance(roles, list) or jwt.role not in roles:
            raise Forbidden(f"The token does not carry the role {jwt.role!r}")
        return f"jwt:{claims.get('sub', '?')}"


class AdminAuthMiddleware:
    """Applies :class:`Authenticator` to every admin request except the API documents."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator, open_paths: tuple[str, ...] = ()) -> None:
        self.app = app
        self.authenticator = authenticator
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or any(scope["path"].startswith(p) for p in self.open_paths):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            who = await self.authenticator.check(request)
        except RoadkitError as exc:
            headers = {}
            if exc.status == 401:
                # RFC 6750: no error code when the request carried no credentials at all.
                challenge = f'Bearer realm="{REALM}"'
                if exc.message != TOKEN_REQUIRED:
                    challenge += f', error="invalid_token", error_description="{exc.message.replace(chr(34), chr(39))}"'
                headers["WWW-Authenticate"] = challenge
            await JSONResponse(exc.body(), status_code=exc.status, headers=headers)(scope, receive, send)
            return
        if who is not None and is_write(request.method, request.url.path):
            log.info("admin API: %s %s by %s", request.method, request.url.path, who)
        await self.app(scope, receive, send)
