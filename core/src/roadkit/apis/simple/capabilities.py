"""GetCapabilities of the simple API: built once per service, URLs completed per request."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from roadkit.routing.operations import DESCRIPTIONS, OPERATIONS, ParameterSpec
from roadkit.routing.resources import capabilities_of
from roadkit.web.access import capabilities_security

if TYPE_CHECKING:
    from roadkit.web.view import ServiceView


def _parameter(spec: ParameterSpec) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": {"point": "string", "enumeration": "string", "constraint": "object"}.get(spec.type, spec.type)}
    if spec.type == "float":
        schema["type"] = "number"
    if spec.multi:
        schema = {"type": "array", "items": schema}
    entry: dict[str, Any] = {
        "name": spec.name,
        "in": "query",
        "description": spec.description,
        # Road2 types both as the strings "true" and "false".
        "required": "true" if spec.required else "false",
        "default": "true" if spec.defaulted else "false",
        "schema": schema,
        "example": spec.example,
        # How many values: Road2 gives its parameters' min and max (0 for an optional one, 1 for one required).
        "min": spec.min,
        "max": spec.max,
    }
    if spec.multi:
        entry.update(explode="false", style="pipeDelimited")  # Road2's string, as required and default
    return entry


def _keywords(keywords: tuple[str, ...]) -> dict[str, Any]:
    """Road2's ``{"keyword": ...}``: the service file's one keyword, or its list of several; ``{}`` for none."""
    if not keywords:
        return {}
    return {"keyword": keywords[0] if len(keywords) == 1 else list(keywords)}


def build_capabilities(service: ServiceView, names: dict[str, str]) -> dict[str, Any]:
    """The capabilities document; operation URLs are relative until :func:`with_base_url`."""
    app = service.config.application
    provider = app.provider
    offered = {op for resource in service.resources.values() for op in resource.operations}
    capabilities: dict[str, Any] = {
        "info": {
            "name": app.name,
            "title": app.title,
            "description": app.description,
            "language": app.language,
            "keywords": _keywords(app.keywords),
            "contact": {"email": app.contact} if app.contact else {},
        },
        "provider": {"name": provider.name, "site": provider.site, "mail": provider.mail}
        if provider
        else {"name": "", "site": "", "mail": ""},
        "api": {"name": "simple", "version": "1.0.0"},
        "operations": [
            {
                "id": op,
                "description": DESCRIPTIONS[op],
                "url": f"/{names[op]}?",
                "methods": ["GET", "POST"],
                "parameters": [_parameter(spec) for spec in specs],
            }
            for op, specs in OPERATIONS.items()
            if op in offered
        ],
        "resources": [capabilities_of(resource) for resource in service.resources.values()],
    }
    security = capabilities_security(service.config.access)
    if security is not None:
        capabilities["security"] = security
    service.extend_capabilities(capabilities)
    return capabilities


def with_base_url(capabilities: dict[str, Any], base: str) -> dict[str, Any]:
    """The document with absolute operation URLs for the request's host."""
    document = copy.copy(capabilities)
    document["info"] = {**capabilities["info"], "url": f"{base}/"}
    document["operations"] = [{**op, "url": base + op["url"]} for op in capabilities["operations"]]
    return document
