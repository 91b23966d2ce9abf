"""Configuration of the development IAM: realm, users, clients and lifetimes.

The file is TOML (see ``example.toml``); it is structured with cattrs into frozen attrs
classes, and every error names the file, the key path and what was expected.
"""

from __future__ import annotations

import tomllib
import uuid
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import cattrs
from cattrs.errors import ClassValidationError

from roadkit_support.documents import DocumentError, deep_merge, read_document

#: Namespace for the stable per-user subject identifiers (``sub``) derived from realm + username.
_SUBJECT_NAMESPACE = uuid.UUID("0c9d6a52-5d3e-4b8e-9a57-6a4c2f7e4a10")


class ConfigError(ValueError):
    """A configuration file or mapping that cannot be used; the message names the key path."""


@attrs.frozen
class User:
    """A realm user with Keycloak's profile attributes."""

    username: str
    password: str = attrs.field(repr=False)
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    email_verified: bool = True
    enabled: bool = True
    roles: tuple[str, ...] = ()
    id: str = ""

    @property
    def name(self) -> str:
        """Display name as Keycloak builds it: first and last name."""
        return " ".join(part for part in (self.first_name, self.last_name) if part)


@attrs.frozen
class Client:
    """An OAuth 2.0 client (Keycloak "client"): public with PKCE, or confidential with a secret."""

    client_id: str
    public: bool = True
    secret: str = attrs.field(default="", repr=False)
    pkce_method: str | None = None
    redirect_uris: tuple[str, ...] = ()
    web_origins: tuple[str, ...] = ()
    post_logout_redirect_uris: tuple[str, ...] = ("+",)
    audiences: tuple[str, ...] = ()
    enabled: bool = True


@attrs.frozen
class Lifetimes:
    """Token and session lifetimes in seconds (Keycloak realm settings)."""

    access_token: int = 300
    sso_session_idle: int = 1800
    sso_session_max: int = 36000
    access_code: int = 60
    login_timeout: int = 1800


@attrs.frozen
class RefreshPolicy:
    """Keycloak's "Revoke Refresh Token" and "Refresh Token Max Reuse" realm settings."""

    revoke_refresh_token: bool = True
    max_reuse: int = 0


@attrs.frozen
class IamConfig:
    """The whole development IAM configuration."""

    public_url: str = "http://127.0.0.1:8180"
    realm: str = "roadkit"
    testing: bool = False
    signing_key: str | None = None
    lifetimes: Lifetimes = Lifetimes()
    refresh: RefreshPolicy = RefreshPolicy()
    users: tuple[User, ...] = ()
    clients: tuple[Client, ...] = ()

    @property
    def issuer(self) -> str:
        """Keycloak's issuer: ``{public_url}/realms/{realm}``."""
        return f"{self.public_url.rstrip('/')}/realms/{self.realm}"

    def client(self, client_id: str | None) -> Client | None:
        """The enabled client with this id, or None."""
        for client in self.clients:
            if client.client_id == client_id and client.enabled:
                return client
        return None

    def user_by_name(self, username: str) -> User | None:
        """The user with this username (case-insensitive, as Keycloak) or None."""
        wanted = username.strip().lower()
        for user in self.users:
            if user.username.lower() == wanted:
                return user
        return None

    def user_by_id(self, user_id: str) -> User | None:
        """The user with this subject identifier, or None."""
        for user in self.users:
            if user.id == user_id:
                return user
        return None


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    return conv


def _finish(config: IamConfig) -> IamConfig:
    """Fill derived values (user ids) and check cross-field rules."""
    users = tuple(
        user if user.id else attrs.evolve(user, id=str(uuid.uuid5(_SUBJECT_NAMESPACE, f"{config.realm}/{user.username}")))
        for user in config.users
    )
    for index, client in enumerate(config.clients):
        where = f"clients[{index}] ({client.client_id})"
        if not client.public and not client.secret:
            raise ConfigError(f"{where}.secret: a confidential client needs a secret")
        if client.pkce_method not in (None, "S256", "plain"):
            raise ConfigError(f"{where}.pkce_method: expected 'S256', 'plain' or absent, got {client.pkce_method!r}")
        if not client.redirect_uris:
            raise ConfigError(f"{where}.redirect_uris: expected at least one redirect URI")
    if not config.public_url.startswith(("http://", "https://")):
        raise ConfigError(f"public_url: expected an http(s) URL, got {config.public_url!r}")
    return attrs.evolve(config, users=users, public_url=config.public_url.rstrip("/"))


def _describe(exc: BaseException, prefix: str) -> list[str]:
    return [f"{prefix}: {message}" for message in cattrs.transform_error(exc)]


def config_from_mapping(data: Mapping[str, Any], *, source: str = "<mapping>", base_dir: Path | None = None) -> IamConfig:
    """Structure a configuration mapping; errors name ``source`` and the key path."""
    try:
        config = _converter().structure(dict(data), IamConfig)
    except (ClassValidationError, ValueError, TypeError) as exc:
        messages = _describe(exc, source) if isinstance(exc, ClassValidationError) else [f"{source}: {exc}"]
        raise ConfigError("; ".join(messages)) from None
    if config.signing_key and base_dir is not None and not Path(config.signing_key).is_absolute():
        config = attrs.evolve(config, signing_key=str(base_dir / config.signing_key))
    try:
        return _finish(config)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def example_mapping() -> dict[str, Any]:
    """The packaged example configuration (``example.toml``) as a fresh mapping."""
    packaged = resources.files("roadkit_deviam").joinpath("example.toml")
    # An editable install has no packaged copy: the file is then the checkout's, beside pyproject.toml.
    source = packaged if packaged.is_file() else Path(__file__).resolve().parents[2] / "example.toml"
    return tomllib.loads(source.read_text(encoding="utf-8"))


def load_config(path: str | Path, *, overrides: Mapping[str, Any] | None = None) -> IamConfig:
    """Read a TOML configuration file, apply ``overrides`` and structure it."""
    file = Path(path)
    try:
        data = read_document(file)
    except DocumentError as exc:
        raise ConfigError(f"cannot read the configuration: {exc}") from None
    if overrides:
        data = deep_merge(data, overrides)
    return config_from_mapping(data, source=str(file), base_dir=file.parent)
