"""The OpenAPI 3.1 document of the simple API, generated from the operation specs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roadkit import __version__
from roadkit.apis.simple.openapi_exact import Shared, request_schema
from roadkit.routing.operations import DESCRIPTIONS, OPERATIONS
from roadkit.web.access import secure_openapi

if TYPE_CHECKING:
    from roadkit.web.view import ServiceView

_NUMBER_OR_TEXT = {"oneOf": [{"type": "number"}, {"type": "string", "description": "HH:MM:SS when timeUnit is standard"}]}
_GEOMETRY = {
    "description": "A GeoJSON geometry, an encoded polyline (precision 5; one string per polygon ring), or WKT, per geometryFormat.",
    "oneOf": [{"type": "object"}, {"type": "string"}, {"type": "array", "items": {}}],
}
_STEP = {
    "type": "object",
    "properties": {
        "geometry": _GEOMETRY,
        "attributes": {"type": "object", "description": "The way name and the waysAttributes asked for."},
        "distance": {"type": "number"},
        "duration": _NUMBER_OR_TEXT,
        "instruction": {
            "type": "object",
            "description": "The maneuver: type (depart, turn, new name, roundabout, arrive...), modifier, exit.",
            "properties": {"type": {"type": "string"}, "modifier": {"type": "string"}, "exit": {"type": "integer"}},
        },
    },
}
_BBOX = {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4}
_CONSTRAINT_ECHO = {"type": "array", "items": {"type": "object", "properties": {k: {} for k in ("type", "key", "operator", "value")}}}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "object", "properties": {"errorType": {"type": "string"}, "message": {"type": "string"}}}},
    },
    "RouteResponse": {
        "type": "object",
        "properties": {
            **{
                k: {"type": "string"}
                for k in ("resource", "resourceVersion", "start", "end", "profile", "optimization", "crs", "distanceUnit", "timeUnit")
            },
            "geometry": _GEOMETRY,
            "bbox": _BBOX,
            "distance": {"type": "number"},
            "duration": _NUMBER_OR_TEXT,
            "constraints": _CONSTRAINT_ECHO,
            "portions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "start": {"type": "string"},
                        "end": {"type": "string"},
                        "distance": {"type": "number"},
                        "duration": _NUMBER_OR_TEXT,
                        "bbox": _BBOX,
                        "steps": {"type": "array", "items": _STEP},
                    },
                },
            },
        },
    },
    "IsochroneResponse": {
        "type": "object",
        "description": (
            "The area reachable within costValue. When the value is too small to form an area, geometry is the "
            "start point (a GeoJSON Point, a one-point polyline or POINT WKT) and reachable is false. With several "
            "cost values, contours lists one nested polygon per value, smallest first as given."
        ),
        "properties": {
            **{
                k: {"type": "string"}
                for k in ("point", "resource", "resourceVersion", "costType", "timeUnit", "distanceUnit", "profile", "direction", "crs")
            },
            "costValue": {"oneOf": [{"type": "number"}, {"type": "array", "items": {"type": "number"}}]},
            "geometry": _GEOMETRY,
            "reachable": {"type": "boolean"},
            "contours": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"costValue": {"type": "number"}, "geometry": _GEOMETRY, "reachable": {"type": "boolean"}},
                },
            },
            "constraints": _CONSTRAINT_ECHO,
        },
    },
    "NearestResponse": {
        "type": "object",
        "properties": {
            **{k: {"type": "string"} for k in ("resource", "resourceVersion", "coordinates", "crs")},
            "points": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "geometry": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                        "distance": {"type": "number", "description": "meters from the requested point"},
                    },
                },
            },
        },
    },
    "MatrixResponse": {
        "type": "object",
        "description": (
            "One row per source, one column per target, in timeUnit and distanceUnit; null where no path leads. "
            "sources and targets are the points as snapped on the network, in crs, with their snapping distance in distanceUnit."
        ),
        "properties": {
            **{
                k: {"type": "string"} for k in ("resource", "resourceVersion", "profile", "optimization", "crs", "timeUnit", "distanceUnit")
            },
            **{
                k: {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "geometry": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                            "distance": {"type": "number"},
                        },
                    },
                }
                for k in ("sources", "targets")
            },
            "durations": {"type": "array", "items": {"type": "array", "items": {"oneOf": [*_NUMBER_OR_TEXT["oneOf"], {"type": "null"}]}}},
            "distances": {"type": "array", "items": {"type": "array", "items": {"type": ["number", "null"]}}},
            "constraints": _CONSTRAINT_ECHO,
        },
    },
    "Capabilities": {"type": "object", "required": ["info", "provider", "api", "operations", "resources"]},
}


def _descriptions(op: str) -> str:
    lines = [f"- `{spec.name}`{' (required)' if spec.required else ''}: {spec.description}" for spec in OPERATIONS[op]]
    return "Parameters (the schema lists, per resource, request CRS and cost, the values accepted):\n" + "\n".join(lines)


def _responses(schema: str) -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    responses = {
        "200": {"description": "Success", "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}},
        "400": {"description": "A parameter is missing or invalid; the message names it and what was expected.", **error},
        "404": {"description": "No path or no isochrone found.", **error},
        "413": {"description": "The POST body is too large.", **error},
        "502": {"description": "The engine gave an unexpected answer.", **error},
        "503": {"description": "The service is starting or the source is unavailable.", **error},
        "504": {"description": "The engine did not answer in time.", **error},
    }
    return responses


def openapi_document(service: ServiceView, base: str, names: dict[str, str]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the simple API, with the operation paths actually served."""
    paths: dict[str, Any] = {
        "/getcapabilities": {
            "get": {
                "operationId": "getcapabilities",
                "summary": "What the service offers: operations, parameters, resources and their values.",
                "responses": {
                    "200": {
                        "description": "Success",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Capabilities"}}},
                    }
                },
            },
            "post": {
                "operationId": "getcapabilities-post",
                "summary": "The same as GET (Road2 accepts both).",
                "responses": {
                    "200": {
                        "description": "Success",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Capabilities"}}},
                    }
                },
            },
        }
    }
    schemas = {"route": "RouteResponse", "isochrone": "IsochroneResponse", "nearest": "NearestResponse", "matrix": "MatrixResponse"}
    resources = list(service.resources.values())
    shared = Shared()
    for op in OPERATIONS:
        if not any(op in r.operations for r in resources):
            continue  # no resource offers it: the path answers 400 operation_not_permitted, not documented
        paths[f"/{names[op]}"] = {
            "get": {
                "operationId": f"{op}-get",
                "summary": DESCRIPTIONS[op],
                "description": _descriptions(op),
                "parameters": [
                    {
                        "name": "parameters",
                        "in": "query",
                        "style": "form",
                        "explode": True,
                        "required": True,
                        "description": "Every parameter is its own query parameter (?resource=...&start=...); values as text.",
                        "schema": request_schema(service, op, resources, post=False, shared=shared),
                    }
                ],
                "responses": _responses(schemas[op]),
            },
            "post": {
                "operationId": f"{op}-post",
                "summary": DESCRIPTIONS[op] + " Parameters in a JSON body; scalars may be JSON strings or native values.",
                "description": _descriptions(op),
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": request_schema(service, op, resources, post=True, shared=shared)}},
                },
                "responses": _responses(schemas[op]),
            },
        }
    app = service.config.application
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": f"{app.title} — simple API",
            "version": "1.0.0",
            "description": app.description,
            "x-roadkit-version": __version__,
        },
        "servers": [{"url": base}],
        "paths": paths,
        "components": {"schemas": {**SCHEMAS, **shared.schemas}},
    }
    return secure_openapi(document, service.config.access)
