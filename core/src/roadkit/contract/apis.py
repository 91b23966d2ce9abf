"""What an API plugin needs: ``from roadkit.contract.apis import Api, ServiceView, hookimpl``.

An API plugin returns :class:`Api` objects from the ``roadkit_apis`` hook; a service that lists the API
mounts its routes, built for the :class:`ServiceView` of the running service. Its ``[apis.*]`` settings
arrive structured into its ``settings_class`` when the service starts.
"""

from __future__ import annotations

from roadkit import hookimpl
from roadkit.errors import (
    BadRequest,
    ConfigurationError,
    NotFound,
    OperationNotPermitted,
    ParameterInvalid,
    ParameterMissing,
    RoadkitError,
)
from roadkit.routing.json_input import MAX_JSON_DEPTH, MAX_NUMBER_LENGTH, JsonInputError, nesting_depth, read_json
from roadkit.routing.model import Coord, Cost
from roadkit.routing.projections import ProjectionRegistry
from roadkit.routing.resources import Resource
from roadkit.routing.source import Source
from roadkit.web.access import secure_openapi
from roadkit.web.api import Api, JSONResponse, ScopeRoute, base_url, error_response, read_json_body
from roadkit.web.docs import docs_routes
from roadkit.web.patterns import decimal_pattern
from roadkit.web.view import ServiceView

# In the order tests/core/test_layers.py checks (capitalised names first, each group alphabetical).
__all__ = [  # noqa: RUF022
    "Api",
    "BadRequest",
    "ConfigurationError",
    "Coord",
    "Cost",
    "JSONResponse",
    "JsonInputError",
    "MAX_JSON_DEPTH",
    "MAX_NUMBER_LENGTH",
    "NotFound",
    "OperationNotPermitted",
    "ParameterInvalid",
    "ParameterMissing",
    "ProjectionRegistry",
    "Resource",
    "RoadkitError",
    "ScopeRoute",
    "ServiceView",
    "Source",
    "base_url",
    "decimal_pattern",
    "docs_routes",
    "error_response",
    "hookimpl",
    "nesting_depth",
    "read_json",
    "read_json_body",
    "secure_openapi",
]
