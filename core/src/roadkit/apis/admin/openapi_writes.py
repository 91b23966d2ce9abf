"""OpenAPI paths and schemas of the admin API's writes: services created, changed, deleted; publication."""

from __future__ import annotations

from typing import Any

from roadkit.config.allocator import LIBRARIES, PATH_REGEX
from roadkit.config.loader import BBOX_REGEX, HOST_MAX_LENGTH, HOST_REGEX
from roadkit.config.models import max_workers
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
                                f"administrator's; the projections folder or a certificate file does not exist; {_HAND_EDITED}"
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
                                "A listener port is another service's or the administrator's; the projections folder or a "
                                "certificate file does not exist; mode or workers left out and the service's current ones do "
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
        }
    )


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


def _closed(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def _positive(description: str) -> dict[str, Any]:
    return {"type": "number", "exclusiveMinimum": 0, "description": description}


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
                    "engine_timeout": _positive("Seconds an engine may take to answer."),
                    "max_body_bytes": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
                    "connect_retry_initial": _positive(
                        "Seconds before a failed source connection is tried again, doubled after each failure."
                    ),
                    "connect_retry_max": _positive(
                        "Longest wait between two connection attempts (a value below connect_retry_initial caps every wait)."
                    ),
                }
            ),
            "http": _closed(
                {"server": {"enum": ["uvicorn", "hypercorn"], "description": "The HTTP server of the listeners (uvicorn by default)."}}
            ),
        },
        ("application",),
    )


def write_schemas(apis: list[tuple[str, str]], source_kinds: list[str], resource_types: list[str]) -> dict[str, Any]:
    """The schemas the write operations refer to, exact for the installed plugins."""
    workers = {
        "description": f'Worker processes: "auto" (one per usable core) or 1 to {max_workers()}; more than 1 needs child-process.',
        "anyOf": [{"const": "auto"}, {"type": "integer", "minimum": 1, "maximum": max_workers()}],
    }
    entry = {
        "mode": {"type": "string", "enum": ["same-process", "child-process"]},
        "workers": workers,
        "startup_timeout": _positive("Seconds until a start that is not ready fails."),
        "allocator": {
            "description": (
                'The memory allocator of the worker processes: "auto" (tcmalloc, else jemalloc, else glibc\'s), "system", '
                '"tcmalloc", "jemalloc" or the absolute path of a shared library (no spaces or \':\'); other than "auto" and '
                '"system" needs child-process. One this machine does not have is a 409.'
            ),
            "anyOf": [{"enum": ["auto", "system", *LIBRARIES]}, {"type": "string", "pattern": PATH_REGEX}],
        },
        "configuration": {"$ref": "#/components/schemas/ServiceConfiguration"},
    }
    # One worker in the administrator's process: several workers need child processes.
    single = {
        "properties": {"mode": {"const": "same-process"}, "workers": {"const": 1}, "allocator": {"enum": ["auto", "system"]}},
        "required": ["mode"],
    }
    several = {"not": {"properties": {"mode": {"const": "same-process"}}, "required": ["mode"]}}
    return {
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
                "timeout": _positive("Seconds the engine may take."),
            },
        },
        "ResourceDocument": _closed(
            {
                "type": {"type": "string", "enum": resource_types},
                "sources": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": ID_REGEX}},
                "description": _TEXT,
                "version": _TEXT,
                "operations": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": {"type": "object"}}},
                "apis": {"type": "object", "additionalProperties": {"type": "object"}},
            },
            ("type", "sources"),
        ),
    }
