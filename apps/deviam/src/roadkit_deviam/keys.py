"""RS256 signing keys and the published JWKS, with rotation for tests."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, cast

from joserfc import jwk, jwt
from joserfc.errors import JoseError

ALGORITHM = "RS256"


def _new_key(kid: str | None = None) -> jwk.RSAKey:
    parameters: Any = {"kid": kid or secrets.token_urlsafe(12), "use": "sig", "alg": ALGORITHM}
    return jwk.RSAKey.generate_key(2048, parameters=parameters, private=True)


class KeyRing:
    """The current signing key plus previous keys that stay published so issued tokens still verify."""

    def __init__(self, pem_path: str | None = None) -> None:
        if pem_path:
            pem = Path(pem_path).read_bytes()
            key = jwk.RSAKey.import_key(pem)
            kid = key.thumbprint()
            self._current = jwk.RSAKey.import_key(pem, parameters={"kid": kid, "use": "sig", "alg": ALGORITHM})
        else:
            self._current = _new_key()
        self._previous: list[jwk.RSAKey] = []

    @property
    def kid(self) -> str:
        """Key id of the signing key."""
        return str(self._current.kid)

    def rotate(self, *, keep_previous: bool = True) -> str:
        """Generate a new signing key; the old one stays published unless ``keep_previous`` is false."""
        if keep_previous:
            self._previous.append(self._current)
        else:
            self._previous.clear()
        self._current = _new_key()
        return self.kid

    def jwks(self) -> dict[str, Any]:
        """Public JWKS document (``certs`` endpoint)."""
        keys: list[Any] = [self._current, *self._previous]
        return cast(dict[str, Any], jwk.KeySet(keys).as_dict(private=False))

    def sign(self, claims: dict[str, Any], *, typ: str = "JWT") -> str:
        """Sign ``claims`` as a compact RS256 JWT with the current ``kid``."""
        header = {"alg": ALGORITHM, "typ": typ, "kid": self.kid}
        return jwt.encode(header, claims, self._current)

    def verify(self, token: str) -> dict[str, Any] | None:
        """Claims of a token this IAM signed (any published key), or None when it is not one."""
        try:
            decoded = jwt.decode(token, jwk.KeySet([self._current, *self._previous]), algorithms=[ALGORITHM])
        except (JoseError, ValueError, TypeError):
            return None
        return dict(decoded.claims)
