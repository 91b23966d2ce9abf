"""The OpenAPI 3.1 document of the native OSRM API v1 (``osrm/1.0.0``).

It describes roadkit's URL shapes and statuses; the answers themselves are osrm-routed's, documented
by OSRM (docs/http.md of osrm-backend), so their schemas stay open here.
"""

from __future__ import annotations

from typing import Any

from roadkit_osrm.native.query import SERVICES

_JSON = "application/json"
_OSRM_ANSWER = {
    "type": "object",
    "required": ["code"],
    "properties": {
        "code": {"type": "string", "description": "Ok, or an osrm-routed error code (InvalidQuery, NoSegment, TooBig...)"},
        "message": {"type": "string"},
    },
    "additionalProperties": True,
}
_OPTIONS = (
    "Options as osrm-routed reads them, e.g. `steps=true&alternatives=2&annotations=true`: every option of "
    "the service (general options bearings, radiuses, hints, generate_hints, approaches, exclude, snapping, "
    "skip_waypoints; route: alternatives, steps, annotations, geometries, overview, continue_straight, waypoints; "
    "table: sources, destinations, annotations, fallback_speed, fallback_coordinate, scale_factor; trip: roundtrip, "
    "source, destination; match: timestamps, gaps, tidy, waypoints; nearest: number)."
)


def _path(name: str, description: str, values: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if values:
        schema["enum"] = values
    return {"name": name, "in": "path", "required": True, "schema": schema, "description": description}


def _answers() -> dict[str, Any]:
    answer = {"content": {_JSON: {"schema": _OSRM_ANSWER}}}
    return {
        "200": {
            "description": "osrm-routed's answer (a Mapbox vector tile for tile)",
            "content": {_JSON: {"schema": _OSRM_ANSWER}, "application/x-protobuf": {"schema": {"type": "string", "format": "binary"}}},
        },
        "400": {
            "description": "osrm-routed's error answer, or an unknown profile (InvalidProfile) or a service the engine cannot answer",
            **answer,
        },
        "404": {"description": "Unknown resource (InvalidResource)", **answer},
        "503": {"description": "The service is starting, or the resource's settings are invalid", **answer},
    }


def native_openapi(base: str) -> dict[str, Any]:
    """The native API's OpenAPI document, its server at ``base`` (``.../osrm/1.0.0``)."""
    resource = _path("resource", "A resource of the service (see /resources).")
    service = _path("service", "An OSRM service.", list(SERVICES))
    coordinates = _path(
        "coordinates",
        "`{lon},{lat};{lon},{lat}...`, `polyline({encoded})` or `polyline6({encoded})`, "
        "optionally followed by `.json`; for tile, `tile({x},{y},{z}).mvt`.",
    )
    options = {"name": "options", "in": "query", "required": False, "schema": {"type": "string"}, "description": _OPTIONS}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "roadkit native OSRM API",
            "version": "1.0.0",
            "description": (
                "osrm-routed's HTTP API v1 on roadkit's resources: same URLs (under a resource), options, limits, answers and errors."
            ),
        },
        "servers": [{"url": base}],
        "paths": {
            "/resources": {
                "get": {
                    "operationId": "resources",
                    "summary": "The resources with their profiles, optimizations, aliases and services.",
                    "responses": {
                        "200": {
                            "description": "The resources",
                            "content": {_JSON: {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Resource"}}}},
                        },
                        "503": {"description": "The service is starting", "content": {_JSON: {"schema": _OSRM_ANSWER}}},
                    },
                }
            },
            "/{resource}/{service}/v1/{profile}/{coordinates}": {
                "get": {
                    "operationId": "osrm",
                    "summary": "OSRM's URL under a resource; the profile names a cost's profile or an alias of the resource.",
                    "parameters": [
                        resource,
                        service,
                        _path("profile", "A profile of the resource or an alias (alphanumeric)."),
                        coordinates,
                        options,
                    ],
                    "responses": _answers(),
                }
            },
            "/{resource}/{profile}/{optimization}/{service}/v1/_/{coordinates}": {
                "get": {
                    "operationId": "road2",
                    "summary": "Road2's URL: profile and optimization of the resource, then OSRM's URL with `_` as its profile.",
                    "parameters": [
                        resource,
                        _path("profile", "A profile of the resource."),
                        _path("optimization", "An optimization of the profile."),
                        service,
                        coordinates,
                        options,
                    ],
                    "responses": _answers(),
                }
            },
        },
        "components": {
            "schemas": {
                "Resource": {
                    "type": "object",
                    "required": ["id", "description", "profiles", "services"],
                    "properties": {
                        "id": {"type": "string"},
                        "description": {"type": "string"},
                        "services": {"type": "array", "items": {"type": "string", "enum": list(SERVICES)}},
                        "profiles": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["id", "optimizations", "aliases"],
                                "properties": {
                                    "id": {"type": "string"},
                                    "optimizations": {
                                        "type": "array",
                                        "items": {"type": "object", "properties": {"id": {"type": "string"}}},
                                    },
                                    "aliases": {"type": "array", "items": {"type": "string"}},
                                },
                            },
                        },
                    },
                }
            }
        },
    }
