"""Configuration files: the server file, service files, ``*.source`` and ``*.resource`` files."""

from roadkit.config.loader import load_server, load_service
from roadkit.config.models import (
    ApiRef,
    ApplicationInfo,
    Listener,
    LoggingConfig,
    ManagedService,
    Provider,
    ResourceConfig,
    ServerConfig,
    ServiceConfig,
    SourceConfig,
)

__all__ = [
    "ApiRef",
    "ApplicationInfo",
    "Listener",
    "LoggingConfig",
    "ManagedService",
    "Provider",
    "ResourceConfig",
    "ServerConfig",
    "ServiceConfig",
    "SourceConfig",
    "load_server",
    "load_service",
]
