"""OpenAPI paths and schemas of the admin API's writes: services created, changed, deleted; publication."""

from __future__ import annotations

from typing import Any

from roadkit.publication import ID_REGEX

_ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_SERVICE = {"name": "service", "in": "path", "required": True, "schema": {"type": "string"}, "description": "A managed service id."}
_AUTH = {
    "401": {"description": "Authentication is configured and the bearer token is missing, wrong, expired or tampered with", **_ERROR},
    "403": {
        "description": "A valid token without the configured role, or a write from a non-loopback client with no authentication configured",
        **_ERROR,
    },
}
_UNWRITABLE = {"description": "A file could not be written (disk full, read-only file system); nothing changed", **_ERROR}
_INVALID = {"description": "Invalid body: the message lists every problem as 'file: key: expected ...', one per line", **_ERROR}


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
                    "200": {"description": f"{title}s", **_json({"type": "array", "items": ref})},
                    **read_auth,
                    "404": {"description": "Unknown service", **_ERROR},
                },
            },
        },
        f"/services/{{service}}/{kind}s/{{{kind}}}": {
            "get": {
                "operationId": f"get{title}",
                "summary": f"One {kind} as stored in its .{kind} file.",
                "parameters": [_SERVICE, item],
                "responses": {
                    "200": {"description": title, **_json(ref)},
                    "400": {"description": "Invalid id", **_ERROR},
                    **read_auth,
                    "404": {"description": f"Unknown service or {kind}", **_ERROR},
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
                    "200": {"description": f"{title} replaced", **_json(ref)},
                    "201": {"description": f"{title} created", **_json(ref)},
                    "400": _INVALID,
                    **_AUTH,
                    "404": {"description": "Unknown service", **_ERROR},
                    "413": {"description": "Body too large", **_ERROR},
                    "503": _UNWRITABLE,
                },
            },
            "delete": {
                "operationId": f"delete{title}",
                "summary": f"Remove a {kind} from the running service, then its file."
                + (" A source still used by a resource is a 409." if kind == "source" else ""),
                "parameters": [_SERVICE, item],
                "responses": {
                    "204": {"description": "Removed"},
                    **_AUTH,
                    "404": {"description": f"Unknown service or {kind}", **_ERROR},
                    **({"409": {"description": "A resource still uses this source", **_ERROR}} if kind == "source" else {}),
                },
            },
        },
    }


def write_paths() -> dict[str, Any]:
    """The paths of the admin API's write operations (merged into the admin document)."""
    service = {"$ref": "#/components/schemas/Service"}
    request = {"$ref": "#/components/schemas/ServiceRequest"}
    return secured(
        {
            "/services": {
                "post": {
                    "operationId": "createService",
                    "summary": (
                        "Create a service: its service file is written beside the "
                        "server file, added to the server file, and the service started."
                    ),
                    "requestBody": {"required": True, **_json(request)},
                    "responses": {
                        "201": {"description": "Created and started (see lifecycle)", **_json(service)},
                        "400": _INVALID,
                        **_AUTH,
                        "409": {"description": "A service with this id (or its file) already exists", **_ERROR},
                        "413": {"description": "Body too large", **_ERROR},
                        "503": _UNWRITABLE,
                    },
                },
            },
            "/services/{service}": {
                "put": {
                    "operationId": "modifyService",
                    "summary": (
                        "Replace a service's configuration: checked, written atomically, then "
                        "the service reloads (the old one serves until the new one is ready)."
                    ),
                    "parameters": [_SERVICE],
                    "requestBody": {"required": True, **_json(request)},
                    "responses": {
                        "200": {"description": "Changed", **_json(service)},
                        "400": _INVALID,
                        **_AUTH,
                        "404": {"description": "Unknown service", **_ERROR},
                        "503": {
                            "description": (
                                "The service can't start with the new configuration (the previous one "
                                "keeps serving and the files are unchanged), or a file could not be written"
                            ),
                            **_ERROR,
                        },
                    },
                },
                "delete": {
                    "operationId": "deleteService",
                    "summary": "Stop a service and remove it from the server file (its service, source and resource files stay).",
                    "parameters": [_SERVICE],
                    "responses": {"204": {"description": "Deleted"}, **_AUTH, "404": {"description": "Unknown service", **_ERROR}},
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


def write_schemas() -> dict[str, Any]:
    """The schemas the write operations refer to."""
    return {
        "ServiceRequest": {
            "type": "object",
            "required": ["configuration"],
            "additionalProperties": False,
            "properties": {
                "id": {"type": "string", "pattern": ID_REGEX, "description": "Required to create; must match the URL to change."},
                "mode": {"type": "string", "enum": ["same-process", "child-process"]},
                "workers": {"description": 'Number of worker processes, or "auto".'},
                "startup_timeout": {"type": "number"},
                "configuration": {
                    "type": "object",
                    "description": "The keys of a service file (application, listeners, apis, folders, limits) as JSON.",
                },
            },
        },
        "SourceDocument": {
            "type": "object",
            "description": "The keys of a .source file as JSON: id, type, description, projection, bbox, timeout and the kind's own keys.",
            "properties": {
                "id": {"type": "string"},
                "type": {"type": "string"},
                "projection": {"type": "string"},
                "bbox": {"type": "string"},
            },
        },
        "ResourceDocument": {
            "type": "object",
            "description": "The keys of a .resource file as JSON: id, type, sources, description, version, operations.",
            "properties": {
                "id": {"type": "string"},
                "type": {"type": "string"},
                "sources": {"type": "array", "items": {"type": "string"}},
                "operations": {"type": "object", "additionalProperties": {"type": "object"}},
            },
        },
    }
