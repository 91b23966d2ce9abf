"""Road2's administration and service files, read with Road2's meaning.

Road2 configures its administrator with ``{"administration": {...}}`` and each service with
``{"application": {...}}`` whose folders, servers, logs and CORS file sit inside ``application``.
These functions turn such documents into roadkit's own shape (the server file, the service file)
and report every problem with Road2's key names. What roadkit can't honour is refused with the
file and key; what it does differently is said in the log, never changed silently.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from roadkit.config.files import read_document, resolve
from roadkit.errors import ConfigurationError

log = logging.getLogger(__name__)

_PORT = re.compile(r"^\d{1,5}$")
_MODES = {"sameProcess": "same-process", "newProcess": "child-process"}
_LEVELS = {
    "all": "debug",
    "trace": "debug",
    "debug": "debug",
    "info": "info",
    "warn": "warning",
    "error": "error",
    "fatal": "error",
    "mark": "error",
    "off": "error",
}
#: The keys of Road2's ``application`` object that roadkit's own service files never use.
_ROAD2_APPLICATION_KEYS = {"network", "logs", "operations", "projections", "sources", "resources", "apis", "url"}


def is_road2_server(data: dict[str, Any]) -> bool:
    """Whether a server document is Road2's administration file."""
    return "administration" in data


def is_road2_service(data: dict[str, Any]) -> bool:
    """Whether a service document is Road2's (its folders and servers inside ``application``)."""
    application = data.get("application")
    return isinstance(application, dict) and bool(_ROAD2_APPLICATION_KEYS & set(application))


def _string(value: Any, where: str, problems: list[str], *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        problems.append(
            f"{where}: expected a non-empty string, got {value!r}" if value is not None else f"{where}: required key is missing"
        )
        return None
    return value


def _server(data: Any, path: Path, key: str, problems: list[str]) -> dict[str, Any] | None:
    """A Road2 server object (``https`` and ``port`` as strings, ``options.key``/``options.cert``) as a listener."""
    where = f"{path}: {key}"
    if not isinstance(data, dict):
        problems.append(f"{where}: expected a server object {{id, https, host, port}}, got {data!r}")
        return None
    unknown = set(data) - {"id", "https", "host", "port", "options"}
    if unknown:
        problems.append(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    listener: dict[str, Any] = {}
    sid = _string(data.get("id"), f"{where}.id", problems)
    if sid:
        listener["id"] = sid
    host = _string(data.get("host"), f"{where}.host", problems)
    if host:
        listener["host"] = host
    port = data.get("port")
    if isinstance(port, int) and not isinstance(port, bool):
        port = str(port)
    if not isinstance(port, str) or not _PORT.match(port) or not 0 < int(port) < 65536:
        problems.append(f"{where}.port: expected a port number between 1 and 65535 (a string of digits), got {data.get('port')!r}")
    else:
        listener["port"] = int(port)
    https = data.get("https", "false")
    if https not in ("true", "false", True, False):
        problems.append(f'{where}.https: expected "true" or "false", got {https!r}')
        https = "false"
    options = data.get("options") or {}
    if not isinstance(options, dict) or set(options) - {"key", "cert"}:
        problems.append(f"{where}.options: expected {{key, cert}} (paths of the HTTPS key and certificate), got {options!r}")
        options = {}
    if https in ("true", True):
        key_file = _string(options.get("key"), f"{where}.options.key", problems)
        cert_file = _string(options.get("cert"), f"{where}.options.cert", problems)
        if key_file and cert_file:
            listener["keyfile"] = str(resolve(path, key_file))
            listener["certfile"] = str(resolve(path, cert_file))
    return listener


def _log4js(value: Any, path: Path, key: str, problems: list[str]) -> dict[str, Any]:
    """roadkit's logging settings from a Road2 log4js file: the default category's level and file."""
    where = f"{path}: {key}"
    file = _string(value, where, problems)
    if file is None:
        return {}
    log_path = resolve(path, file)
    try:
        data = read_document(log_path)
    except ConfigurationError as exc:
        problems.extend(f"{where}: {p}" for p in exc.problems)
        return {}
    main = data.get("mainConf")
    if not isinstance(main, dict) or not isinstance(main.get("appenders"), dict) or not isinstance(main.get("categories"), dict):
        problems.append(f"{log_path}: mainConf: expected a log4js configuration with appenders and categories")
        return {}
    default = main["categories"].get("default")
    if not isinstance(default, dict) or str(default.get("level", "")).lower() not in _LEVELS:
        problems.append(f"{log_path}: mainConf.categories.default.level: expected a log4js level ({', '.join(_LEVELS)})")
        return {}
    settings: dict[str, Any] = {"level": _LEVELS[str(default["level"]).lower()], "access_log": isinstance(data.get("httpConf"), dict)}
    files = [
        main["appenders"][name].get("filename")
        for name in default.get("appenders", [])
        if isinstance(main["appenders"].get(name), dict) and main["appenders"][name].get("type") in ("file", "dateFile", "fileSync")
    ]
    if files and isinstance(files[0], str):
        settings["file"] = files[0]
    log.info("%s: %s: roadkit applies the default category's level and its first file appender; log4js layouts are not applied", path, key)
    return settings


_SERVER_KEYS = (
    ("administrator.listener.certfile", "administration.network.server.options.cert"),
    ("administrator.listener.keyfile", "administration.network.server.options.key"),
    ("administrator.listener", "administration.network.server"),
    ("administrator.logging", "administration.logs.configuration"),
    ("services[", "administration.services["),
)


def road2_server_key(problem: str, path: Path) -> str:
    """A problem about a translated administration file, with Road2's key in place of roadkit's."""
    prefix = f"{path}: "
    if not problem.startswith(prefix):
        return problem
    rest = problem[len(prefix) :]
    for ours, theirs in _SERVER_KEYS:
        if rest.startswith(ours):
            return prefix + theirs + rest[len(ours) :]
    return problem


def from_road2_server(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """Road2's administration file as a roadkit server document (problems name Road2's keys)."""
    problems: list[str] = []
    admin = data.get("administration")
    if not isinstance(admin, dict):
        raise ConfigurationError([f"{path}: administration: expected an object"])
    for extra in set(data) - {"administration"}:
        problems.append(f"{path}: {extra}: unknown key (expected administration)")
    for extra in sorted(set(admin) - {"api", "services", "network", "logs"}):
        problems.append(f"{path}: administration.{extra}: unknown key (expected api, services, network, logs)")
    api = admin.get("api")
    if not isinstance(api, dict) or (api.get("name"), api.get("version")) != ("admin", "1.0.0"):
        problems.append(
            f'{path}: administration.api: expected {{"name": "admin", "version": "1.0.0"}} (the admin API roadkit serves), got {api!r}'
        )
    administrator: dict[str, Any] = {}
    network = admin.get("network")
    if not isinstance(network, dict) or "server" not in network:
        problems.append(f"{path}: administration.network.server: required key is missing")
    else:
        listener = _server(network["server"], path, "administration.network.server", problems)
        if listener:
            administrator["listener"] = listener
    logs = admin.get("logs")
    if logs is not None:
        if not isinstance(logs, dict):
            problems.append(f'{path}: administration.logs: expected {{"configuration": <log4js file>}}, got {logs!r}')
        else:
            administrator["logging"] = _log4js(logs.get("configuration"), path, "administration.logs.configuration", problems)
    services: list[dict[str, Any]] = []
    entries = admin.get("services", [])
    if not isinstance(entries, list):
        problems.append(f"{path}: administration.services: expected an array of services")
        entries = []
    if not entries:
        log.warning("%s: administration.services: no service configured", path)
    for i, entry in enumerate(entries):
        where = f"administration.services[{i}]"
        if not isinstance(entry, dict):
            problems.append(f"{path}: {where}: expected {{id, configuration, creationType}}, got {entry!r}")
            continue
        service: dict[str, Any] = {}
        for key in ("id", "configuration"):
            value = _string(entry.get(key), f"{path}: {where}.{key}", problems)
            if value:
                service[key] = value
        # Road2 refuses an entry without it; its documented mode, newProcess, is also a TOML file's default.
        creation = entry.get("creationType", "newProcess")
        if creation not in _MODES:
            problems.append(
                f"{path}: {where}.creationType: expected sameProcess or newProcess (findByURI is not supported), got {creation!r}"
            )
        else:
            service["mode"] = _MODES[creation]
        for extra in sorted(set(entry) - {"id", "configuration", "creationType"}):
            problems.append(f"{path}: {where}.{extra}: unknown key")
        services.append(service)
    if problems:
        raise ConfigurationError(problems)
    return {"administrator": administrator, "services": services}


def _folders(value: Any, path: Path, key: str, problems: list[str]) -> list[str]:
    """Road2's ``{"directories": [...]}``: empty entries are skipped with a warning, as Road2 does."""
    if not isinstance(value, dict) or not isinstance(value.get("directories"), list) or not value["directories"]:
        problems.append(f"{path}: {key}.directories: expected a non-empty array of folders, got {value!r}")
        return []
    folders = []
    for i, folder in enumerate(value["directories"]):
        if folder == "":
            log.warning("%s: %s.directories[%d]: empty entry skipped", path, key, i)
        elif isinstance(folder, str):
            folders.append(folder)
        else:
            problems.append(f"{path}: {key}.directories[{i}]: expected a folder path, got {folder!r}")
    return folders


def application_info(data: dict[str, Any], path: Path, problems: list[str]) -> dict[str, Any]:
    """The capabilities fields of ``application``: ``keywords`` as ``{"keyword": ...}`` and ``contact`` as
    ``{"email": ...}`` (Road2's shapes) become roadkit's list and string; other shapes are refused."""
    info = {k: v for k, v in data.items() if k in {"name", "title", "description", "language", "provider", "keywords", "contact"}}
    keywords = info.get("keywords")
    if isinstance(keywords, dict):
        if set(keywords) != {"keyword"}:
            problems.append(f'{path}: application.keywords: expected {{"keyword": <a string or an array of strings>}}, got {keywords!r}')
            info.pop("keywords")
        else:
            keyword = keywords["keyword"]
            info["keywords"] = [keyword] if isinstance(keyword, str) else keyword
    contact = info.get("contact")
    if isinstance(contact, dict):
        if set(contact) - {"email"}:
            problems.append(f'{path}: application.contact: expected {{"email": <an address>}}, got {contact!r}')
            info.pop("contact")
        else:
            info["contact"] = contact.get("email", "")
    return info


def from_road2_service(data: dict[str, Any], path: Path) -> tuple[dict[str, Any], Path | None]:
    """Road2's service file as a roadkit service document, and the CORS file it names (if any)."""
    problems: list[str] = []
    application = data["application"]
    for extra in sorted(set(data) - {"application"}):
        problems.append(f"{path}: {extra}: unknown key (expected application)")
    known = {"name", "title", "description", "language", "keywords", "contact", "provider"} | _ROAD2_APPLICATION_KEYS
    for extra in sorted(set(application) - known):
        problems.append(f"{path}: application.{extra}: unknown key")
    if "url" in application:
        log.info("%s: application.url: ignored (removed from Road2 in 2.3.0)", path)
    service: dict[str, Any] = {"application": application_info(application, path, problems)}
    logs = application.get("logs")
    if isinstance(logs, dict) and isinstance(logs.get("configuration"), str):
        if not resolve(path, logs["configuration"]).is_file():
            problems.append(f"{path}: application.logs.configuration: expected a log4js file, got {logs['configuration']!r} (not found)")
        else:
            log.info("%s: application.logs: a service logs through the administrator's logging in roadkit; this file is not applied", path)
    elif logs is not None:
        problems.append(f'{path}: application.logs: expected {{"configuration": <log4js file>}}, got {logs!r}')
    if "operations" in application:
        log.info(
            "%s: application.operations: roadkit's operations and parameters are built in (Road2's shipped ones); the folders are not read",
            path,
        )
    folders: dict[str, Any] = {}
    projections = application.get("projections")
    if projections is not None:
        if not isinstance(projections, dict) or not isinstance(projections.get("directory"), str):
            problems.append(f"{path}: application.projections.directory: expected a folder, got {projections!r}")
        else:
            folders["projections"] = projections["directory"]
    for key in ("sources", "resources"):
        if key in application:
            folders[key] = _folders(application[key], path, f"application.{key}", problems)
    service["folders"] = folders
    cors: Path | None = None
    network = application.get("network")
    if network is not None:
        if not isinstance(network, dict):
            problems.append(f"{path}: application.network: expected {{servers, cors}}, got {network!r}")
            network = {}
        for extra in sorted(set(network) - {"servers", "cors"}):
            problems.append(f"{path}: application.network.{extra}: unknown key")
        servers = network.get("servers")
        if not isinstance(servers, list) or not servers:
            problems.append(f"{path}: application.network.servers: expected a non-empty array of servers, got {servers!r}")
        else:
            listeners = [_server(s, path, f"application.network.servers[{i}]", problems) for i, s in enumerate(servers)]
            service["listeners"] = [listener for listener in listeners if listener]
        cors_block = network.get("cors")
        if cors_block is not None:
            if not isinstance(cors_block, dict) or not isinstance(cors_block.get("configuration"), str):
                problems.append(f"{path}: application.network.cors.configuration: expected a CORS file, got {cors_block!r}")
            else:
                cors = resolve(path, cors_block["configuration"])
                if not cors.is_file():
                    problems.append(
                        f"{path}: application.network.cors.configuration: expected a "
                        f"CORS file, got {cors_block['configuration']!r} (not found)"
                    )
    if "apis" in application:
        apis = application["apis"]
        if not isinstance(apis, list) or not apis:
            problems.append(f"{path}: application.apis: expected a non-empty array of {{name, version}}, got {apis!r}")
        else:
            service["apis"] = apis
    if problems:
        raise ConfigurationError(problems)
    return service, cors
