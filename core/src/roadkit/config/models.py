"""Frozen attrs classes for every configuration file. Paths are resolved by the loader."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import attrs


@attrs.frozen
class Listener:
    """An HTTP(S) listener. ``certfile``/``keyfile`` turn HTTPS on (self-signed certificates are fine)."""

    host: str = "127.0.0.1"
    port: int = 8080
    id: str = "main"
    certfile: Path | None = None
    keyfile: Path | None = None

    @property
    def https(self) -> bool:
        return self.certfile is not None

    @property
    def bind(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@attrs.frozen
class LoggingConfig:
    """Logging of the administrator and its services."""

    level: Literal["debug", "info", "warning", "error"] = "info"
    file: Path | None = None
    access_log: bool = False


@attrs.frozen
class Backoff:
    """Capped exponential back-off of automatic restarts (``[services.backoff]`` in the server file).

    The n-th restart in a row waits ``initial * factor**(n-1)`` seconds, at most ``max``; the count
    starts again once a restarted worker has stayed up ``reset_after`` seconds.
    """

    initial: float = 0.5
    factor: float = 2.0
    max: float = 30.0
    reset_after: float = 30.0

    def delay(self, attempt: int) -> float:
        """The wait before restart number ``attempt`` (1 = the first after a crash)."""
        return float(min(self.max, self.initial * self.factor ** max(0, attempt - 1)))


#: ``workers``: a number of processes, or ``"auto"`` (one per usable core).
Workers = int | Literal["auto"]

#: More workers than this many per usable core only add memory and contention (and a typo such as
#: ``workers = 1000`` would fork a thousand processes): the bound is ``max_workers()``.
WORKERS_PER_CORE = 4


def usable_cores() -> int:
    """The cores this process may run on (``workers = "auto"``)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def max_workers() -> int:
    """The largest ``workers`` number accepted on this machine."""
    return WORKERS_PER_CORE * usable_cores()


@attrs.frozen
class ManagedService:
    """A service the administrator runs: its id, its service file and how it runs.

    ``child-process`` (recommended) runs ``workers`` processes that share the listeners;
    ``same-process`` runs the service in the administrator's event loop (one worker).
    ``stop_timeout`` bounds a worker's drain (requests in flight) when it stops. ``allocator``:
    the memory allocator of the child processes (:mod:`roadkit.process.allocator`).
    """

    id: str
    configuration: Path
    mode: Literal["child-process", "same-process"] = "child-process"
    workers: Workers = 1
    startup_timeout: float = 120.0
    stop_timeout: float = 10.0
    backoff: Backoff = Backoff()
    allocator: str = "auto"


@attrs.frozen
class JwtAuth:
    """Bearer JWTs from the IAM: signed by a key of its JWKS, issued by ``issuer``, carrying ``role``."""

    issuer: str
    role: str
    #: The admin API's client ids: a token's ``aud`` or ``azp`` must be one of them (required, at least one).
    audiences: tuple[str, ...] = ()
    #: Where the roles are in the token, a dotted path (Keycloak: ``realm_access.roles``).
    roles_claim: str = "realm_access.roles"
    leeway: float = 0.0
    jwks_min_refresh_interval: float = 5.0
    timeout: float = 10.0


@attrs.frozen
class AdminAuth:
    """Who may use the admin API: IAM tokens and/or static tokens (a file of their hashes)."""

    jwt: JwtAuth | None = None
    tokens_file: Path | None = None
    #: Also require a token for reads (health, services, configuration...); writes always need one.
    #: None: on when the admin listener is not on loopback (the loader decides).
    protect_reads: bool | None = None


@attrs.frozen
class AdminWrites:
    """What admin API writes may name (``[administrator.writes]``): :mod:`roadkit.config.writes`.

    ``folders``: where written files and the folders they name may be (empty: the server file's
    folder); ``hosts``: the host names, addresses or networks (``10.0.0.0/8``) a written source may
    connect to (empty: loopback only); ``group``: written files are 0640 with this group instead of 0600.
    """

    folders: tuple[Path, ...] = ()
    hosts: tuple[str, ...] = ()
    group: str | None = None


@attrs.frozen
class AdministratorConfig:
    """The administrator's own listener, logging and the CORS file applied to its services."""

    listener: Listener = Listener(port=8079, id="admin")
    logging: LoggingConfig = LoggingConfig()
    cors: Path | None = None
    auth: AdminAuth | None = None
    writes: AdminWrites = AdminWrites()
    #: More ``host[:port]`` names the admin listener answers to (loopback names and its own host always).
    allowed_hosts: tuple[str, ...] = ()
    #: More origins (``https://console.example``) whose pages may call the admin API (its own origin always).
    allowed_origins: tuple[str, ...] = ()
    #: Addresses or networks of reverse proxies whose ``X-Forwarded-*``/``Forwarded`` headers are believed.
    trusted_proxies: tuple[str, ...] = ()
    #: A listener of its own for ``GET /metrics`` (Prometheus's scrape, no token asked); None: the admin API's only.
    metrics_listener: Listener | None = None


@attrs.frozen
class ServerConfig:
    """The server file: configures the administrator and lists the managed services."""

    path: Path
    administrator: AdministratorConfig
    services: tuple[ManagedService, ...] = ()


@attrs.frozen
class Provider:
    """Who provides the service (capabilities ``provider``)."""

    name: str
    mail: str
    site: str = ""


@attrs.frozen
class ApplicationInfo:
    """Application information, shown in capabilities; language/keywords/contact are INSPIRE fields."""

    name: str
    title: str
    description: str
    language: str = ""
    keywords: tuple[str, ...] = ()
    contact: str = ""
    provider: Provider | None = None


@attrs.frozen
class ApiRef:
    """An API the service serves, by name and version (``simple/1.0.0``, ``osrm/1.0.0``...)."""

    name: str
    version: str


@attrs.frozen
class Folders:
    """Where a service finds its sources, resources and projections."""

    sources: tuple[Path, ...] = ()
    resources: tuple[Path, ...] = ()
    projections: Path | None = None


@attrs.frozen
class Limits:
    """Request-time limits shared by the service's sources unless a source sets its own."""

    engine_timeout: float = 10.0
    max_body_bytes: int = 1_000_000
    #: A source that fails to connect is retried after this many seconds, then twice as long each time...
    connect_retry_initial: float = 2.0
    #: ...but never more than this many seconds apart.
    connect_retry_max: float = 300.0


@attrs.frozen
class Http:
    """The HTTP server of a service's listeners (``[http]`` of a service file).

    ``server``: ``uvicorn`` (the default: less CPU per request) or ``hypercorn``
    (the design's server); both serve every listener, certificate, shared socket and graceful stop.
    """

    server: Literal["hypercorn", "uvicorn"] = "uvicorn"
    #: Seconds a request's head (request line and headers) may take to arrive, from the connection's
    #: start or, on a kept-alive connection, from the request's first byte.
    head_timeout: float = 10.0
    #: Seconds a request's body may take to arrive once its head has.
    body_timeout: float = 30.0
    #: Seconds a kept-alive connection may wait for its next request.
    keep_alive_timeout: float = 5.0
    #: Seconds a response's bytes may wait for a client that takes none of them (it stopped reading); then the connection is cut.
    send_timeout: float = 30.0
    #: Longest URL (path and query string) of a request, in bytes; beyond: 414.
    max_url_bytes: int = 16384
    #: Most bytes of a request's header lines; beyond: 431.
    max_header_bytes: int = 32768
    #: Open connections per worker process; None: half the open-file limit, at most 10,000. Beyond: 503.
    max_connections: int | None = None
    #: Addresses or networks of reverse proxies whose ``X-Forwarded-*``/``Forwarded`` headers are believed.
    trusted_proxies: tuple[str, ...] = ()


@attrs.frozen
class Quota:
    """What one caller may use of a service: ``requests`` per ``window`` seconds and ``concurrent`` requests at once.

    None: no such limit. Counted across all the workers of the service.
    """

    requests: int | None = None
    window: float = 60.0
    concurrent: int | None = None


@attrs.frozen
class AccessJwt:
    """Bearer JWTs from the IAM accepted on the routing APIs (as ``[administrator.auth.jwt]``, the role optional)."""

    issuer: str
    #: Accepted ``aud`` values (any one suffices); empty: the audience is not checked.
    audiences: tuple[str, ...] = ()
    #: A role the token must carry ("": any valid token of the realm).
    role: str = ""
    roles_claim: str = "realm_access.roles"
    leeway: float = 0.0
    jwks_min_refresh_interval: float = 5.0
    timeout: float = 10.0


@attrs.frozen
class Access:
    """Who may use the routing APIs of a service (``[access]``), and how much of it.

    Callers show an API key (``keys_file``, made with ``roadkit api-key``) or an IAM bearer token
    (``jwt``); with ``anonymous`` others are served too, each client address with ``anonymous_quota``.
    ``tracked_clients`` bounds the table of counters shared by the workers.
    """

    keys_file: Path | None = None
    jwt: AccessJwt | None = None
    anonymous: bool = False
    quota: Quota = Quota()
    anonymous_quota: Quota = Quota(requests=60, window=60.0, concurrent=4)
    tracked_clients: int = 10_000


@attrs.frozen
class Probes:
    """The probes of a service's listeners (``[probes]``): liveness and readiness paths, and the stop delay.

    ``stop_delay``: seconds a stopping worker keeps serving after its readiness turned 503, so that a
    load balancer polling it moves the traffic elsewhere before the worker drains.
    """

    health: str = "/healthz"
    ready: str = "/readyz"
    stop_delay: float = 0.0


@attrs.frozen
class AccessLogConfig:
    """The JSON-lines access log of a service (``[access_log]``): off unless ``enabled``; ``file`` None: stderr."""

    enabled: bool = False
    file: Path | None = None


@attrs.frozen
class OgcApiRoutesConfig:
    """The OGC API – Routes of a service (``[ogcapi_routes]``): where its stored routes live and for how long."""

    #: The SQLite file of the stored routes (relative: to the service file's folder), shared by the workers.
    store: Path = Path("ogcapi-routes.sqlite")
    #: Seconds a stored route is kept after it was computed.
    keep: float = 86400.0
    #: The most routes stored: past it, the oldest go.
    max_routes: int = 10_000
    #: The most asynchronous routes computing at once in a worker: past it, 503.
    max_async: int = 32
    #: Whether a ``subscriber`` callback may name a loopback, link-local or private address.
    private_callbacks: bool = False


@attrs.frozen
class ServiceConfig:
    """A service file."""

    path: Path
    application: ApplicationInfo
    listeners: tuple[Listener, ...] = (Listener(),)
    apis: tuple[ApiRef, ...] = (ApiRef("simple", "1.0.0"),)
    folders: Folders = Folders()
    limits: Limits = Limits()
    cors: dict[str, Any] | None = None
    http: Http = Http()
    #: Access control of the routing APIs (None: open to all, no quotas).
    access: Access | None = None
    probes: Probes = Probes()
    access_log: AccessLogConfig = AccessLogConfig()
    ogcapi_routes: OgcApiRoutesConfig = OgcApiRoutesConfig()


@attrs.frozen
class SourceConfig:
    """The common part of a ``*.source`` file; ``options`` is the kind-specific rest."""

    path: Path
    id: str
    type: str
    description: str = ""
    projection: str = "EPSG:4326"
    bbox: tuple[float, float, float, float] | None = None
    timeout: float | None = None
    options: dict[str, Any] = attrs.field(factory=dict)
    #: The version of its data in use (``version`` key; see roadkit.routing.versions); None: unversioned.
    version: str | None = None


#: How a data version is written: it becomes part of a file path or of an SQL name.
DATA_VERSION_REGEX = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
DATA_VERSION_EXPECTED = "expected letters, digits, '.', '_' or '-' (at most 64, starting with a letter or a digit)"


@attrs.frozen
class ResourceConfig:
    """A ``*.resource`` file: sources and, per operation, raw parameter settings."""

    path: Path
    id: str
    type: str
    sources: tuple[str, ...]
    operations: dict[str, dict[str, Any]]
    description: str = ""
    version: str = ""
    #: per-API settings, ``[apis.<name>]`` (e.g. ``apis.osrm`` for the native OSRM API), read by the API's plugin
    apis: dict[str, dict[str, Any]] = attrs.field(factory=dict)
