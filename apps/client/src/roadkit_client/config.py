"""Configuration of the client application and its backend (TOML, structured with cattrs).

Every error names the file and the key path, e.g.
``client.toml: backend.port: invalid value for type, expected int``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import cattrs
from cattrs.errors import ClassValidationError

from roadkit.config.files import deep_merge, read_document
from roadkit.errors import ConfigurationError


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and key path."""


@attrs.frozen
class IamSection:
    """Where the IAM is (Keycloak or the dev IAM) and the browser's public client."""

    url: str = "http://127.0.0.1:8180"
    realm: str = "roadkit"
    client_id: str = "roadkit-app"
    scope: str = "openid"
    #: Accepted ``aud`` values (any one suffices) ...
    audiences: tuple[str, ...] = ()
    #: ... or accepted ``azp`` values; empty means the public client and the portal client.
    authorized_parties: tuple[str, ...] = ()
    #: Seconds of clock skew tolerated on ``exp``/``nbf``.
    leeway: int = 0
    #: Minimum seconds between two JWKS downloads triggered by an unknown ``kid``.
    jwks_min_refresh_interval: float = 5.0
    #: Seconds an outbound call to the IAM may take.
    timeout: float = 10.0

    @property
    def issuer(self) -> str:
        """``{url}/realms/{realm}``: the expected ``iss`` and the discovery base."""
        return f"{self.url.rstrip('/')}/realms/{self.realm}"


@attrs.frozen
class PortalApp:
    """An application the portal serves: where to send the browser after login and logout."""

    login: str
    logout: str = ""


@attrs.frozen
class PortalSection:
    """The remote-mode portal: a confidential client whose secret never leaves the server."""

    enabled: bool = True
    client_id: str = "roadkit-portal"
    client_secret: str = attrs.field(default="", repr=False)
    #: Name of an environment variable holding the secret (wins over ``client_secret``).
    client_secret_env: str = ""
    scope: str = "openid profile email"
    session_lifetime: int = 36000
    login_timeout: int = 600
    #: Logins in progress kept at most (anonymous clients create them: the oldest go first).
    max_pending_logins: int = 10000
    apps: dict[str, PortalApp] = attrs.Factory(dict)

    def secret(self) -> str:
        """The client secret, from the environment when ``client_secret_env`` is set."""
        if self.client_secret_env:
            return os.environ.get(self.client_secret_env, "")
        return self.client_secret


@attrs.frozen
class BackendSection:
    """The API listener (``/me``, ``/documents``, the portal routes)."""

    host: str = "127.0.0.1"
    port: int = 8181
    public_url: str = "http://127.0.0.1:8181"
    #: The backend as the browser reaches it in remote mode (``IamEntrepotApiUrlRemote``), e.g. through a
    #: proxy on the app's own site; empty: ``public_url``. The portal's callback and cookies live there.
    remote_public_url: str = ""
    #: Accept ``Authorization: Bearer`` access tokens (local mode).
    local_mode: bool = True
    #: Accept the portal's session cookie (remote mode).
    remote_mode: bool = True
    cors_origins: tuple[str, ...] = ("http://127.0.0.1:8182",)
    max_body_bytes: int = 2 * 1024 * 1024
    #: Documents one user may keep (a save past it is a 409 ``document_quota_exceeded``).
    max_documents_per_user: int = 1000
    #: Bytes one user's documents may take, titles and GeoJSON text (past it: 409 ``storage_quota_exceeded``).
    max_stored_bytes_per_user: int = 50 * 1024 * 1024
    #: Documents in one ``GET /documents`` page without ``limit`` ...
    documents_page_size: int = 100
    #: ... and the largest ``limit`` accepted.
    documents_max_page_size: int = 500
    #: SQLite file (relative to the configuration file) used when no PostgreSQL DSN is given.
    database: str = "roadkit-client.sqlite3"
    postgres_dsn: str = attrs.field(default="", repr=False)
    postgres_dsn_env: str = ""

    @property
    def remote_url(self) -> str:
        """The backend's address in remote mode, without a trailing slash."""
        return (self.remote_public_url or self.public_url).rstrip("/")

    def dsn(self) -> str:
        """The PostgreSQL DSN, from the environment when ``postgres_dsn_env`` is set."""
        if self.postgres_dsn_env:
            return os.environ.get(self.postgres_dsn_env, "")
        return self.postgres_dsn


@attrs.frozen
class AppSection:
    """The static browser application listener and its public settings."""

    host: str = "127.0.0.1"
    port: int = 8182
    public_url: str = "http://127.0.0.1:8182"
    routing_url: str = "http://127.0.0.1:8080/simple/1.0.0"
    routing_resource: str = "monaco-osrm"
    #: Name of this application in ``portal.apps`` (remote mode).
    portal_app: str = "roadkit"
    #: Tests only: the pages expose ``window.__roadkit`` (the auth service, hence the tokens).
    test_hooks: bool = False


@attrs.frozen
class ClientConfig:
    """The whole configuration of ``roadkit-client``."""

    mode: str = "local"
    allow_mode_override: bool = False
    iam: IamSection = IamSection()
    backend: BackendSection = BackendSection()
    portal: PortalSection = PortalSection()
    app: AppSection = AppSection()

    @property
    def authorized_parties(self) -> tuple[str, ...]:
        """``azp`` values accepted on access tokens."""
        return self.iam.authorized_parties or (self.iam.client_id, self.portal.client_id)


def _check(config: ClientConfig) -> None:
    if config.mode not in ("local", "remote"):
        raise ConfigError(f"mode: expected 'local' or 'remote', got {config.mode!r}")
    for key, url in (
        ("iam.url", config.iam.url),
        ("backend.public_url", config.backend.public_url),
        ("app.public_url", config.app.public_url),
    ):
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{key}: expected an http(s) URL, got {url!r}")
    remote = config.backend.remote_public_url
    if remote and (not remote.startswith(("http://", "https://")) or "?" in remote or "#" in remote):
        raise ConfigError(f"backend.remote_public_url: expected an http(s) URL without query or fragment (or empty), got {remote!r}")
    if config.backend.max_body_bytes <= 0:
        raise ConfigError("backend.max_body_bytes: expected a positive number of bytes")
    for key in ("max_documents_per_user", "max_stored_bytes_per_user", "documents_page_size", "documents_max_page_size"):
        if getattr(config.backend, key) <= 0:
            raise ConfigError(f"backend.{key}: expected a positive number")
    if config.backend.documents_page_size > config.backend.documents_max_page_size:
        raise ConfigError("backend.documents_page_size: expected at most backend.documents_max_page_size")
    if config.portal.max_pending_logins <= 0:
        raise ConfigError("portal.max_pending_logins: expected a positive number")
    if config.backend.remote_mode and config.portal.enabled:
        if not config.portal.secret():
            raise ConfigError("portal.client_secret: the portal needs the confidential client's secret")
        if not config.portal.apps:
            raise ConfigError("portal.apps: expected at least one application, e.g. roadkit = {login = ...}")


def config_from_mapping(data: Mapping[str, Any], *, source: str = "<mapping>", base_dir: Path | None = None) -> ClientConfig:
    """Structure a mapping into a :class:`ClientConfig`; relative paths resolve against ``base_dir``."""
    converter = cattrs.Converter(forbid_extra_keys=True)
    try:
        config = converter.structure(dict(data), ClientConfig)
    except ClassValidationError as exc:
        raise ConfigError("; ".join(f"{source}: {m}" for m in cattrs.transform_error(exc))) from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{source}: {exc}") from None
    try:
        _check(config)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    database = config.backend.database
    if base_dir is not None and database != ":memory:" and not Path(database).is_absolute():
        config = attrs.evolve(config, backend=attrs.evolve(config.backend, database=str(base_dir / database)))
    return config


def load_config(path: str | Path, *, overrides: Mapping[str, Any] | None = None) -> ClientConfig:
    """Read a TOML file, apply ``overrides``, and structure it."""
    file = Path(path)
    try:
        data = read_document(file)
    except ConfigurationError as exc:
        raise ConfigError(f"cannot read the configuration: {exc}") from None
    if overrides:
        data = deep_merge(data, overrides)
    return config_from_mapping(data, source=str(file), base_dir=file.parent)
