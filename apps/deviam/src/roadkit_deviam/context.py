"""The objects every endpoint shares, built once per app by :func:`roadkit_deviam.app.create_app`."""

from __future__ import annotations

import attrs

from .clock import Clock
from .config import IamConfig
from .keys import KeyRing
from .state import IamState
from .tokens import TokenIssuer

IDENTITY_COOKIE = "KEYCLOAK_IDENTITY"
SESSION_COOKIE = "KEYCLOAK_SESSION"
AUTH_SESSION_COOKIE = "AUTH_SESSION_ID"


@attrs.frozen
class Iam:
    """Configuration, clock, keys, state and token issuer of one running IAM."""

    config: IamConfig
    clock: Clock
    keys: KeyRing
    state: IamState
    issuer: TokenIssuer

    @classmethod
    def build(cls, config: IamConfig) -> Iam:
        """Create the clock, keys and empty state for ``config``."""
        clock = Clock()
        keys = KeyRing(config.signing_key)
        state = IamState(config, clock)
        return cls(config=config, clock=clock, keys=keys, state=state, issuer=TokenIssuer(config, state, keys))

    @property
    def realm_path(self) -> str:
        """Path prefix of the realm: ``/realms/{realm}``."""
        return f"/realms/{self.config.realm}"

    @property
    def cookie_path(self) -> str:
        """Path of the SSO cookies (Keycloak scopes them to the realm)."""
        return f"{self.realm_path}/"

    @property
    def secure_cookies(self) -> bool:
        """Secure + SameSite=None over https; SameSite=Lax on plain-http development URLs."""
        return self.config.public_url.startswith("https://")

    def endpoint(self, name: str) -> str:
        """Absolute URL of an OpenID Connect endpoint (``auth``, ``token``, ...)."""
        return f"{self.config.issuer}/protocol/openid-connect/{name}"
