"""What a roadkit plugin may import: the public contract between core and its plugins.

An engine, API or command plugin imports from this module only (``from roadkit.contract import
Source, hookimpl``); everything else in ``roadkit`` is core's own and may change without notice.
``hookspecs`` is written against this module too, so the hooks speak the same names.

This module imports no serving code (service, plugins, app, servers): a plugin sees a running
service through :class:`ServiceView`, the part of ``roadkit.service.Service`` it may rely on.
"""

from __future__ import annotations

from roadkit import hookimpl
from roadkit.accept import connection_waiting
from roadkit.api import Api, JSONResponse, ScopeRoute, base_url, error_response, read_json_body
from roadkit.cli import Command
from roadkit.config.convert import structure
from roadkit.config.files import read_document, resolve
from roadkit.config.models import ResourceConfig, ServiceConfig, SourceConfig, cores_per_worker
from roadkit.docs import docs_routes
from roadkit.errors import (
    BadRequest,
    ConfigurationError,
    EngineError,
    EngineTimeout,
    NoIsochroneFound,
    NoPathFound,
    NotFound,
    OperationNotPermitted,
    ParameterInvalid,
    ParameterMissing,
    PluginError,
    RoadkitError,
    SourceUnavailable,
    UnsupportedOperation,
)
from roadkit.model import (
    Constraint,
    ConstraintKeyType,
    ConstraintType,
    Coord,
    Cost,
    CostType,
    Direction,
    GeoJSONText,
    IsochroneRequest,
    IsochroneResponse,
    NearestPoint,
    NearestRequest,
    NearestResponse,
    Portion,
    RouteRequest,
    RouteResponse,
    Step,
    way_name,
)
from roadkit.patterns import decimal_pattern
from roadkit.pgcluster import PrivateCluster
from roadkit.projections import ProjectionRegistry
from roadkit.remote import EngineServers, HttpSettings, RemoteSource
from roadkit.resources import Resource
from roadkit.source import CostEntry, CostTable, Progress, Source, SourceState
from roadkit.view import ServiceView

__all__ = [
    "Api",
    "BadRequest",
    "Command",
    "ConfigurationError",
    "Constraint",
    "ConstraintKeyType",
    "ConstraintType",
    "Coord",
    "Cost",
    "CostEntry",
    "CostTable",
    "CostType",
    "Direction",
    "EngineError",
    "EngineServers",
    "EngineTimeout",
    "GeoJSONText",
    "HttpSettings",
    "IsochroneRequest",
    "IsochroneResponse",
    "JSONResponse",
    "NearestPoint",
    "NearestRequest",
    "NearestResponse",
    "NoIsochroneFound",
    "NoPathFound",
    "NotFound",
    "OperationNotPermitted",
    "ParameterInvalid",
    "ParameterMissing",
    "PluginError",
    "Portion",
    "PrivateCluster",
    "Progress",
    "ProjectionRegistry",
    "RemoteSource",
    "Resource",
    "ResourceConfig",
    "RoadkitError",
    "RouteRequest",
    "RouteResponse",
    "ScopeRoute",
    "ServiceConfig",
    "ServiceView",
    "Source",
    "SourceConfig",
    "SourceState",
    "SourceUnavailable",
    "Step",
    "UnsupportedOperation",
    "base_url",
    "connection_waiting",
    "cores_per_worker",
    "decimal_pattern",
    "docs_routes",
    "error_response",
    "hookimpl",
    "read_document",
    "read_json_body",
    "resolve",
    "structure",
    "way_name",
]
