"""Who may use the admin API: loopback clients only when no authentication is configured, else bearer tokens.

Before any of this, the listener answers only to its own host names and to no page of another site
(:mod:`roadkit.auth.sites`: 421 and 403, whatever the path).
Writes (POST, PUT, PATCH, DELETE, and Road2's ``GET .../restart``) always need a right: a loopback
client when ``[administrator.auth]`` is absent, a valid token carrying the configured role when it
is present. Source documents (``GET .../sources[/{id}]``) can hold credentials: reading them needs
the same right. Other reads need a token with ``protect_reads``, which is on unless the admin listener
is on loopback; the OpenAPI document and its viewer stay open. A missing, wrong, expired or tampered
token is a 401 with ``WWW-Authenticate``; a valid token without the role a 403.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from roadkit.auth.oidc import IamUnavailable, InvalidToken, OidcProvider, audiences_of
from roadkit.auth.sites import SitePolicy
from roadkit.auth.tokens import StoredToken, read_tokens
from roadkit.config.models import AccessJwt, AdminAuth, AdministratorConfig, JwtAuth
from roadkit.errors import Forbidden, RoadkitError, Unauthorized
from roadkit.web.api import JSONResponse

log = logging.getLogger(__name__)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
REALM = "roadkit-admin"
TOKEN_REQUIRED = "A bearer token is required"


#: Reads that need the same right as a write: source documents can hold credentials (a pgRouting
#: source's password or DSN), which no one who may not change the source should read either.
_SENSITIVE_READ = re.compile(r"/services/[^/]+/sources(/|$)")


def is_write(method: str, path: str) -> bool:
    """Whether a request changes something (Road2's restart is a GET)."""
    return method.upper() in WRITE_METHODS or path.rstrip("/").endswith("/restart")


def needs_write_right(method: str, path: str) -> bool:
    """Whether a request needs the right of a write: a write, or the read of source documents."""
    return is_write(method, path) or _SENSITIVE_READ.search(path) is not None


#: Headers with which a proxy says whom it forwards (RFC 7239 and the de-facto ones). A request
#: carrying any of them came through a proxy: its peer address (the proxy's) says nothing about
#: the client, and the header itself is whatever the client or the proxy chose to write.
FORWARDING_HEADERS = (
    "forwarded",
    "x-forwarded-for",
    "x-real-ip",
    "via",
    "x-client-ip",
    "true-client-ip",
    "cf-connecting-ip",
    "x-cluster-client-ip",
    "fastly-client-ip",
)


def is_local_request(host: str | None, headers: Mapping[str, str]) -> bool:
    """True when the client is on this machine: a loopback peer that is not a proxy forwarding someone else.

    Forwarding headers never make a client local (anyone can send ``X-Forwarded-For: 127.0.0.1``);
    they only make a loopback peer NOT local, since a reverse proxy on this machine forwarding a
    remote client is a loopback peer too. A proxy that forwards without any such header can't be
    told apart: configure ``[administrator.auth]`` when the admin listener sits behind one.
    """
    return is_loopback_client(host) and not any(name in headers for name in FORWARDING_HEADERS)


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

    def __init__(self, auth: AdminAuth | None, now: Callable[[], float] = time.time, *, sites: SitePolicy | None = None) -> None:
        self.auth = auth
        self.now = now
        #: The host names and origins the listener answers to (default: loopback names only).
        self.sites = sites if sites is not None else SitePolicy.for_admin(AdministratorConfig())
        self.tokens: list[StoredToken] = read_tokens(auth.tokens_file) if auth is not None and auth.tokens_file is not None else []
        self._session: aiohttp.ClientSession | None = None
        self._provider: OidcProvider | None = None

    @property
    def configured(self) -> bool:
        return self.auth is not None and (self.auth.jwt is not None or self.auth.tokens_file is not None)

    def _oidc(self, jwt: JwtAuth) -> OidcProvider:
        if self._provider is None:
            # trust_env: HTTP_PROXY / HTTPS_PROXY / NO_PROXY apply to discovery and keys, as to any outbound HTTP.
            self._session = aiohttp.ClientSession(trust_env=True)
            self._provider = OidcProvider(jwt, self._session, now=self.now)
        return self._provider

    async def close(self) -> None:
        """Close the IAM client."""
        if self._session is not None:
            await self._session.close()
            self._session, self._provider = None, None

    async def check(self, request: Request) -> str | None:
        """The caller's name when the request may go on; raises Unauthorized or Forbidden otherwise."""
        write = needs_write_right(request.method, request.url.path)
        if not self.configured:
            if write and not is_local_request(request.client.host if request.client else None, request.headers):
                raise Forbidden(
                    "Write operations (and source documents, which can hold credentials) are accepted only from this machine"
                    " (loopback, not through a proxy) when the admin API has no authentication configured"
                )
            return None
        assert self.auth is not None
        if not write and self.auth.protect_reads is False:  # None (not resolved by the loader) protects them
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
        if not jwt.audiences:  # the loader requires them: a token of any client of the realm is not an admin token
            raise Unauthorized("Invalid token audience")
        claims = await check_jwt(self._oidc(jwt), jwt, token, "admin API")
        return f"jwt:{claims.get('sub', '?')}"


async def check_jwt(provider: OidcProvider, jwt: JwtAuth | AccessJwt, token: str, who: str) -> dict[str, Any]:
    """The claims of a valid access token carrying ``jwt.role`` (if any); Unauthorized, Forbidden or a 503 otherwise.

    ``who``: what checks the token, for the log and the 503's message.
    """
    try:
        claims = await provider.decode(token)
        provider.check_access_claims(claims)
        # ``azp`` is the client the token was issued to (Keycloak often leaves it out of ``aud``).
        if jwt.audiences and not audiences_of(claims) & set(jwt.audiences) and claims.get("azp") not in jwt.audiences:
            raise InvalidToken("Invalid token audience")
    except InvalidToken as exc:
        raise Unauthorized(str(exc)) from None
    except IamUnavailable as exc:
        log.warning("%s: the IAM can't be reached to check a token: %s", who, exc)
        raise RoadkitError(f"The IAM that checks the tokens of the {who} can't be reached", code="iam_unavailable", status=503) from None
    if jwt.role:
        roles = _claim(claims, jwt.roles_claim)
        if not isinstance(roles, list) or jwt.role not in roles:
            raise Forbidden(f"The token does not carry the role {jwt.role!r}")
    return claims


class AdminAuthMiddleware:
    """Applies :class:`Authenticator` to every admin request except the API documents."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator, open_paths: tuple[str, ...] = ()) -> None:
        self.app = app
        self.authenticator = authenticator
        self.open_paths = open_paths

    def _open(self, path: str) -> bool:
        """Whether ``path`` is one of the open paths or below one (whole segments; never with a dot segment)."""
        if any(segment in (".", "..") for segment in path.split("/")):
            return False  # whatever routes it later, a path that climbs is not "below" the open ones
        return any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            self.authenticator.sites.check(request, write=is_write(request.method, scope["path"]))
        except RoadkitError as exc:
            log.debug("admin API: %s %s refused: %s", request.method, scope["path"][:200], exc.message)
            await JSONResponse(exc.body(), status_code=exc.status)(scope, receive, send)
            return
        if self._open(scope["path"]):
            await self.app(scope, receive, send)
            return
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
