"""Loading the server file, service files, ``*.source`` and ``*.resource`` files.

Every loader collects all problems before raising one ConfigurationError, so a user fixes a
configuration in one pass.
"""

from __future__ import annotations

import grp
import ipaddress
import logging
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from roadkit.config import allocator
from roadkit.config.convert import structure
from roadkit.config.files import read_document, resolve
from roadkit.config.models import (
    DATA_VERSION_EXPECTED,
    DATA_VERSION_REGEX,
    Access,
    AccessLogConfig,
    AdminAuth,
    AdministratorConfig,
    AdminWrites,
    ApiRef,
    ApplicationInfo,
    Folders,
    Http,
    Limits,
    Listener,
    ManagedService,
    OgcApiRoutesConfig,
    Probes,
    ResourceConfig,
    ServerConfig,
    ServiceConfig,
    SourceConfig,
)
from roadkit.config.road2 import (
    application_info,
    from_road2_server,
    from_road2_service,
    is_road2_server,
    is_road2_service,
    road2_server_key,
)
from roadkit.config.sites import IPV6_ALTERNATIVES, check_proxies, check_sites
from roadkit.errors import ConfigurationError

log = logging.getLogger(__name__)

#: A bbox as text, ``xmin,ymin,xmax,ymax`` in plain decimals (also the admin OpenAPI ``pattern``).
BBOX_REGEX = r"^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$"
_BBOX = re.compile(BBOX_REGEX)
_ROAD2_PARAMETER_IDS = {"bbox": "getBbox", "projection": "crs", "number": "nbPoints"}
#: An IPv6 address in text form (shared with the ``trusted_proxies`` pattern).
_IPV6 = IPV6_ALTERNATIVES
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
#: A listener's host: an IPv4 address or a host name (RFC 1123 labels), or an IPv6 address.
#: Also the admin OpenAPI ``pattern`` (with ``maxLength`` HOST_MAX_LENGTH).
HOST_REGEX = f"^(?:{_IPV6}|(?:{_LABEL}\\.)*{_LABEL})$"
HOST_MAX_LENGTH = 253

#: Bounds (seconds, inclusive) of each duration a file or an admin write may set, also published in the
#: admin OpenAPI document: below them nothing can be ready or answer in time (a start-up time-out of
#: 5e-324 s), above them a mistyped number that never expires.
STARTUP_TIMEOUT = (10.0, 86400.0)
STOP_TIMEOUT = (0.1, 3600.0)
ENGINE_TIMEOUT = (0.001, 3600.0)
#: ``limits.max_body_bytes``: a body (or a query) is held in memory whole.
BODY_BYTES = (1, 1 << 30)
RETRY_WAIT = (0.01, 86400.0)
#: A connection's deadlines, ``[http]`` head_timeout, body_timeout, keep_alive_timeout and send_timeout.
CONNECTION_TIMEOUT = (0.05, 3600.0)
#: ``[http]`` max_url_bytes and max_header_bytes: below, ordinary requests no longer fit; above, one
#: connection's head could take a worker's memory.
HEAD_BYTES = (1024, 1_048_576)
#: ``[http]`` max_connections (also lowered at start to fit the process's open-file limit).
MAX_CONNECTIONS = (1, 1_000_000)


#: Seconds the OGC API – Routes keeps a stored route: a minute to a year.
ROUTES_KEPT = (60.0, 31_536_000.0)


def seconds_problem(value: Any, bounds: tuple[float, float]) -> str | None:
    """What is wrong with ``value`` as a number of seconds within ``bounds``, or None."""
    low, high = bounds
    if isinstance(value, int | float) and not isinstance(value, bool) and low <= value <= high:
        return None
    return f"expected a number of seconds from {low:g} to {high:g}, got {value!r}"


_HOST = re.compile(HOST_REGEX)


def _resolve_listener(base: Path, listener: Listener) -> Listener:
    return attrs.evolve(
        listener,
        certfile=resolve(base, listener.certfile) if listener.certfile else None,
        keyfile=resolve(base, listener.keyfile) if listener.keyfile else None,
    )


def valid_host(host: str) -> bool:
    """Whether ``host`` can name a listening address: an IP address or a host name of at most 253 characters."""
    return len(host) <= HOST_MAX_LENGTH and _HOST.fullmatch(host) is not None


def _check_listener(path: Path, key: str, listener: Listener, problems: list[str]) -> None:
    if not valid_host(listener.host):
        problems.append(f"{path}: {key}.host: expected an IP address or a host name (0.0.0.0 for every interface), got {listener.host!r}")
    if not 0 < listener.port < 65536:
        problems.append(f"{path}: {key}.port: expected a port between 1 and 65535, got {listener.port}")
    if (listener.certfile is None) != (listener.keyfile is None):
        problems.append(f"{path}: {key}: expected both certfile and keyfile for HTTPS, or neither")
    for name in ("certfile", "keyfile"):
        value = getattr(listener, name)
        if value is not None and not value.is_file():
            problems.append(f"{path}: {key}.{name}: expected a readable file, got {str(value)!r}")


def load_server(path: Path | str) -> ServerConfig:
    """The server file (administrator listener, logging, CORS file, managed services)."""
    path = Path(path).resolve()
    return parse_server(read_document(path), path)


def parse_server(data: dict[str, Any], path: Path) -> ServerConfig:
    """A server document that belongs at ``path`` (the admin API checks a changed one before writing it)."""
    if not is_road2_server(data):
        return _parse_server(data, path)
    try:
        return _parse_server(from_road2_server(data, path), path)
    except ConfigurationError as exc:  # problems found after the translation name Road2's keys
        raise ConfigurationError([road2_server_key(problem, path) for problem in exc.problems]) from None


def _parse_server(data: dict[str, Any], path: Path) -> ServerConfig:
    problems: list[str] = []
    data = dict(data)
    admin_data = data.pop("administrator", {})
    services_data = data.pop("services", [])
    for extra in data:
        problems.append(f"{path}: {extra}: unknown key (expected administrator, services)")
    admin = AdministratorConfig()
    try:
        admin = structure(admin_data, AdministratorConfig, path, "administrator")
    except ConfigurationError as exc:
        problems.extend(exc.problems)
    services: list[ManagedService] = []
    if not isinstance(services_data, list):
        problems.append(f"{path}: services: expected a list of [[services]] tables")
        services_data = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(services_data):
        service, found = managed_service(entry, path, f"services[{i}]")
        problems.extend(found)
        if service is None:
            continue
        if service.id in seen:
            problems.append(f"{path}: services[{i}].id: service id {service.id!r} is already used by services[{seen[service.id]}]")
        seen.setdefault(service.id, i)
        services.append(attrs.evolve(service, configuration=resolve(path, service.configuration)))
    listener = _resolve_listener(path, admin.listener)
    _check_listener(path, "administrator.listener", listener, problems)
    cors = resolve(path, admin.cors) if admin.cors else None
    if cors is not None and not cors.is_file():
        problems.append(f"{path}: administrator.cors: expected a CORS file, got {str(admin.cors)!r} (not found)")
    logging_config = admin.logging
    if logging_config.file is not None:
        logging_config = attrs.evolve(logging_config, file=resolve(path, logging_config.file))
    metrics_listener = _resolve_listener(path, admin.metrics_listener) if admin.metrics_listener is not None else None
    if metrics_listener is not None:
        _check_listener(path, "administrator.metrics_listener", metrics_listener, problems)
        if metrics_listener.port == listener.port:
            problems.append(
                f"{path}: administrator.metrics_listener.port: expected a port other than the admin listener's, got {metrics_listener.port}"
            )
    auth = _check_auth(path, admin.auth, listener, problems)
    check_sites(path, "administrator.", admin.allowed_hosts, admin.allowed_origins, admin.trusted_proxies, problems)
    writes = _check_writes(path, admin.writes, problems)
    if problems:
        raise ConfigurationError(problems)
    return ServerConfig(
        path=path,
        administrator=attrs.evolve(
            admin, listener=listener, cors=cors, logging=logging_config, auth=auth, writes=writes, metrics_listener=metrics_listener
        ),
        services=tuple(services),
    )


def managed_service(entry: Any, path: Path, key: str) -> tuple[ManagedService | None, list[str]]:
    """A ``[[services]]`` entry of the server file at ``path`` and its problems (``key``: where it is in the file)."""
    try:
        service = structure(entry, ManagedService, path, key)
    except ConfigurationError as exc:
        return None, list(exc.problems)
    problems: list[str] = []
    if service.mode == "same-process" and service.workers != 1:
        problems.append(f'{path}: {key}.workers: several workers need mode = "child-process" (got mode = "same-process")')
    wrong_allocator = allocator.problem(service.allocator)
    if wrong_allocator is not None:
        problems.append(f"{path}: {key}.allocator: {wrong_allocator}")
    elif service.mode == "same-process" and service.allocator not in ("auto", "system"):
        problems.append(
            f'{path}: {key}.allocator: {service.allocator!r} needs mode = "child-process": a same-process service runs in '
            'the administrator\'s process, started with its allocator already (set "auto" or "system", or use child processes)'
        )
    for name, bounds in (("startup_timeout", STARTUP_TIMEOUT), ("stop_timeout", STOP_TIMEOUT)):
        if (problem := seconds_problem(getattr(service, name), bounds)) is not None:
            problems.append(f"{path}: {key}.{name}: {problem}")
    backoff = service.backoff
    if backoff.initial <= 0 or backoff.factor < 1 or backoff.max < backoff.initial or backoff.reset_after < 0:
        problems.append(
            f"{path}: {key}.backoff: expected 0 < initial <= max, factor >= 1 and reset_after >= 0, got {attrs.asdict(backoff)}"
        )
    return service, problems


def _check_writes(path: Path, writes: AdminWrites, problems: list[str]) -> AdminWrites:
    """``[administrator.writes]`` with its folders resolved; its problems added to ``problems``."""
    folders = tuple(resolve(path, folder) for folder in writes.folders)
    for i, folder in enumerate(folders):
        if not folder.is_dir():
            problems.append(f"{path}: administrator.writes.folders[{i}]: expected a folder, got {str(writes.folders[i])!r} (not found)")
    for i, host in enumerate(writes.hosts):
        if not valid_host(host.strip("[]")) and not _is_network(host):
            problems.append(
                f"{path}: administrator.writes.hosts[{i}]: expected a host name, an IP address or a network (10.0.0.0/8), got {host!r}"
            )
    if writes.group is not None:
        try:
            grp.getgrnam(writes.group)
        except KeyError:
            problems.append(f"{path}: administrator.writes.group: expected a group of this machine, got {writes.group!r} (unknown)")
    return attrs.evolve(writes, folders=folders)


def _is_network(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


LOOPBACK_HOSTS = ("localhost", "::1")


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    return host in LOOPBACK_HOSTS or host.startswith("127.") or host.startswith("::ffff:127.")


def _check_auth(path: Path, auth: AdminAuth | None, listener: Listener, problems: list[str]) -> AdminAuth | None:
    if auth is None or (auth.jwt is None and auth.tokens_file is None):
        if not is_loopback(listener.host):
            problems.append(
                f"{path}: administrator.listener.host: the admin API would listen on {listener.host!r}, which other machines can reach, "
                "with no authentication: anyone reaching it could change or stop the services. Configure [administrator.auth] "
                "(jwt and/or tokens_file) or listen on 127.0.0.1"
            )
        return auth
    if auth.jwt is not None:
        if not auth.jwt.issuer.startswith(("http://", "https://")):
            problems.append(
                f"{path}: administrator.auth.jwt.issuer: expected the IAM realm's URL (http(s)://.../realms/NAME), got {auth.jwt.issuer!r}"
            )
        if not auth.jwt.role:
            problems.append(f"{path}: administrator.auth.jwt.role: expected the role an admin token must carry, got an empty string")
        if not [audience for audience in auth.jwt.audiences if audience.strip()]:
            problems.append(
                f"{path}: administrator.auth.jwt.audiences: expected the client ids of the admin API (a token's aud or azp must "
                "name one), got none: without them a token the realm issued to any other client (a browser app's) would be accepted"
            )
    if auth.tokens_file is not None:
        tokens_file = resolve(path, auth.tokens_file)
        if not tokens_file.is_file():
            problems.append(
                f"{path}: administrator.auth.tokens_file: expected a file of token hashes (create "
                f"one with 'roadkit admin-token'), got {str(auth.tokens_file)!r} (not found)"
            )
        auth = attrs.evolve(auth, tokens_file=tokens_file)
    if auth.protect_reads is None:
        # Reads show the services' configuration: only this machine may see them without a token.
        auth = attrs.evolve(auth, protect_reads=not is_loopback(listener.host))
    return auth


def load_cors(path: Path | None) -> dict[str, Any] | None:
    """Starlette CORSMiddleware options from a CORS file (TOML, or Road2's JSON ``cors`` options)."""
    if path is None:
        return None
    data = read_document(path)
    problems: list[str] = []

    def strings(key: str, value: Any) -> list[str]:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
        problems.append(f"{path}: {key}: expected a string or a list of strings, got {value!r}")
        return []

    options: dict[str, Any] = {"allow_origins": [], "allow_methods": ["GET", "POST", "OPTIONS"], "allow_headers": ["*"]}
    mapping = {
        "origin": "allow_origins",
        "origins": "allow_origins",
        "allow_origins": "allow_origins",
        "methods": "allow_methods",
        "allow_methods": "allow_methods",
        "allowedHeaders": "allow_headers",
        "headers": "allow_headers",
        "allow_headers": "allow_headers",
        "exposedHeaders": "expose_headers",
        "expose_headers": "expose_headers",
    }
    for key, value in data.items():
        if key in {"origin", "origins"} and isinstance(value, bool):
            # npm cors: true reflects the request's origin (any origin), false turns CORS off.
            if not value:
                return None
            options["allow_origin_regex"] = ".*"
        elif (
            key in {"origin", "origins"}
            and isinstance(value, str)
            and len(value) > 2
            and value.startswith("/")
            and value.rstrip("gimsuy").endswith("/")
        ):
            # A regular expression literal (/pattern/flags), as npm cors takes a RegExp.
            pattern, flags = value[1:].rsplit("/", 1)
            try:
                re.compile(pattern)
            except re.error as exc:
                problems.append(f"{path}: {key}: expected a regular expression, got {value!r} ({exc})")
            # A RegExp matches anywhere in the origin (JavaScript's test); Starlette matches it whole.
            options["allow_origin_regex"] = f".*(?{'i' if 'i' in flags else ''}:{pattern}).*"
        elif key in mapping:
            options[mapping[key]] = strings(key, value)
        elif key in {"credentials", "allow_credentials"}:
            if not isinstance(value, bool):
                problems.append(f"{path}: {key}: expected a boolean, got {value!r}")
            options["allow_credentials"] = value
        elif key in {"maxAge", "max_age"}:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                problems.append(f"{path}: {key}: expected a number of seconds, got {value!r}")
            options["max_age"] = value
        elif key in {"origin_regex", "allow_origin_regex"}:
            options["allow_origin_regex"] = value
        elif key in {"preflightContinue", "optionsSuccessStatus"}:
            continue  # npm-cors options with no equivalent: accepted for Road2 files
        else:
            problems.append(f"{path}: {key}: unknown CORS option")
    if problems:
        raise ConfigurationError(problems)
    return options


def load_service(path: Path | str, *, cors: Path | None = None) -> ServiceConfig:
    """A service file, with folders resolved relative to it and the CORS options read."""
    path = Path(path).resolve()
    return parse_service(read_document(path), path, cors=cors)


def parse_service(
    data: dict[str, Any], path: Path, *, cors: Path | None = None, missing_folders: list[Path] | None = None
) -> ServiceConfig:
    """A service document that belongs at ``path``; every problem at once.

    With ``missing_folders`` (the admin API creating a service), sources and resources folders
    that do not exist yet are listed there instead of being problems: the caller creates them.
    """
    problems: list[str] = []
    if is_road2_service(data):
        data, own_cors = from_road2_service(data, path)
        cors = own_cors or cors  # the service's own CORS file, as in Road2, else the administrator's
    elif isinstance(data.get("application"), dict):
        info_problems: list[str] = []
        data = {**data, "application": {**data["application"], **application_info(data["application"], path, info_problems)}}
        if info_problems:
            raise ConfigurationError(info_problems)
    config = structure(dict(data), _ServiceFile, path)
    listeners = tuple(_resolve_listener(path, listener) for listener in config.listeners)
    ids: set[str] = set()
    for i, listener in enumerate(listeners):
        _check_listener(path, f"listeners[{i}]", listener, problems)
        if listener.id in ids:
            problems.append(f"{path}: listeners[{i}].id: listener id {listener.id!r} is used twice")
        ids.add(listener.id)
    folders = Folders(
        sources=tuple(resolve(path, p) for p in config.folders.sources),
        resources=tuple(resolve(path, p) for p in config.folders.resources),
        projections=resolve(path, config.folders.projections) if config.folders.projections else None,
    )
    for key, group in (("sources", folders.sources), ("resources", folders.resources)):
        for i, folder in enumerate(group):
            if not folder.is_dir():
                if missing_folders is not None and not folder.exists():
                    missing_folders.append(folder)
                    continue
                problems.append(f"{path}: folders.{key}[{i}]: expected a folder, got {str(folder)!r} (not found)")
    if folders.projections is not None and not folders.projections.is_dir():
        problems.append(f"{path}: folders.projections: expected a folder, got {str(folders.projections)!r} (not found)")
    limits = config.limits
    if not BODY_BYTES[0] <= limits.max_body_bytes <= BODY_BYTES[1]:
        low, high = BODY_BYTES
        problems.append(f"{path}: limits.max_body_bytes: expected a number of bytes from {low} to {high}, got {limits.max_body_bytes}")
    # Each is checked alone: a maximum below the first wait simply caps every wait (min(max, initial * 2**n)),
    # and a rule between two keys is one the admin API's OpenAPI document could not state.
    for key, bounds in (("engine_timeout", ENGINE_TIMEOUT), ("connect_retry_initial", RETRY_WAIT), ("connect_retry_max", RETRY_WAIT)):
        if (problem := seconds_problem(getattr(limits, key), bounds)) is not None:
            problems.append(f"{path}: limits.{key}: {problem}")
    check_proxies(path, "http.trusted_proxies", config.http.trusted_proxies, problems)
    _check_http(path, config.http, problems)
    access = _check_access(path, config.access, problems)
    _check_probes(path, config.probes, problems)
    access_log = config.access_log
    if access_log.file is not None:
        log_file = resolve(path, access_log.file)
        access_log = attrs.evolve(access_log, file=log_file)
        if not log_file.parent.is_dir():
            problems.append(f"{path}: access_log.file: expected a file in an existing folder, got {str(log_file)!r}")
    ogc = config.ogcapi_routes
    ogc = attrs.evolve(ogc, store=resolve(path, ogc.store))
    if not ogc.store.parent.is_dir():
        problems.append(f"{path}: ogcapi_routes.store: expected a file in an existing folder, got {str(ogc.store)!r}")
    if (problem := seconds_problem(ogc.keep, ROUTES_KEPT)) is not None:
        problems.append(f"{path}: ogcapi_routes.keep: {problem}")
    for key, most in (("max_routes", 10_000_000), ("max_async", 10_000)):
        value = getattr(ogc, key)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            problems.append(f"{path}: ogcapi_routes.{key}: expected an integer from 1 to {most}, got {value!r}")
    cors_options = None
    try:
        cors_options = load_cors(cors)
    except ConfigurationError as exc:
        problems.extend(exc.problems)
    if problems:
        raise ConfigurationError(problems)
    return ServiceConfig(
        path=path,
        application=config.application,
        listeners=listeners,
        apis=config.apis,
        folders=folders,
        limits=config.limits,
        cors=cors_options,
        http=config.http,
        access=access,
        probes=config.probes,
        access_log=access_log,
        ogcapi_routes=ogc,
    )


@attrs.frozen
class _ServiceFile:
    application: ApplicationInfo
    listeners: tuple[Listener, ...] = (Listener(),)
    apis: tuple[ApiRef, ...] = (ApiRef("simple", "1.0.0"),)
    folders: Folders = attrs.field(factory=Folders)
    limits: Limits = attrs.field(factory=Limits)
    http: Http = attrs.field(factory=Http)
    access: Access | None = None
    probes: Probes = attrs.field(factory=Probes)
    access_log: AccessLogConfig = attrs.field(factory=AccessLogConfig)
    ogcapi_routes: OgcApiRoutesConfig = attrs.field(factory=OgcApiRoutesConfig)


#: ``[probes] stop_delay``: beyond a few minutes a stop would outlast any orchestrator's patience.
STOP_DELAY = (0.0, 300.0)
#: A probe path: a slash, then at most 255 visible ASCII characters.
PROBE_PATH = re.compile(r"^/[!-~]{0,255}$")


def _check_probes(path: Path, probes: Probes, problems: list[str]) -> None:
    for key in ("health", "ready"):
        value = getattr(probes, key)
        if not PROBE_PATH.fullmatch(value) or value == "/" or "?" in value or "#" in value:
            problems.append(f"{path}: probes.{key}: expected a path such as '/{key}z' (no query, no space), got {value!r}")
    if probes.health == probes.ready:
        problems.append(f"{path}: probes.ready: expected a path other than probes.health, got {probes.ready!r} for both")
    if (problem := seconds_problem(probes.stop_delay, STOP_DELAY)) is not None:
        problems.append(f"{path}: probes.stop_delay: {problem}")


#: The largest table of quota counters (``access.tracked_clients``): 40 bytes each, shared memory.
MAX_TRACKED_CLIENTS = 10_000_000
#: A quota's ``requests`` and ``concurrent`` (a count of requests) and its longest ``window`` (seconds in a leap year).
QUOTA_REQUESTS = (1, 2**31 - 1)
QUOTA_WINDOW = 31_622_400.0


def _check_http(path: Path, http: Http, problems: list[str]) -> None:
    for key in ("head_timeout", "body_timeout", "keep_alive_timeout", "send_timeout"):
        if (problem := seconds_problem(getattr(http, key), CONNECTION_TIMEOUT)) is not None:
            problems.append(f"{path}: http.{key}: {problem}")
    for key, (low, high), unit in (
        ("max_url_bytes", HEAD_BYTES, " bytes"),
        ("max_header_bytes", HEAD_BYTES, " bytes"),
        ("max_connections", MAX_CONNECTIONS, " connections"),
    ):
        value = getattr(http, key)
        if value is not None and not low <= value <= high:
            problems.append(f"{path}: http.{key}: expected {low} to {high}{unit}, got {value}")


def _check_access(path: Path, access: Access | None, problems: list[str]) -> Access | None:
    """``[access]`` with its keys file resolved; its problems added to ``problems``."""
    if access is None:
        return None
    if access.keys_file is None and access.jwt is None and not access.anonymous:
        problems.append(
            f"{path}: access: expected keys_file and/or [access.jwt], or anonymous = true (as it is, no request could be served)"
        )
    if access.jwt is not None:
        if not access.jwt.issuer.startswith(("http://", "https://")):
            problems.append(
                f"{path}: access.jwt.issuer: expected the IAM realm's URL (http(s)://.../realms/NAME), got {access.jwt.issuer!r}"
            )
        for name in ("leeway", "jwks_min_refresh_interval", "timeout"):
            value = getattr(access.jwt, name)
            if not (value > 0 if name == "timeout" else value >= 0) or value == float("inf"):
                wanted = "above 0" if name == "timeout" else "0 or more"
                problems.append(f"{path}: access.jwt.{name}: expected a number of seconds {wanted}, got {value:g}")
    for key, quota in (("quota", access.quota), ("anonymous_quota", access.anonymous_quota)):
        for name in ("requests", "concurrent"):
            value = getattr(quota, name)
            if value is not None and not QUOTA_REQUESTS[0] <= value <= QUOTA_REQUESTS[1]:
                problems.append(f"{path}: access.{key}.{name}: expected a number of requests from 1 to {QUOTA_REQUESTS[1]}, got {value}")
        if not 0 < quota.window <= QUOTA_WINDOW:
            problems.append(f"{path}: access.{key}.window: expected a number of seconds above 0, at most a year, got {quota.window:g}")
    if not 1 <= access.tracked_clients <= MAX_TRACKED_CLIENTS:
        problems.append(f"{path}: access.tracked_clients: expected a number from 1 to {MAX_TRACKED_CLIENTS}, got {access.tracked_clients}")
    if access.keys_file is None:
        return access
    keys_file = resolve(path, access.keys_file)
    if not keys_file.is_file():
        problems.append(
            f"{path}: access.keys_file: expected a file of API key hashes (create one with "
            f"'roadkit api-key create NAME --file {access.keys_file}'), got {str(access.keys_file)!r} (not found)"
        )
    return attrs.evolve(access, keys_file=keys_file)


def _files(folders: Iterable[Path], suffix: str) -> list[Path]:
    paths: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            # Hidden files are an editor's or a copy's (macOS writes "._x.source" beside "x.source").
            paths.extend(sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(suffix) and not p.name.startswith(".")))
    return paths


def parse_bbox(value: Any) -> tuple[float, float, float, float]:
    """A bbox from ``"xmin,ymin,xmax,ymax"`` or a list of four numbers; ValueError says what is wrong."""
    if isinstance(value, str):
        match = _BBOX.match(value)
        if not match:
            raise ValueError(f"expected 'xmin,ymin,xmax,ymax' with plain decimals, got {value!r}")
        numbers = [float(g) for g in match.groups()]
    elif isinstance(value, list | tuple) and len(value) == 4 and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        numbers = [float(v) for v in value]
    else:
        raise ValueError(f"expected 'xmin,ymin,xmax,ymax' or a list of four numbers, got {value!r}")
    xmin, ymin, xmax, ymax = numbers
    if not (xmin < xmax and ymin < ymax):
        raise ValueError(f"expected xmin < xmax and ymin < ymax, got {value!r}")
    return (xmin, ymin, xmax, ymax)


_SOURCE_COMMON = {"id": str, "type": str, "description": str, "projection": str}


def read_source(path: Path) -> SourceConfig:
    """One ``*.source`` file (TOML, or Road2 JSON, optionally wrapped in ``{"source": ...}``)."""
    return parse_source(read_document(path), path)


def parse_source(data: dict[str, Any], path: Path) -> SourceConfig:
    """A ``*.source`` document already read (or received by the admin API) that belongs at ``path``."""
    if set(data) == {"source"} and isinstance(data["source"], dict):
        data = data["source"]
    data = dict(data)
    problems: list[str] = []
    common: dict[str, Any] = {}
    for key, kind in _SOURCE_COMMON.items():
        if key in data:
            value = data.pop(key)
            if not isinstance(value, kind) or (key in {"id", "type"} and not value):
                problems.append(f"{path}: {key}: expected a non-empty string, got {value!r}")
            else:
                common[key] = value
        elif key in {"id", "type"}:
            problems.append(f"{path}: {key}: required key is missing")
    if "bbox" in data:
        try:
            common["bbox"] = parse_bbox(data.pop("bbox"))
        except ValueError as exc:
            problems.append(f"{path}: bbox: {exc}")
    if "timeout" in data:
        value = data.pop("timeout")
        if (problem := seconds_problem(value, ENGINE_TIMEOUT)) is not None:
            problems.append(f"{path}: timeout: {problem}")
        else:
            common["timeout"] = float(value)
    if "version" in data:
        value = data.pop("version")
        if not isinstance(value, str) or re.fullmatch(DATA_VERSION_REGEX, value) is None:
            problems.append(f"{path}: version: {DATA_VERSION_EXPECTED}, got {value!r}")
        else:
            common["version"] = value
    if problems:
        raise ConfigurationError(problems)
    if common["type"] == "pgr":  # Road2's name of the pgRouting kind, as for resources
        common["type"] = "pgrouting"
    return SourceConfig(path=path, options=data, **common)


def _read_all[C: (SourceConfig, ResourceConfig)](
    folders: Iterable[Path], suffix: str, read: Callable[[Path], C], what: str
) -> tuple[list[C], list[str]]:
    """Every ``*suffix`` file of the folders read with ``read``; duplicate ids are problems."""
    configs: list[C] = []
    problems: list[str] = []
    seen: dict[str, Path] = {}
    for path in _files(folders, suffix):
        try:
            config = read(path)
        except ConfigurationError as exc:
            problems.extend(exc.problems)
            continue
        if config.id in seen:
            first = next(c for c in configs if c.id == config.id)
            if what == "source" and attrs.evolve(config, path=first.path) == first:
                # Road2 accepts a source defined twice identically; the first file is used.
                log.info("%s: source %r is defined identically in %s; the first definition is used", path, config.id, first.path)
                continue
            problems.append(f"{path}: id: {what} id {config.id!r} is already defined in {seen[config.id]}")
            continue
        seen[config.id] = path
        configs.append(config)
    return configs, problems


def read_sources(folders: Iterable[Path]) -> tuple[list[SourceConfig], list[str]]:
    """Every ``*.source`` file of the folders, and the problems of those that could not be read."""
    return _read_all(folders, ".source", read_source, "source")


def _road2_parameter(entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    entry = dict(entry)
    pid = entry.pop("id", None)
    settings: dict[str, Any] = {}
    values = entry.pop("values", None)
    if isinstance(values, dict):
        settings.update(values)
    elif values is not None:
        settings["values"] = values
    if "defaultValueContent" in entry:
        settings["default"] = entry.pop("defaultValueContent")
    settings.update(entry)
    return _ROAD2_PARAMETER_IDS.get(pid, pid), settings


def _from_road2_resource(data: dict[str, Any]) -> dict[str, Any]:
    resource = dict(data["resource"])
    operations: dict[str, Any] = {}
    for op in resource.pop("availableOperations", []) or []:
        params = dict(_road2_parameter(p) for p in op.get("parameters", []) if isinstance(p, dict))
        operations[op.get("id")] = params
    resource["operations"] = operations
    if "resourceVersion" in resource:
        resource["version"] = resource.pop("resourceVersion")
    if resource.get("type") == "pgr":
        resource["type"] = "pgrouting"
    return resource


def read_resource(path: Path) -> ResourceConfig:
    """One ``*.resource`` file (TOML, or Road2's JSON ``{"resource": {...}}``)."""
    return parse_resource(read_document(path), path)


def parse_resource(data: dict[str, Any], path: Path) -> ResourceConfig:
    """A ``*.resource`` document already read (or received by the admin API) that belongs at ``path``."""
    if "resource" in data and isinstance(data["resource"], dict):
        data = _from_road2_resource(data)
    problems: list[str] = []
    operations = data.get("operations", {})
    if not isinstance(operations, dict) or not all(isinstance(v, dict) for v in operations.values()):
        problems.append(f"{path}: operations: expected a table of operations, each a table of parameters")
        operations = {}
    elif not operations:  # such a resource would refuse every request
        problems.append(f"{path}: operations: expected at least one operation (route, isochrone, nearest or matrix), got none")
    for op_id, params in operations.items():
        for pid, settings in params.items():
            if not isinstance(settings, dict):
                problems.append(f"{path}: operations.{op_id}.{pid}: expected a table of settings, got {settings!r}")
    apis = data.get("apis", {})
    if not isinstance(apis, dict) or not all(isinstance(v, dict) for v in apis.values()):
        problems.append(f"{path}: apis: expected a table of APIs, each a table of settings")
        apis = {}
    rest = {k: v for k, v in data.items() if k not in ("operations", "apis")}
    try:
        config = structure(rest | {"operations": {}}, _ResourceFile, path)
    except ConfigurationError as exc:
        problems.extend(exc.problems)
        config = None
    if config is not None and not config.sources:
        problems.append(f"{path}: sources: expected a non-empty list of source ids")
    if problems or config is None:
        raise ConfigurationError(problems)
    return ResourceConfig(
        path=path,
        id=config.id,
        type=config.type,
        sources=config.sources,
        operations={k: dict(v) for k, v in operations.items()},
        description=config.description,
        version=config.version,
        apis={k: dict(v) for k, v in apis.items()},
    )


@attrs.frozen
class _ResourceFile:
    id: str
    type: str
    sources: tuple[str, ...]
    operations: dict[str, Any]
    description: str = ""
    version: str = ""


def read_resources(folders: Iterable[Path]) -> tuple[list[ResourceConfig], list[str]]:
    """Every ``*.resource`` file of the folders, and the problems of those that could not be read."""
    return _read_all(folders, ".resource", read_resource, "resource")
