"""Access control of a service's routing APIs (``[access]``): API keys, IAM bearer tokens, quotas.

A request shows an API key (header ``X-Api-Key`` or query parameter
``apikey``) or a bearer token; without either it is anonymous, served only with ``anonymous = true``
and counted per client address. Each caller's requests are counted in the service's
:class:`~roadkit.serving.quotas.QuotaTable` (shared by its workers): beyond its quota a request is a
429 with ``Retry-After``; every answer counted by a rate quota carries the ``RateLimit`` and
``RateLimit-Policy`` headers (IETF httpapi ratelimit-headers draft). The API documents and viewers
(``/openapi...``), the API's index and ``/`` stay open, any other path needs credentials; CORS
preflights never get here (the CORS middleware wraps this one).
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import os
import time
from pathlib import Path
from urllib.parse import unquote_plus

import aiohttp
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roadkit.auth.admin import check_jwt
from roadkit.auth.oidc import OidcProvider
from roadkit.auth.tokens import StoredToken, read_tokens
from roadkit.config.models import Access, Quota
from roadkit.errors import RoadkitError, Unauthorized
from roadkit.serving.quotas import Decision, QuotaTable
from roadkit.web.access import KEY_HEADER as WEB_KEY_HEADER
from roadkit.web.access import KEY_PARAMETER
from roadkit.web.api import JSONResponse
from roadkit.web.forwarded import Network, peer_is_trusted

log = logging.getLogger(__name__)

KEY_HEADER = WEB_KEY_HEADER.lower().encode("latin-1")
REALM = "roadkit"
#: A key or token longer than this is refused unread (generated keys have 49 characters).
MAX_CREDENTIAL_LENGTH = 8192
#: How often (seconds) a worker looks whether the keys file changed (a key made or revoked).
KEYS_RECHECK = 1.0
_CREDENTIALS_REQUIRED = "An API key (header X-Api-Key or query parameter apikey) or a bearer token is required"
_KEY_REQUIRED = "An API key (header X-Api-Key or query parameter apikey) is required"
_TOKEN_REQUIRED = "A bearer token is required"


class KeyRing:
    """The API keys of a keys file, read again when the file changes (a key revoked stops working)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tokens: list[StoredToken] = []
        self._signature: tuple[int, int, int] | None = None
        self._checked = float("-inf")
        #: SHA-256 of keys already found, to their name: one stored hash per key, so never larger than the file.
        self._known: dict[bytes, str] = {}
        self._load()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            stat = os.stat(self.path)
        except OSError:
            return None
        return stat.st_ino, stat.st_mtime_ns, stat.st_size

    def _load(self) -> None:
        self._signature = self._stat()
        self.tokens = read_tokens(self.path)
        self._known = {}

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._checked < KEYS_RECHECK:
            return
        self._checked = now
        if self._stat() != self._signature:
            try:
                self._load()
            except RoadkitError as exc:  # a file half-edited by hand: no key is accepted until it is right again
                log.error("API keys: %s", "; ".join(getattr(exc, "problems", [exc.message])))
                self.tokens, self._known = [], {}

    def name_of(self, key: str) -> str | None:
        """The name of a valid key, None for any other string."""
        self._refresh()
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
        name = self._known.get(digest)
        if name is not None:
            return name
        for stored in self.tokens:
            if stored.matches(key):
                self._known[digest] = stored.name
                return stored.name
        return None


def client_group(host: str | None) -> str:
    """The anonymous caller a client address counts as: the address, or its /64 for IPv6 (one site's share)."""
    if not host:
        return "anonymous:unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"anonymous:{host[:100]}"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return f"anonymous:{address.ipv4_mapped}"
        return f"anonymous:{ipaddress.IPv6Network((address, 64), strict=False)}"
    return f"anonymous:{address}"


def client_address(scope: Scope, proxies: tuple[Network, ...]) -> str | None:
    """The client's address: the peer's, or behind trusted proxies the last address in ``X-Forwarded-For`` that is not one of them."""
    client = scope.get("client")
    peer: str | None = client[0] if client else None
    if not proxies or not peer_is_trusted(peer, proxies):
        return peer
    forwarded = [value.decode("latin-1") for name, value in scope["headers"] if name == b"x-forwarded-for"]
    hops = [hop.strip() for hop in ",".join(forwarded).split(",") if hop.strip()]
    for hop in reversed(hops):  # each proxy appends the address it saw: the rightmost untrusted one is the client
        if not peer_is_trusted(hop, proxies):
            return hop
    return hops[0] if hops else peer


def may_have_key(query: bytes) -> bool:
    """Whether a query string may hold an ``apikey`` parameter (a cheap test before parsing it)."""
    return b"apikey" in query.lower() or b"%" in query


def without_key(query: bytes) -> bytes:
    """The query string without its ``apikey`` parameters (the APIs behind never see the key)."""
    return b"&".join(part for part in query.split(b"&") if unquote_plus(part.split(b"=", 1)[0].decode("latin-1")) != KEY_PARAMETER)


def query_key(query: bytes) -> str | None:
    """The first ``apikey`` value of a query string."""
    for part in query.split(b"&"):
        name, _, value = part.partition(b"=")
        if unquote_plus(name.decode("latin-1")) == KEY_PARAMETER:
            return unquote_plus(value.decode("latin-1"))
    return None


def rate_headers(quota: Quota, decision: Decision) -> list[tuple[bytes, bytes]]:
    """``RateLimit-Policy`` and ``RateLimit`` for an answer counted by a rate quota."""
    if quota.requests is None or decision.remaining is None or decision.reset is None:
        return []
    return [
        (b"ratelimit-policy", f'"default";q={quota.requests};w={math.ceil(quota.window)}'.encode()),
        (b"ratelimit", f'"default";r={decision.remaining};t={decision.reset}'.encode()),
    ]


class Checks:
    """What checks a service's credentials: its keys file and its IAM client (opened at the first token)."""

    def __init__(self, access: Access) -> None:
        """Reads the keys file: a malformed one is a ConfigurationError naming it and the line."""
        self.access = access
        self.keys = KeyRing(access.keys_file) if access.keys_file is not None else None
        self._session: aiohttp.ClientSession | None = None
        self._provider: OidcProvider | None = None

    def provider(self) -> OidcProvider:
        assert self.access.jwt is not None
        if self._provider is None:
            # trust_env: HTTP_PROXY / HTTPS_PROXY / NO_PROXY apply to discovery and keys, as to any outbound HTTP.
            self._session = aiohttp.ClientSession(trust_env=True)
            self._provider = OidcProvider(self.access.jwt, self._session)
        return self._provider

    async def close(self) -> None:
        """Close the IAM client, if one was opened."""
        if self._session is not None:
            await self._session.close()
            self._session, self._provider = None, None


class AccessControl:
    """The ASGI middleware of ``[access]`` (see the module's docstring)."""

    def __init__(
        self, app: ASGIApp, checks: Checks, quotas: QuotaTable, prefixes: tuple[str, ...], proxies: tuple[Network, ...] = ()
    ) -> None:
        """``proxies``: the service's trusted proxies, whose ``X-Forwarded-For`` names an anonymous client."""
        self.app = app
        self.proxies = proxies
        self.checks = checks
        self.access = checks.access
        self.keys = checks.keys
        self.quotas = quotas
        self.prefixes = tuple(prefix.rstrip("/") + "/" for prefix in prefixes)

    def is_open(self, path: str) -> bool:
        """Whether ``path`` needs no credentials: ``/`` (the probe), an API's index, its documents and viewers.

        Any other path needs them, even one no route answers: nothing is open by mistake.
        """
        if any(segment in (".", "..") for segment in path.split("/")):
            return False  # whatever routes it later, a path that climbs is not "below" the open ones
        if path in ("", "/"):
            return True
        for prefix in self.prefixes:
            if path.startswith(prefix) or path == prefix[:-1]:
                rest = path[len(prefix) :]
                return rest in ("", "openapi", "openapi.json") or rest.startswith("openapi/")
        return False

    async def identify(self, scope: Scope) -> tuple[str, Quota]:
        """Who sends the request (a key's name, a token's subject, an address) and its quota; 401 or 403 otherwise."""
        headers = scope["headers"]
        if self.keys is not None:
            key = next((value.decode("latin-1") for name, value in headers if name == KEY_HEADER), None)
            if key is None and may_have_key(scope["query_string"]):
                key = query_key(scope["query_string"])
            if key is not None:
                name = self.keys.name_of(key) if len(key) <= MAX_CREDENTIAL_LENGTH else None
                if name is None:
                    raise Unauthorized("Invalid API key")
                return f"key:{name}", self.access.quota
        if self.access.jwt is not None:
            header = next((value.decode("latin-1") for name, value in headers if name == b"authorization"), "")
            scheme, _, token = header.partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                if len(token) > MAX_CREDENTIAL_LENGTH or token.count(".") != 2:
                    raise Unauthorized("Invalid token")
                claims = await check_jwt(self.checks.provider(), self.access.jwt, token, "routing APIs")
                subject = claims.get("sub")
                if not isinstance(subject, str) or not subject:
                    raise Unauthorized("Token has no subject")
                return f"token:{subject}", self.access.quota
        if self.access.anonymous:
            return client_group(client_address(scope, self.proxies)), self.access.anonymous_quota
        if self.keys is None:
            raise Unauthorized(_TOKEN_REQUIRED)
        raise Unauthorized(_CREDENTIALS_REQUIRED if self.access.jwt is not None else _KEY_REQUIRED)

    def _challenges(self, message: str) -> list[tuple[bytes, bytes]]:
        """``WWW-Authenticate``, one challenge per accepted kind of credential (RFC 9110 section 11.6.1)."""
        missing = message in (_CREDENTIALS_REQUIRED, _KEY_REQUIRED, _TOKEN_REQUIRED)
        found: list[tuple[bytes, bytes]] = []
        if self.keys is not None:
            challenge = f'ApiKey realm="{REALM}", header="X-Api-Key", query="{KEY_PARAMETER}"'
            found.append((b"www-authenticate", challenge.encode("latin-1")))
        if self.access.jwt is not None:
            challenge = f'Bearer realm="{REALM}"'
            if not missing and message != "Invalid API key":
                # RFC 6750: an error code only for a token that was sent and refused.
                challenge += f', error="invalid_token", error_description="{message.replace(chr(34), chr(39))}"'
            found.append((b"www-authenticate", challenge.encode("latin-1", "replace")))
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, root = scope["path"], scope.get("root_path") or ""
        if root and path.startswith(root):  # mounted in a host app: the path below the mount
            path = path[len(root) :]
        if self.is_open(path):
            await self.app(scope, receive, send)
            return
        try:
            identity, quota = await self.identify(scope)
        except RoadkitError as exc:
            response = JSONResponse(exc.body(), status_code=exc.status)
            if exc.status == 401:
                response.raw_headers.extend(self._challenges(exc.message))
            await response(scope, receive, send)
            return
        decision = self.quotas.acquire(identity, quota)
        added = rate_headers(quota, decision)
        if not decision.allowed:
            await self._refuse(scope, receive, send, quota, decision, added)
            return
        if may_have_key(scope["query_string"]):
            # In place: the server's access log, which reads this scope, never shows the key either.
            scope["query_string"] = without_key(scope["query_string"])

        async def send_counted(message: Message) -> None:
            if message["type"] == "http.response.start" and added:
                message = {**message, "headers": [*message.get("headers", []), *added]}
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            self.quotas.release(identity)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, quota: Quota, decision: Decision, added: list[tuple[bytes, bytes]]
    ) -> None:
        if decision.reason == "busy":
            status, code = 503, "busy"
            message = "Too many clients are counted at once; try again in a moment"
        elif decision.reason == "rate":
            status, code = 429, "too_many_requests"
            message = f"Request quota exceeded: {quota.requests} requests per {quota.window:g} s; try again in {decision.retry_after} s"
        else:
            status, code = 429, "too_many_requests"
            message = f"Too many requests at once: at most {quota.concurrent} in progress; try again when one has ended"
        response = JSONResponse({"error": {"errorType": code, "message": message}}, status_code=status)
        response.raw_headers.extend([(b"retry-after", str(decision.retry_after or 1).encode()), *added])
        await response(scope, receive, send)
