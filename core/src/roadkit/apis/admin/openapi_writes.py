"""OpenAPI paths and schemas of the admin API's writes: services created, changed, deleted; publication."""

from __future__ import annotations

from typing import Any

from roadkit.config.allocator import LIBRARIES, library_folders
from roadkit.config.loader import (
    BBOX_REGEX,
    CONNECTION_TIMEOUT,
    ENGINE_TIMEOUT,
    HEAD_BYTES,
    HOST_MAX_LENGTH,
    HOST_REGEX,
    MAX_CONNECTIONS,
    MAX_TRACKED_CLIENTS,
    QUOTA_REQUESTS,
    QUOTA_WINDOW,
    RETRY_WAIT,
    ROUTES_KEPT,
    STARTUP_TIMEOUT,
    STOP_DELAY,
)
from roadkit.config.models import DATA_VERSION_REGEX, max_workers
from roadkit.config.sites import NETWORK_REGEX
from roadkit.serving.documents import ID_REGEX

_ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_SERVICE = {
    "name": "service",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": ID_REGEX},
    "description": "A managed service id.",
}
_AUTH = {
    "401": {"description": "Authentication is configured and the bearer token is missing, wrong, expired or tampered with", **_ERROR},
    "403": {
        "description": "A valid token without the configured role, or a write from a non-loopback client with no authentication configured",
        **_ERROR,
    },
}
_UNWRITABLE = {"description": "A file could not be written (disk full, read-only file system); nothing changed", **_ERROR}
_INVALID = {"description": "Invalid body or id: the message lists every problem as 'file: key: expected ...', one per line", **_ERROR}
_BAD_ID = {"description": "An id that can't name a file (the message names the parameter)", **_ERROR}
_BLANK_SERVICE = {"description": "A blank service id (the message names the parameter)", **_ERROR}
_MEDIA = {"description": "The body is not application/json", **_ERROR}
#: Files on disk changed by hand since the administrator read them, so that they no longer load.
_HAND_EDITED = "the server file or the service file no longer loads (changed by hand since; the message names the key)"
_TOO_LARGE = {"description": "Body too large", **_ERROR}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _id(name: str, what: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": ID_REGEX},
        "description": f"A {what} id (also its file name).",
    }


def _publication(kind: str, title: str) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{title}Document"}
    stored = {"type": "object", "required": ["id", "type"], "properties": {"id": {"type": "string"}, "type": {"type": "string"}}}
    item = _id(kind, kind)
    # Source documents can hold credentials (a database password or DSN): read like a write (roadkit.auth.admin).
    read_auth = _AUTH if kind == "source" else {}
    return {
        f"/services/{{service}}/{kind}s": {
            "get": {
                "operationId": f"{kind}s",
                "summary": f"Every {kind} of a service as stored in its .{kind} files.",
                "parameters": [_SERVICE],
                "responses": {
                    "200": {"description": f"{title}s", **_json({"type": "array", "items": {"type": "object"}})},
                    "400": _BLANK_SERVICE,
                    **read_auth,
                    "404": {"description": "Unknown service", **_ERROR},
                    "409": {"description": f"The service file, or a {kind} file just listed, can't be read: {_HAND_EDITED}", **_ERROR},
                },
            },
        },
        f"/services/{{service}}/{kind}s/{{{kind}}}": {
            "get": {
                "operationId": f"get{title}",
                "summary": f"One {kind} as stored in its .{kind} file.",
                "parameters": [_SERVICE, item],
                "responses": {
                    "200": {"description": title, **_json({"type": "object"})},
                    "400": _BAD_ID,
                    **read_auth,
                    "404": {"description": f"Unknown service or {kind}", **_ERROR},
                    "409": {"description": f"The {kind} file or the service file can't be read: {_HAND_EDITED}", **_ERROR},
                },
            },
            "put": {
                "operationId": f"put{title}",
                "summary": (
                    f"Create or replace a {kind}: the document (the keys of a .{kind} file, as JSON) is checked, written atomically "
                    f"in the service's first {kind}s folder and applied by the running service without a restart."
                ),
                "parameters": [_SERVICE, item],
                "requestBody": {"required": True, **_json(ref)},
                "responses": {
                    "200": {"description": f"{title} replaced, as stored (with its id)", **_json(stored)},
                    "201": {"description": f"{title} created, as stored (with its id)", **_json(stored)},
                    "400": _INVALID,
                    **_AUTH,
                    "404": {"description": "Unknown service", **_ERROR},
                    "409": {
                        "description": (
                            f"A valid document that does not fit the service as it is now: the service has no {kind}s folder, "
                            f"a file named {{{kind}}}.{kind} in it defines another {kind}, an unknown projection or source, "
                            f"a source of another type, a {kind} type a resource using it can't take; or {_HAND_EDITED}"
                        ),
                        **_ERROR,
                    },
                    "413": _TOO_LARGE,
                    "415": _MEDIA,
                    "503": {
                        "description": f"The running service can't apply the {kind} (the file is restored), or a file could not be written",
                        **_ERROR,
                    },
                },
            },
            "delete": {
                "operationId": f"delete{title}",
                "summary": f"Remove a {kind} from the running service, then its file."
                + (" A source still used by a resource is a 409." if kind == "source" else ""),
                "parameters": [_SERVICE, item],
                "responses": {
                    "204": {"description": "Removed"},
                    "400": _BAD_ID,
                    **_AUTH,
                    "404": {"description": f"Unknown service or {kind}", **_ERROR},
                    "503": _UNWRITABLE,
                    "409": {"description": ("A resource still uses this source; or " if kind == "source" else "") + _HAND_EDITED, **_ERROR},
                },
            },
        },
    }


def write_paths() -> dict[str, Any]:
    """The paths of the admin API's write operations (merged into the admin document)."""
    service = {"$ref": "#/components/schemas/Service"}
    creation = {"$ref": "#/components/schemas/ServiceCreation"}
    change = {"$ref": "#/components/schemas/ServiceChange"}
    return secured(
        {
            "/services": {
                "post": {
                    "operationId": "createService",
                    "summary": (
                        "Create a service: its service file is written beside the server file, "
                        "added to the server file, and the service started."
                    ),
                    "requestBody": {"required": True, **_json(creation)},
                    "responses": {
                        "201": {"description": "Created and started (ready)", **_json(service)},
                        "400": _INVALID,
                        **_AUTH,
                        "409": {
                            "description": (
                                "A service with this id (or its file) already exists; a listener port is another service's or the "
                                "administrator's; a listener host is not an address of this machine; the projections folder, a "
                                f"certificate file or the keys file does not exist; {_HAND_EDITED}"
                            ),
                            **_ERROR,
                        },
                        "413": _TOO_LARGE,
                        "415": _MEDIA,
                        "503": {
                            "description": (
                                "The service can't start (a listener port another program holds, its start-up time-out...): "
                                "nothing was created; or a file could not be written"
                            ),
                            **_ERROR,
                        },
                    },
                },
            },
            "/services/{service}": {
                "put": {
                    "operationId": "modifyService",
                    "summary": (
                        "Replace a service's configuration (and change the mode, workers, startup_timeout, allocator sent): checked, "
                        "written atomically, then the service reloads (the old workers serve until the new ones are ready). "
                        "A change of mode stops the service and starts it in the other mode."
                    ),
                    "parameters": [_SERVICE],
                    "requestBody": {"required": True, **_json(change)},
                    "responses": {
                        "200": {"description": "Changed", **_json(service)},
                        "400": _INVALID,
                        **_AUTH,
                        "404": {"description": "Unknown service", **_ERROR},
                        "409": {
                            "description": (
                                "A listener port is another service's or the administrator's; a listener host is not an address "
                                "of this machine; the projections folder, a certificate file or the keys file does not exist; "
                                "mode or workers left out and the service's current ones do "
                                "not go with the other one sent (same-process runs one worker: send mode and workers together); "
                                + _HAND_EDITED
                            ),
                            **_ERROR,
                        },
                        "413": _TOO_LARGE,
                        "415": _MEDIA,
                        "503": {
                            "description": (
                                "The service can't start with the new configuration: the previous one keeps serving (after "
                                "a change of mode, it is started again) and the files are unchanged; or a file could not be written"
                            ),
                            **_ERROR,
                        },
                    },
                },
                "delete": {
                    "operationId": "deleteService",
                    "summary": "Stop a service and remove it from the server file (its service, source and resource files stay).",
                    "parameters": [_SERVICE],
                    "responses": {
                        "204": {"description": "Deleted"},
                        "400": _BLANK_SERVICE,
                        **_AUTH,
                        "404": {"description": "Unknown service", **_ERROR},
                        "409": {
                            "description": "The server file no longer loads (changed by hand since; the message names the key)",
                            **_ERROR,
                        },
                        "503": _UNWRITABLE,
                    },
                },
            },
            **_publication("source", "Source"),
            **_publication("resource", "Resource"),
            "/services/{service}/sources/{source}/version": {"post": _switch_version()},
        }
    )


def _switch_version() -> dict[str, Any]:
    version = {"type": "string", "pattern": DATA_VERSION_REGEX, "description": "A version built by 'roadkit prepare --version'."}
    return {
        "operationId": "switchSourceVersion",
        "summary": (
            "Point a source at another version of its data: every worker loads it beside the version in use, "
            "answers with it once it is loaded, then releases the old one. No request fails, nothing restarts."
        ),
        "parameters": [_SERVICE, _id("source", "source")],
        "requestBody": {
            "required": True,
            **_json({"type": "object", "required": ["version"], "additionalProperties": False, "properties": {"version": version}}),
        },
        "responses": {
            "200": {
                "description": "Every worker answers with the new version",
                **_json(
                    {
                        "type": "object",
                        "properties": {
                            "id": _TEXT,
                            "version": _TEXT,
                            "previousVersion": {"type": ["string", "null"]},
                            "source": {"type": "object"},
                        },
                    }
                ),
            },
            "400": {"description": "Invalid body, version or source id (the message names it)", **_ERROR},
            **_AUTH,
            "404": {"description": "Unknown service or source", **_ERROR},
            "409": {"description": f"That version's data is not built (the message names the missing files); or {_HAND_EDITED}", **_ERROR},
            "413": _TOO_LARGE,
            "415": _MEDIA,
            "503": {
                "description": "A worker could not load that version: the file is put back and every worker keeps the version in use",
                **_ERROR,
            },
        },
    }


#: Writes take a bearer token when [administrator.auth] is configured; none from loopback without it.
SECURITY: list[dict[str, list[str]]] = [{"bearer": []}, {}]
SECURITY_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "An IAM access token carrying the admin role, or a static admin token."}
}


def secured(paths: dict[str, Any]) -> dict[str, Any]:
    """``paths`` with the bearer security requirement on every write operation."""
    for operations in paths.values():
        for method, operation in operations.items():
            if method in ("post", "put", "delete", "patch"):
                operation["security"] = SECURITY
    return paths


_TEXT = {"type": "string"}
#: A path as the service file takes it (relative to the file, or absolute); the system refuses NUL.
_PATH = {"type": "string", "pattern": "^[^\\u0000]+$", "description": "A path ('~user' for a user of the server)."}


_PROBE_PATH = {"type": "string", "pattern": "^/[!-~]{1,255}$", "not": {"pattern": "[?#]"}}


def _closed(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def _seconds(bounds: tuple[float, float], description: str) -> dict[str, Any]:
    """A duration as the loader bounds it (roadkit.config.loader)."""
    return {"type": "number", "minimum": bounds[0], "maximum": bounds[1], "description": description}


#: A value a TOML file can hold: anything but null, at any depth (the files the writes store are TOML).
TOML_VALUE = {
    "type": ["string", "number", "boolean", "array", "object"],
    "items": {"$ref": "#/components/schemas/TomlValue"},
    "additionalProperties": {"$ref": "#/components/schemas/TomlValue"},
}
_TOML_TABLE = {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/TomlValue"}}


def service_configuration(apis: list[tuple[str, str]]) -> dict[str, Any]:
    """The keys of a service file as JSON (what ``parse_service`` accepts from the admin API)."""
    listener = _closed(
        {
            "id": {"type": "string", "default": "main"},
            "host": {
                "type": "string",
                "pattern": HOST_REGEX,
                "maxLength": HOST_MAX_LENGTH,
                "default": "127.0.0.1",
                "description": "An IP address (0.0.0.0 or :: for every interface) or a host name; 127.0.0.1 when left out.",
            },
            "port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 8080},
            "certfile": {**_PATH, "description": "HTTPS certificate: a readable file on the server (with keyfile)."},
            "keyfile": {**_PATH, "description": "HTTPS key: a readable file on the server (with certfile)."},
        }
    )
    listener["dependentRequired"] = {"certfile": ["keyfile"], "keyfile": ["certfile"]}
    return _closed(
        {
            "application": _closed(
                {
                    "name": _TEXT,
                    "title": _TEXT,
                    "description": _TEXT,
                    "language": _TEXT,
                    # Road2's shapes are accepted too: {"email": ...} and {"keyword": ...}.
                    "contact": {"anyOf": [_TEXT, _closed({"email": _TEXT})]},
                    "keywords": {
                        "anyOf": [
                            {"type": "array", "items": _TEXT},
                            _closed({"keyword": {"anyOf": [_TEXT, {"type": "array", "items": _TEXT}]}}, ("keyword",)),
                        ]
                    },
                    "provider": _closed({"name": _TEXT, "mail": _TEXT, "site": _TEXT}, ("name", "mail")),
                },
                ("name", "title", "description"),
            ),
            "listeners": {
                "type": "array",
                "items": listener,
                "maxItems": 1,
                "default": [{"id": "main", "host": "127.0.0.1", "port": 8080}],
                "description": "The service's listeners (one main listener by default on 127.0.0.1:8080).",
            },
            "apis": {
                "type": "array",
                "items": {"enum": [{"name": name, "version": version} for name, version in apis]},
                "description": "The APIs served, among those the installed plugins provide.",
            },
            "folders": _closed(
                {
                    "sources": {"type": "array", "items": _PATH, "description": "Created when missing."},
                    "resources": {"type": "array", "items": _PATH, "description": "Created when missing."},
                    "projections": {**_PATH, "description": "An existing folder of projection files."},
                }
            ),
            "limits": _closed(
                {
                    "engine_timeout": _seconds(ENGINE_TIMEOUT, "Seconds an engine may take to answer."),
                    "max_body_bytes": {"type": "integer", "minimum": 1, "maximum": 1 << 30},
                    "connect_retry_initial": _seconds(
                        RETRY_WAIT, "Seconds before a failed source connection is tried again, doubled after each failure."
                    ),
                    "connect_retry_max": _seconds(
                        RETRY_WAIT, "Longest wait between two connection attempts (a value below connect_retry_initial caps every wait)."
                    ),
                }
            ),
            "http": _closed(
                {
                    "server": {"enum": ["uvicorn", "hypercorn"], "description": "The HTTP server of the listeners (uvicorn by default)."},
                    "trusted_proxies": {
                        "type": "array",
                        "items": {"type": "string", "pattern": NETWORK_REGEX, "maxLength": 64},
                        "description": "Addresses or networks of reverse proxies whose X-Forwarded-* and Forwarded headers are believed.",
                    },
                    "head_timeout": _seconds(CONNECTION_TIMEOUT, "Seconds a request's head may take to arrive (10 by default)."),
                    "body_timeout": _seconds(CONNECTION_TIMEOUT, "Seconds a request's body may take to arrive after its head (30)."),
                    "keep_alive_timeout": _seconds(CONNECTION_TIMEOUT, "Seconds an idle kept-alive connection stays open (5)."),
                    "send_timeout": _seconds(
                        CONNECTION_TIMEOUT,
                        "Seconds a response's bytes may wait for a client that stopped reading; then the connection is cut (30).",
                    ),
                    "max_url_bytes": {
                        "type": "integer",
                        "minimum": HEAD_BYTES[0],
                        "maximum": HEAD_BYTES[1],
                        "description": "Longest URL of a request, in bytes (16384); beyond: 414.",
                    },
                    "max_header_bytes": {
                        "type": "integer",
                        "minimum": HEAD_BYTES[0],
                        "maximum": HEAD_BYTES[1],
                        "description": "Most bytes of a request's header lines (32768); beyond: 431.",
                    },
                    "max_connections": {
                        "type": "integer",
                        "minimum": MAX_CONNECTIONS[0],
                        "maximum": MAX_CONNECTIONS[1],
                        "description": "Open connections per worker process (half the open-file limit, at most 10000); beyond: 503.",
                    },
                }
            ),
            "access": _access_schema(),
            "probes": _closed(
                {
                    "health": {**_PROBE_PATH, "description": "The liveness probe's path (/healthz)."},
                    "ready": {**_PROBE_PATH, "description": "The readiness probe's path (/readyz)."},
                    "stop_delay": _seconds(STOP_DELAY, "Seconds a stopping worker serves on after its readiness turned 503 (0)."),
                }
            ),
            "access_log": _closed(
                {
                    "enabled": {"type": "boolean", "description": "Write a JSON line per answered request (false)."},
                    "file": {**_PATH, "description": "The file the lines are appended to (stderr when absent)."},
                }
            ),
            "ogcapi_routes": _closed(
                {
                    "store": {**_PATH, "description": "The SQLite file of the OGC API – Routes' stored routes (ogcapi-routes.sqlite)."},
                    "keep": _seconds(ROUTES_KEPT, "Seconds a stored route is kept (86400)."),
                    "max_routes": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 10_000_000,
                        "description": "The most routes stored (10000).",
                    },
                    "max_async": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 10_000,
                        "description": "Asynchronous routes computing at once per worker (32); beyond: 503.",
                    },
                    "private_callbacks": {"type": "boolean", "description": "Call subscribers at private addresses too (false)."},
                }
            ),
        },
        ("application",),
    )


def _access_schema() -> dict[str, Any]:
    """``[access]`` of a service file, bounded as the loader bounds it."""
    count = {"type": "integer", "minimum": QUOTA_REQUESTS[0], "maximum": QUOTA_REQUESTS[1]}
    quota = _closed(
        {
            "requests": {**count, "description": "Requests per window (none: no rate quota)."},
            "window": {"type": "number", "exclusiveMinimum": 0, "maximum": QUOTA_WINDOW, "description": "Seconds (60)."},
            "concurrent": {**count, "description": "Requests in progress at once (none: no such quota)."},
        }
    )
    jwt = _closed(
        {
            "issuer": {"type": "string", "pattern": "^https?://", "description": "The IAM realm's URL."},
            "audiences": {"type": "array", "items": _TEXT},
            "role": _TEXT,
            "roles_claim": _TEXT,
            "leeway": {"type": "number", "minimum": 0},
            "jwks_min_refresh_interval": {"type": "number", "minimum": 0},
            "timeout": {"type": "number", "exclusiveMinimum": 0},
        },
        ("issuer",),
    )
    access = _closed(
        {
            "keys_file": {**_PATH, "description": "The API keys file ('roadkit api-key create NAME --file ...')."},
            "jwt": jwt,
            "anonymous": {"type": "boolean", "description": "Serve requests without credentials, per client address (false)."},
            "quota": quota,
            "anonymous_quota": quota,
            "tracked_clients": {"type": "integer", "minimum": 1, "maximum": MAX_TRACKED_CLIENTS},
        }
    )
    # Some way to serve a request: keys, tokens or anonymous access (the loader refuses a table with none).
    anonymous = {"properties": {"anonymous": {"const": True}}, "required": ["anonymous"]}
    access["anyOf"] = [{"required": ["keys_file"]}, {"required": ["jwt"]}, anonymous]
    return access


def _library_path_pattern() -> str:
    """A file directly in one of the system's library folders (a name of more than dots), as the writes allow."""
    folders = "|".join(str(folder).replace(".", "\\.") for folder in library_folders())
    name = "[^/: \\u0000]*[^/: \\u0000.][^/: \\u0000]*"
    return f"^(?:{folders})/{name}$"


def write_schemas(
    apis: list[tuple[str, str]],
    source_kinds: list[str],
    resource_types: list[str],
    projections: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """The schemas the write operations refer to, exact for the installed plugins (``projections``: of the kinds that fix theirs)."""
    workers = {
        "description": f'Worker processes: "auto" (one per usable core) or 1 to {max_workers()}; more than 1 needs child-process.',
        "anyOf": [{"const": "auto"}, {"type": "integer", "minimum": 1, "maximum": max_workers()}],
    }
    entry = {
        "mode": {"type": "string", "enum": ["same-process", "child-process"]},
        "workers": workers,
        "startup_timeout": _seconds(STARTUP_TIMEOUT, "Seconds until a start that is not ready fails."),
        "allocator": {
            "description": (
                'The memory allocator of the worker processes: "auto" (tcmalloc, else jemalloc, else glibc\'s), "system", '
                '"tcmalloc", "jemalloc" or a library file of the system\'s library folders, owned by root; other than "auto" and '
                '"system" needs child-process. One this machine does not have is a 409.'
            ),
            "anyOf": [{"enum": ["auto", "system", *LIBRARIES]}, {"type": "string", "pattern": _library_path_pattern()}],
        },
        "configuration": {"$ref": "#/components/schemas/ServiceConfiguration"},
    }
    # One worker in the administrator's process: several workers need child processes.
    single = {
        "properties": {"mode": {"const": "same-process"}, "workers": {"const": 1}, "allocator": {"enum": ["auto", "system"]}},
        "required": ["mode"],
    }
    several = {"not": {"properties": {"mode": {"const": "same-process"}}, "required": ["mode"]}}
    # A kind that works in fixed projections only (Valhalla: EPSG:4326, the default when left out): one
    # branch per such kind, one for every other kind.
    fixed = projections or {}
    others = [kind for kind in source_kinds if kind not in fixed]
    by_kind = [{"properties": {"type": {"const": k}, "projection": {"enum": list(only)}}} for k, only in sorted(fixed.items())]
    by_kind += [{"properties": {"type": {"enum": others}}}] if others else []
    return {
        "TomlValue": TOML_VALUE,
        "ServiceConfiguration": service_configuration(apis),
        "ServiceCreation": {
            **_closed(
                {"id": {"type": "string", "pattern": ID_REGEX, "description": "The new service's id (also its file name)."}, **entry},
                ("id", "configuration"),
            ),
            "anyOf": [single, several],
        },
        "ServiceChange": {
            # The id is the URL's (an id in the body is accepted only when it is the same).
            **_closed({"id": False, **entry}, ("configuration",)),
            "anyOf": [single, several],
        },
        "SourceDocument": {
            "type": "object",
            "description": (
                "The keys of a .source file as JSON: type, description, projection, bbox, timeout and the kind's own keys "
                "(checked by the kind: a 400 names each wrong one). The id is the URL's."
            ),
            "required": ["type"],
            "properties": {
                "id": False,
                "type": {"type": "string", "enum": source_kinds},
                "description": _TEXT,
                "projection": _TEXT,
                "bbox": {
                    "description": "xmin,ymin,xmax,ymax (xmin < xmax, ymin < ymax) in the source's projection",
                    "anyOf": [
                        {"type": "string", "pattern": BBOX_REGEX},
                        {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
                    ],
                },
                "timeout": _seconds(ENGINE_TIMEOUT, "Seconds the engine may take."),
            },
            "additionalProperties": {"$ref": "#/components/schemas/TomlValue"},
            **({"anyOf": by_kind} if fixed else {}),
        },
        "ResourceDocument": _closed(
            {
                "type": {"type": "string", "enum": resource_types},
                "sources": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": ID_REGEX}},
                "description": _TEXT,
                "version": _TEXT,
                "operations": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": _TOML_TABLE}},
                "apis": {"type": "object", "additionalProperties": _TOML_TABLE},
            },
            ("type", "sources"),
        ),
    }
