"""The OpenAPI 3.0 document of one resource's OGC API – Routes, exact: what it calls valid is computed, the rest refused."""

from __future__ import annotations

from typing import Any

from roadkit import __version__
from roadkit.apis.ogcapi_routes.definition import CALLBACK, MAX_NAME, TIMESTAMP
from roadkit.apis.ogcapi_routes.offer import MAX_OBSTACLES, MAX_RING, MAX_WAYPOINTS, Offer
from roadkit.web.access import secure_openapi

_ID = {"oneOf": [{"type": "number"}, {"type": "string"}]}
_POSITION = {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "number"}}


def _feature(geometry: dict[str, Any], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["type", "geometry", "properties"],
        "properties": {
            "type": {"type": "string", "enum": ["Feature"]},
            "id": _ID,
            "geometry": {"type": "object", "required": ["type", "coordinates"], "properties": geometry},
            "properties": properties,
        },
    }


_POINT = {"type": {"type": "string", "enum": ["Point"]}, "coordinates": _POSITION}
#: The Route Exchange Model's JSON schema (rem/standard/code/rem-json-schema.json of opengeospatial/ogcapi-routes),
#: as OpenAPI 3.0 components; plus the ``timestamp`` of the start and end of a timed route.
REM_SCHEMAS: dict[str, Any] = {
    "Route": {
        "title": "A route",
        "type": "object",
        "required": ["type", "features"],
        "properties": {
            "type": {"type": "string", "enum": ["FeatureCollection"]},
            "name": {"type": "string"},
            "features": {
                "type": "array",
                "items": {
                    "oneOf": [
                        {"$ref": "#/components/schemas/Overview"},
                        {"$ref": "#/components/schemas/Waypoint"},
                        {"$ref": "#/components/schemas/Segment"},
                    ]
                },
            },
            "bbox": {"type": "array", "minItems": 4, "items": {"type": "number"}},
            "links": {"type": "array", "items": {"$ref": "#/components/schemas/Link"}},
        },
    },
    "Overview": _feature(
        {"type": {"type": "string", "enum": ["LineString"]}, "coordinates": {"type": "array", "minItems": 2, "items": _POSITION}},
        {
            "type": "object",
            "required": ["featureType", "length_m"],
            "properties": {
                "featureType": {"type": "string", "enum": ["overview"]},
                "name": {"type": "string"},
                "length_m": {"type": "number"},
                "duration_s": {"type": "number"},
                "maxHeight_m": {"type": "number"},
                "maxWeight_t": {"type": "number"},
                "obstacles": {"type": "string"},
                "processingTime": {"type": "string", "format": "date-time"},
                "comment": {"type": "string"},
            },
        },
    ),
    "Waypoint": _feature(
        _POINT,
        {
            "type": "object",
            "required": ["featureType"],
            "properties": {
                "featureType": {"type": "string", "enum": ["start", "end"]},
                "timestamp": {"type": "string", "format": "date-time"},
            },
        },
    ),
    "Segment": _feature(
        _POINT,
        {
            "type": "object",
            "required": ["featureType", "length_m"],
            "properties": {
                "featureType": {"type": "string", "enum": ["segment"]},
                "length_m": {"type": "number"},
                "duration_s": {"type": "number"},
                "maxHeight_m": {"type": "number"},
                "maxWeight_t": {"type": "number"},
                "speedLimit": {"type": "number"},
                "speedLimitUnit": {"type": "string", "enum": ["kmph", "mph"]},
                "roadName": {"type": "string"},
                "instructions": {"type": "string", "enum": ["continue", "left", "right"]},
            },
        },
    ),
    "Link": {
        "type": "object",
        "required": ["href", "rel"],
        "properties": {
            "href": {"type": "string"},
            "rel": {"type": "string"},
            "anchor": {"type": "string"},
            "type": {"type": "string"},
            "hreflang": {"type": "string"},
            "title": {"type": "string"},
            "length": {"type": "string"},
        },
    },
}
_LINKS = {
    "type": "object",
    "required": ["links"],
    "properties": {"links": {"type": "array", "items": {"$ref": "#/components/schemas/Link"}}},
}
SCHEMAS: dict[str, Any] = {
    **REM_SCHEMAS,
    "Links": _LINKS,
    "Conformance": {
        "type": "object",
        "required": ["conformsTo", "properties"],
        "properties": {"conformsTo": {"type": "array", "items": {"type": "string"}}, "properties": {"type": "object"}},
    },
    "Status": {
        "type": "object",
        "required": ["status"],
        "properties": {
            "status": {"type": "string", "enum": ["accepted", "running", "successful", "failed"]},
            "links": {"type": "array", "items": {"$ref": "#/components/schemas/Link"}},
            "error": {"type": "object"},
        },
    },
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["errorType", "message"],
                "properties": {"errorType": {"type": "string"}, "message": {"type": "string"}},
            }
        },
    },
}


def _json(schema: str, media: str = "application/json") -> dict[str, Any]:
    return {media: {"schema": {"$ref": f"#/components/schemas/{schema}"}}}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": _json("Error")}


_STARTING = {"503": _error("The service is starting or the engine is unavailable.")}
_NOT_FOUND = {"404": _error("No such route (never computed, deleted or purged).")}
_COMPUTING = {
    "400": _error("The route definition is not valid: the message names the member and what was expected."),
    "413": _error("The body is too large."),
    "422": _error("A valid definition that can't be routed: a waypoint outside the resource's area or off its network, no path."),
    "502": _error("The engine gave an unexpected answer."),
    **_STARTING,
    "504": _error("The engine did not answer in time."),
}


def definition_schema(offer: Offer) -> dict[str, Any]:
    """The route definition this resource accepts (the standard's, with its values; unknown members refused)."""
    xmin, ymin, xmax, ymax = offer.bbox
    inputs: dict[str, Any] = {
        "waypoints": {
            "type": "object",
            "required": ["value"],
            "properties": {
                "value": {
                    "type": "object",
                    "required": ["type", "coordinates"],
                    "properties": {
                        "type": {"type": "string", "enum": ["MultiPoint"]},
                        "coordinates": {
                            "type": "array",
                            "minItems": 2,
                            "maxItems": MAX_WAYPOINTS,
                            "description": (
                                "Longitude, latitude (WGS 84) of each waypoint, in order; the resource's area is "
                                f"{xmin:g},{ymin:g},{xmax:g},{ymax:g} "
                                "(a waypoint outside it is a 422)."
                            ),
                            "items": {
                                "type": "array",
                                "minItems": 2,
                                "maxItems": 3,
                                "items": {"type": "number", "minimum": -180, "maximum": 180},
                            },
                        },
                    },
                }
            },
        },
        "preference": {"type": "string", "enum": list(offer.preferences), "description": "Default: the first one."},
        "mode": {"type": "string", "enum": list(offer.modes), "description": "Default: the first one (a profile of the resource)."},
        "name": {"type": "string", "maxLength": MAX_NAME},
    }
    beside: dict[str, Any] = {"name": inputs["name"]}
    for dimension, most in offer.vehicle_limits.items():
        unit = "metres" if dimension == "height" else "metric tons"
        inputs[dimension] = beside[dimension] = {
            "type": "number",
            "minimum": 0,
            "maximum": most,
            "description": f"The vehicle's {dimension} in {unit}: the route leaves out the ways whose limit is lower.",
        }
    if offer.obstacles:
        ring = {
            "type": "array",
            "minItems": 4,
            "maxItems": MAX_RING,
            "items": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "number", "minimum": -180, "maximum": 180}},
        }
        multipolygon = {
            "type": "object",
            "required": ["type", "coordinates"],
            "properties": {
                "type": {"type": "string", "enum": ["MultiPolygon"]},
                "coordinates": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_OBSTACLES,
                    "items": {"type": "array", "minItems": 1, "maxItems": MAX_OBSTACLES, "items": ring},
                },
            },
        }
        wrapped = {"type": "object", "required": ["value"], "properties": {"value": multipolygon}}
        inputs["obstacles"] = beside["obstacles"] = {
            "description": "Areas the route never crosses (a GeoJSON MultiPolygon, in a `value` member or not).",
            "anyOf": [wrapped, multipolygon],
        }
    if offer.time:
        inputs["when"] = beside["when"] = {
            "type": "object",
            "required": ["value"],
            "properties": {
                "value": {
                    "type": "object",
                    "required": ["timestamp"],
                    "properties": {
                        "timestamp": {"type": "string", "format": "date-time", "pattern": TIMESTAMP},
                        "type": {"type": "string", "enum": ["departure", "arrival"], "default": "departure"},
                    },
                }
            },
        }
    return {
        "type": "object",
        "required": ["inputs"],
        "additionalProperties": False,
        "properties": {
            "inputs": {"type": "object", "required": ["waypoints"], "additionalProperties": False, "properties": inputs},
            **beside,
            "subscriber": {
                "type": "object",
                "description": "With `Prefer: respond-async`: URLs called (POST) when the route is computed or failed.",
                "additionalProperties": False,
                "properties": {"successUri": {"type": "string", "pattern": CALLBACK}, "failedUri": {"type": "string", "pattern": CALLBACK}},
            },
        },
    }


def openapi_document(offer: Offer, base: str, access: Any = None) -> dict[str, Any]:
    """The OpenAPI 3.0 document of ``offer``'s API at ``base`` (its ``{apiURI}``)."""
    route_id = {"name": "routeId", "in": "path", "required": True, "schema": {"type": "string"}}
    location = {"Location": {"description": "The URI of the stored route.", "schema": {"type": "string"}}}
    paths = {
        "/": {
            "get": {
                "operationId": "getLandingPage",
                "summary": "Landing page",
                "responses": {"200": {"description": "Links to the API's resources.", "content": _json("Links")}, **_STARTING},
            }
        },
        "/conformance": {
            "get": {
                "operationId": "getConformance",
                "summary": "The conformance classes, preferences and modes of this API",
                "responses": {"200": {"description": "The conformance declaration.", "content": _json("Conformance")}, **_STARTING},
            }
        },
        "/api": {
            "get": {
                "operationId": "getApi",
                "summary": "This document",
                "responses": {
                    "200": {
                        "description": "The OpenAPI 3.0 document.",
                        "content": {"application/vnd.oai.openapi+json;version=3.0": {"schema": {"type": "object"}}},
                    },
                    **_STARTING,
                },
            }
        },
        "/routes": {
            "get": {
                "operationId": "getRoutes",
                "summary": "The stored routes",
                "responses": {
                    "200": {"description": "A link to each stored route, titled by its name.", "content": _json("Links")},
                    **_STARTING,
                },
            },
            "post": {
                "operationId": "computeRoute",
                "summary": "Compute a route (stored: its URI in Location); `Prefer: respond-async` answers 201 at once",
                "parameters": [
                    {"name": "Prefer", "in": "header", "required": False, "schema": {"type": "string", "enum": ["respond-async"]}}
                ],
                "requestBody": {"required": True, "content": {"application/json": {"schema": definition_schema(offer)}}},
                "responses": {
                    "200": {
                        "description": "The route (Route Exchange Model).",
                        "headers": location,
                        "content": _json("Route", "application/geo+json"),
                    },
                    "201": {"description": "Accepted: computed in the background.", "headers": location, "content": _json("Status")},
                    **_COMPUTING,
                },
            },
        },
        "/routes/{routeId}": {
            "parameters": [route_id],
            "get": {
                "operationId": "getRoute",
                "summary": "A stored route, as it was answered",
                "responses": {
                    "200": {"description": "The route.", "content": _json("Route", "application/geo+json")},
                    "202": {"description": "Still computing (accepted or running).", "content": _json("Status")},
                    **_NOT_FOUND,
                    **{k: v for k, v in _COMPUTING.items() if k != "413"},
                },
            },
            "delete": {
                "operationId": "deleteRoute",
                "summary": "Delete a stored route",
                "responses": {"204": {"description": "Deleted."}, **_NOT_FOUND, **_STARTING},
            },
        },
        "/routes/{routeId}/definition": {
            "parameters": [route_id],
            "get": {
                "operationId": "getRouteDefinition",
                "summary": "The route definition as it was posted",
                "responses": {
                    "200": {"description": "The posted body.", "content": {"application/json": {"schema": {"type": "object"}}}},
                    **_NOT_FOUND,
                    **_STARTING,
                },
            },
        },
    }
    document = {
        "openapi": "3.0.3",
        "info": {"title": f"OGC API – Routes: {offer.title}", "version": "1.0", "x-roadkit-version": __version__},
        "servers": [{"url": base}],
        "paths": paths,
        "components": {"schemas": SCHEMAS},
    }
    return secure_openapi(document, access)
