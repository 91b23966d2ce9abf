"""The OpenAPI 3.1 document of the admin API 1.0.0."""

from __future__ import annotations

from typing import Any

from roadkit import __version__
from roadkit.apis.admin.openapi_writes import SECURITY_SCHEMES, write_paths, write_schemas
from roadkit.plugins import Plugins
from roadkit.serving.lifecycle import HealthState, Lifecycle

_ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _ok(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _get(op_id: str, summary: str, responses: dict[str, Any], parameters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    operation: dict[str, Any] = {"operationId": op_id, "summary": summary, "responses": responses}
    if parameters:
        operation["parameters"] = parameters
    return {"get": operation}


# Ids as the service reads them: an id of the grammar that names nothing is a 404, blank text a 400.
_SERVICE = {
    "name": "service",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"},
    "description": "A managed service id.",
}
_PROJECTION = {
    "name": "projection",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"},
    "description": "A projection id, e.g. EPSG:2154.",
}
_VERBOSE = {
    "name": "verbose",
    "in": "query",
    "required": False,
    "schema": {"type": "string", "enum": ["true", "false"], "default": "false"},
    "description": "true: the administrator, every service and every source beside the global state.",
}
_BLANK = {"description": "A blank id (the message names the parameter)", **_ERROR}


def _installed(plugins: Plugins | None) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(APIs, source kinds, resource types) the installed plugins provide."""
    plugins = plugins or Plugins.create()
    kinds = plugins.source_kinds()
    types = set(kinds) | {cls.resource_type for cls in kinds.values() if cls.resource_type}
    return sorted(plugins.apis()), sorted(kinds), sorted(types)


def admin_openapi(base: str, plugins: Plugins | None = None) -> dict[str, Any]:
    """The admin API's OpenAPI document; with ``plugins``, request bodies list exactly the installed APIs and kinds."""
    service_ref = {"$ref": "#/components/schemas/Service"}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "roadkit admin API", "version": "1.0.0", "x-roadkit-version": __version__},
        "servers": [{"url": base}],
        "paths": {
            "/version": _get("version", "The roadkit version.", {"200": _ok("Version", {"$ref": "#/components/schemas/Version"})}),
            "/health": _get(
                "health",
                "The global state (Road2's answer); with verbose=true also the administrator, every service and every source. "
                "503 unless the global state is green.",
                {
                    "200": _ok("Everything is green", {"$ref": "#/components/schemas/Health"}),
                    "400": {"description": "verbose is neither true nor false", **_ERROR},
                    "503": _ok("Not green (starting, failed or a source red)", {"$ref": "#/components/schemas/Health"}),
                },
                [_VERBOSE],
            ),
            "/metrics": _get(
                "metrics",
                "Every service's metrics in Prometheus's text format, summed over all its workers.",
                {
                    "200": {
                        "description": "The metrics (Prometheus text format 0.0.4)",
                        "content": {"text/plain; version=0.0.4; charset=utf-8": {"schema": {"type": "string"}}},
                    }
                },
            ),
            "/plugins": _get(
                "plugins",
                "The installed plugins in load order: distribution, version, source kinds, APIs, commands and hooks.",
                {"200": _ok("Plugins", {"type": "array", "items": {"$ref": "#/components/schemas/Plugin"}})},
            ),
            "/configuration": _get(
                "configuration",
                "The server file as loaded, under administration as Road2 has it: api, services and network.server "
                "(a TOML file's administrator.listener), roadkit's other administrator settings beside them.",
                {"200": _ok("Configuration", {"$ref": "#/components/schemas/Configuration"})},
            ),
            "/services": _get("services", "Every managed service.", {"200": _ok("Services", {"type": "array", "items": service_ref})}),
            "/services/{service}": _get(
                "service",
                "One managed service with its configuration.",
                {"200": _ok("Service", service_ref), "400": _BLANK, "404": {"description": "Unknown service", **_ERROR}},
                [_SERVICE],
            ),
            "/services/{service}/restart": _get(
                "restart",
                "Restart a service with its service file as it is now (Road2's GET verb). The running workers answer until the new "
                "ones are ready, then finish their requests and disconnect their sources: no request is refused. Calls made while a "
                "start or restart is in progress are queued and merged into one restart.",
                {
                    "200": _ok("The service, restarted", service_ref),
                    "400": _BLANK,
                    "404": {"description": "Unknown service", **_ERROR},
                    "503": {"description": "The new configuration did not start (the running service, if any, goes on)", **_ERROR},
                },
                [_SERVICE],
            ),
            "/services/{service}/projections/{projection}": _get(
                "projection",
                "A projection of a service and its parameters.",
                {
                    "200": _ok("Projection", {"$ref": "#/components/schemas/Projection"}),
                    "400": _BLANK,
                    "404": {"description": "Unknown service or projection", **_ERROR},
                    "503": {"description": "The service is not running", **_ERROR},
                },
                [_SERVICE, _PROJECTION],
            ),
        },
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {"type": "object", "properties": {"errorType": {"type": "string"}, "message": {"type": "string"}}}
                    },
                },
                "Version": {"type": "object", "required": ["version"], "properties": {"version": {"type": "string"}}},
                "Plugin": {
                    "type": "object",
                    "required": ["name", "distribution", "version", "sourceKinds", "apis", "commands", "hooks"],
                    "properties": {
                        "name": {"type": "string"},
                        "distribution": {"type": "string"},
                        "version": {"type": "string"},
                        **{key: {"type": "array", "items": {"type": "string"}} for key in ("sourceKinds", "apis", "commands", "hooks")},
                    },
                },
                "State": {"type": "string", "enum": [str(state) for state in HealthState]},
                "Health": {
                    "type": "object",
                    "required": ["state"],
                    "description": "state alone by default; administrator and services with verbose=true.",
                    "properties": {
                        "state": {"$ref": "#/components/schemas/State"},
                        "administrator": {"type": "object", "properties": {"state": {"$ref": "#/components/schemas/State"}}},
                        "services": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "id": {"type": "string"},
                                    "state": {"$ref": "#/components/schemas/State"},
                                    "lifecycle": {"$ref": "#/components/schemas/Lifecycle"},
                                    "reason": {"type": "string"},
                                    "sources": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "properties": {
                                                "id": {"type": "string"},
                                                "type": {"type": "string"},
                                                "state": {"$ref": "#/components/schemas/State"},
                                                "reason": {"type": "string"},
                                                "version": {
                                                    "type": "string",
                                                    "description": "The version of its data in use (a versioned source).",
                                                },
                                            },
                                        },
                                    },
                                    "workers": {
                                        "type": "array",
                                        "description": (
                                            "Child-process mode: each worker's HTTP connections, open now and accepted since it started "
                                            "(how the listeners' connections spread over the workers)."
                                        ),
                                        "items": {
                                            "type": "object",
                                            "properties": {
                                                "worker": {"type": "integer"},
                                                "pid": {"type": "integer"},
                                                "connections": {
                                                    "type": "object",
                                                    "properties": {"open": {"type": "integer"}, "accepted": {"type": "integer"}},
                                                },
                                            },
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
                "Configuration": {
                    "type": "object",
                    "required": ["administration"],
                    "properties": {
                        "administration": {
                            "type": "object",
                            "properties": {
                                "api": {"type": "object", "properties": {"name": {"type": "string"}, "version": {"type": "string"}}},
                                "services": {"type": "array", "items": {"type": "object"}},
                                "network": {"type": "object", "properties": {"server": {"type": "object"}}},
                            },
                        }
                    },
                },
                "Lifecycle": {"type": "string", "enum": [str(state) for state in Lifecycle]},
                "Service": {
                    "type": "object",
                    "description": (
                        "Road2's description first: the service file's keys (application ...) and id; roadkit's fields beside them."
                    ),
                    "required": ["id"],
                    "properties": {
                        "application": {"type": "object", "description": "The service file's application (Road2's key)."},
                        "id": {"type": "string"},
                        "mode": {"type": "string", "enum": ["same-process", "child-process"]},
                        "workers": {"type": "integer", "minimum": 1, "description": 'Worker processes ("auto" resolved to the cores).'},
                        "allocator": {
                            "type": "string",
                            "description": (
                                'The allocator setting of the server file: "auto", "system", "tcmalloc", "jemalloc" or a library\'s path '
                                "(what each process runs with is in processes)."
                            ),
                        },
                        "configurationFile": {"type": "string"},
                        "lifecycle": {"$ref": "#/components/schemas/Lifecycle"},
                        "processes": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "worker": {"type": "integer"},
                                    "pid": {"type": ["integer", "null"]},
                                    "state": {
                                        "type": "string",
                                        "enum": sorted({"starting", "ready", "stopping", "exited", *map(str, Lifecycle)}),
                                    },
                                    "allocator": {
                                        "type": "string",
                                        "description": (
                                            "The memory allocator the process runs with, read from its memory map: system, tcmalloc, "
                                            "jemalloc, the file name of a library given by path, or unknown."
                                        ),
                                    },
                                    "memory": {
                                        "type": "object",
                                        "description": (
                                            "The process's memory in bytes, read from /proc/<pid>/smaps_rollup: pss (proportional "
                                            "set size, each shared page divided among the processes that map it) and uss (unique set "
                                            "size, the pages only this process maps). Left out when it cannot be read."
                                        ),
                                        "required": ["pss", "uss"],
                                        "properties": {"pss": {"type": "integer", "minimum": 0}, "uss": {"type": "integer", "minimum": 0}},
                                    },
                                },
                            },
                        },
                        "starts": {"type": "integer", "description": "Starts of the service: the first, restarts and automatic restarts."},
                        "processStarts": {"type": "integer", "description": "Worker processes started (0 in same-process mode)."},
                        "lastExit": {
                            "type": ["object", "null"],
                            "description": (
                                "How the last worker process ended: its exit code or the signal's name; expected is false for a crash."
                            ),
                            "properties": {
                                "worker": {"type": "integer"},
                                "pid": {"type": "integer"},
                                "code": {"type": "integer"},
                                "signal": {"type": "string", "examples": ["SIGKILL"]},
                                "expected": {"type": "boolean"},
                                "at": {"type": "string", "format": "date-time"},
                            },
                        },
                        "reason": {"type": "string", "description": "Why the last start failed or a worker is missing."},
                        "configuration": {"type": "object"},
                        "configurationError": {"type": "array", "items": {"type": "string"}},
                        "ogcApis": {
                            "type": "array",
                            "description": (
                                "The OGC APIs the running service serves (the ogcapi-routes API: one per resource that "
                                "computes routes), each with its URL on every listener: only in GET /services/{service}, and left out "
                                "while the service is not running or serves no OGC API."
                            ),
                            "items": {
                                "type": "object",
                                "required": ["resource", "api", "path", "urls"],
                                "properties": {
                                    "resource": {"type": "string"},
                                    "api": {"type": "string", "examples": ["ogcapi-routes/1.0"]},
                                    "title": {"type": "string"},
                                    "path": {"type": "string", "examples": ["/ogcapi-routes/1.0/monaco-osrm/"]},
                                    "urls": {"type": "array", "items": {"type": "string", "format": "uri"}},
                                },
                            },
                        },
                    },
                },
                "Projection": {
                    "type": "object",
                    "required": ["id", "parameters"],
                    "properties": {"id": {"type": "string"}, "parameters": {"type": "string"}},
                },
            }
        },
    }
    for path, operations in write_paths().items():
        document["paths"].setdefault(path, {}).update(operations)
    for operations in document["paths"].values():  # roadkit.auth.sites: before anything else, on every path
        for operation in operations.values():
            operation["responses"].setdefault("421", {"description": "The Host is not one of the admin listener's names", **_ERROR})
            operation["responses"].setdefault("403", {"description": "A cross-site request, or one without the right", **_ERROR})
    installed = plugins or Plugins.create()
    projections = {kind: cls.projections for kind, cls in installed.source_kinds().items() if cls.projections is not None}
    document["components"]["schemas"].update(write_schemas(*_installed(installed), projections))
    document["components"]["securitySchemes"] = SECURITY_SCHEMES
    return document
