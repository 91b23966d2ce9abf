"""One view of the IAM for every roadkit server: discovery, a JWKS cache with key rotation, token validation.

Used by the client backend and by the administrator's admin API. Only the issuer
(``{IamUrl}/realms/{IamRealm}``) is configured; every endpoint comes from
``/.well-known/openid-configuration``, so a real Keycloak and the development IAM are
interchangeable.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import aiohttp
from joserfc import jwk, jws, jwt
from joserfc.errors import JoseError

log = logging.getLogger("roadkit.auth.oidc")

ALLOWED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256")
#: Seconds a failed discovery or JWKS fetch is remembered: meanwhile requests fail at once, not each after a time-out.
FAILURE_MEMORY = 10.0
#: Seconds to open a connection to the IAM (an IAM that does not answer costs at most this, or ``timeout``).
CONNECT_TIMEOUT = 2.0


class InvalidToken(Exception):
    """A bearer token that must be refused; ``str(exc)`` is safe to send in ``WWW-Authenticate``."""


class IamUnavailable(Exception):
    """The IAM could not be reached or answered something unusable."""


class IamSettings(Protocol):
    """What the provider needs to know about the IAM (the client's ``[iam]``, the admin's ``[administrator.auth.jwt]``)."""

    @property
    def issuer(self) -> str: ...
    @property
    def audiences(self) -> tuple[str, ...]: ...
    @property
    def leeway(self) -> float: ...
    @property
    def jwks_min_refresh_interval(self) -> float: ...
    @property
    def timeout(self) -> float: ...


def audiences_of(claims: Mapping[str, Any]) -> set[str]:
    """The token's ``aud`` as a set (RFC 7519 allows one string or a list of them)."""
    audiences = claims.get("aud")
    if isinstance(audiences, str):
        return {audiences}
    if isinstance(audiences, list):
        return {a for a in audiences if isinstance(a, str)}
    return set()


class OidcProvider:
    """Discovery document and signing keys of one realm, fetched over HTTP with aiohttp."""

    def __init__(
        self,
        settings: IamSettings,
        session: aiohttp.ClientSession,
        now: Callable[[], float] = time.time,
        *,
        failure_memory: float = FAILURE_MEMORY,
    ) -> None:
        self.settings = settings
        self.session = session
        self.now = now
        self.failure_memory = failure_memory
        self._metadata: dict[str, Any] | None = None
        self._keys: jwk.KeySet | None = None
        self._keys_fetched_at = float("-inf")
        self._lock = asyncio.Lock()
        self._metadata_lock = asyncio.Lock()
        #: The last failed fetch: until when it is remembered (monotonic) and why it failed.
        self._failed: tuple[float, str] | None = None

    @property
    def issuer(self) -> str:
        """The realm's issuer, ``{url}/realms/{realm}``."""
        return self.settings.issuer

    async def _get_json(self, url: str) -> dict[str, Any]:
        """A JSON object from the IAM; a failure is remembered ``failure_memory`` seconds, failing every fetch meanwhile."""
        if self._failed is not None:
            until, reason = self._failed
            if time.monotonic() < until:
                raise IamUnavailable(f"{reason} (less than {self.failure_memory:g} s ago; not tried again yet)")
            self._failed = None
        try:
            return await self._fetch_json(url)
        except IamUnavailable as exc:
            raise self._failure(str(exc)) from None

    def _failure(self, reason: str) -> IamUnavailable:
        """The error of a failed look-up, remembered ``failure_memory`` seconds."""
        self._failed = (time.monotonic() + self.failure_memory, reason)
        return IamUnavailable(reason)

    async def _fetch_json(self, url: str) -> dict[str, Any]:
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout, connect=min(CONNECT_TIMEOUT, self.settings.timeout))
        try:
            async with self.session.get(url, timeout=timeout) as response:
                if response.status != 200:
                    raise IamUnavailable(f"GET {url}: HTTP {response.status}")
                data = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise IamUnavailable(f"GET {url}: {exc.__class__.__name__}") from None
        if not isinstance(data, dict):
            raise IamUnavailable(f"GET {url}: expected a JSON object")
        return data

    async def metadata(self) -> dict[str, Any]:
        """The discovery document (fetched once, then cached); its issuer must be the configured one."""
        if self._metadata is None:
            async with self._metadata_lock:  # one fetch at a time: requests that arrive meanwhile wait for its outcome
                if self._metadata is None:
                    data = await self._get_json(f"{self.issuer}/.well-known/openid-configuration")
                    if data.get("issuer") != self.issuer:
                        raise self._failure(f"discovery issuer {data.get('issuer')!r} is not {self.issuer!r}")
                    self._metadata = data
        return self._metadata

    async def endpoint(self, name: str) -> str:
        """An endpoint URL from discovery, e.g. ``token_endpoint``."""
        value = (await self.metadata()).get(name)
        if not isinstance(value, str) or not value:
            raise IamUnavailable(f"discovery has no {name}")
        return value

    async def _refresh_keys(self, *, force: bool) -> None:
        async with self._lock:
            since = time.monotonic() - self._keys_fetched_at
            if self._keys is not None and (not force or since < self.settings.jwks_min_refresh_interval):
                return
            data = await self._get_json(await self.endpoint("jwks_uri"))
            try:
                self._keys = jwk.KeySet.import_key_set(data)  # type: ignore[arg-type]
            except (JoseError, ValueError, TypeError, KeyError):
                raise self._failure("the JWKS document is not a valid key set") from None
            self._keys_fetched_at = time.monotonic()
            log.debug("JWKS refreshed: %d keys", len(self._keys.keys))

    async def key_for(self, kid: str) -> Any:
        """The public key with this ``kid``; an unknown ``kid`` refreshes the JWKS (rate-limited) once."""
        await self._refresh_keys(force=False)
        assert self._keys is not None
        try:
            return self._keys.get_by_kid(kid)
        except (JoseError, ValueError, KeyError):
            pass
        await self._refresh_keys(force=True)
        try:
            return self._keys.get_by_kid(kid)
        except (JoseError, ValueError, KeyError):
            raise InvalidToken("Unknown signing key") from None

    async def decode(self, token: str) -> dict[str, Any]:
        """Verify the signature of a compact JWT against the realm's JWKS; returns its claims."""
        try:
            header = jws.extract_compact(token.encode("ascii")).headers()
        except (JoseError, ValueError, UnicodeError):
            raise InvalidToken("Malformed token") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALLOWED_ALGORITHMS:
            raise InvalidToken("Unsupported token algorithm")
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("Token has no key id")
        key = await self.key_for(kid)
        try:
            return dict(jwt.decode(token, key, algorithms=[alg]).claims)
        except (JoseError, ValueError, TypeError):
            raise InvalidToken("Invalid token signature") from None

    def check_times(self, claims: Mapping[str, Any]) -> None:
        """``exp`` (required) and ``nbf`` (when present) against the backend clock with the leeway."""
        now, leeway = self.now(), self.settings.leeway
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise InvalidToken("Token has no expiry")
        if now > exp + leeway:
            raise InvalidToken("Token expired")
        nbf = claims.get("nbf")
        if isinstance(nbf, (int, float)) and not isinstance(nbf, bool) and now + leeway < nbf:
            raise InvalidToken("Token not yet valid")

    def check_access_claims(self, claims: Mapping[str, Any]) -> None:
        """The checks every access token passes, whoever reads it: this realm's issuer, type Bearer, expiry, not-before."""
        if claims.get("iss") != self.issuer:
            raise InvalidToken("Invalid token issuer")
        if claims.get("typ", "Bearer") != "Bearer":
            raise InvalidToken("Not an access token")
        self.check_times(claims)

    async def validate_access_token(self, token: str, authorized_parties: tuple[str, ...]) -> dict[str, Any]:
        """Full access-token validation: signature, issuer, type, expiry, not-before, audience or azp."""
        claims = await self.decode(token)
        self.check_access_claims(claims)
        audience_ok = bool(audiences_of(claims) & set(self.settings.audiences))
        if not audience_ok and claims.get("azp") not in authorized_parties:
            raise InvalidToken("Invalid token audience")
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise InvalidToken("Token has no subject")
        return claims

    async def validate_id_token(self, token: str, client_id: str, nonce: str) -> dict[str, Any]:
        """ID token checks for the portal: signature, issuer, ``aud`` = client id, expiry, nonce."""
        claims = await self.decode(token)
        if claims.get("iss") != self.issuer:
            raise InvalidToken("Invalid ID token issuer")
        if client_id not in audiences_of(claims):
            raise InvalidToken("Invalid ID token audience")
        self.check_times(claims)
        if claims.get("nonce") != nonce:
            raise InvalidToken("Invalid ID token nonce")
        return claims
