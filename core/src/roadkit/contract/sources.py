"""What a source kind needs: ``from roadkit.contract.sources import Source, hookimpl``.

A source kind subclasses :class:`Source`, registers it with the ``roadkit_source_kinds`` hook, reads its
options (an attrs class, ``options_class``) from its ``.source`` file, and answers the engine-agnostic
requests. :class:`SourceContext` says what it may know of the process that runs it.
"""

from __future__ import annotations

from roadkit import hookimpl
from roadkit.config.convert import structure
from roadkit.config.files import read_document, resolve
from roadkit.config.models import SourceConfig
from roadkit.engines.remote import EngineServers, HttpSettings, RemoteSource
from roadkit.errors import (
    ConfigurationError,
    EngineBusy,
    EngineError,
    EngineTimeout,
    NoIsochroneFound,
    NoPathFound,
    ParameterInvalid,
    PluginError,
    PointNotSnapped,
    RoadkitError,
    SourceUnavailable,
    UnsupportedOperation,
)
from roadkit.hookspecs import Command
from roadkit.routing.model import (
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
    LineText,
    MatrixRequest,
    MatrixResponse,
    NearestPoint,
    NearestRequest,
    NearestResponse,
    Portion,
    RouteRequest,
    RouteResponse,
    Step,
    Vehicle,
    way_name,
)
from roadkit.routing.source import CostEntry, CostTable, Progress, Source, SourceContext, SourceState
from roadkit.routing.versions import VersionedKind

__all__ = [
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
    "EngineBusy",
    "EngineError",
    "EngineServers",
    "EngineTimeout",
    "GeoJSONText",
    "HttpSettings",
    "IsochroneRequest",
    "IsochroneResponse",
    "LineText",
    "MatrixRequest",
    "MatrixResponse",
    "NearestPoint",
    "NearestRequest",
    "NearestResponse",
    "NoIsochroneFound",
    "NoPathFound",
    "ParameterInvalid",
    "PluginError",
    "PointNotSnapped",
    "Portion",
    "Progress",
    "RemoteSource",
    "RoadkitError",
    "RouteRequest",
    "RouteResponse",
    "Source",
    "SourceConfig",
    "SourceContext",
    "SourceState",
    "SourceUnavailable",
    "Step",
    "UnsupportedOperation",
    "Vehicle",
    "VersionedKind",
    "hookimpl",
    "read_document",
    "resolve",
    "structure",
    "way_name",
]
