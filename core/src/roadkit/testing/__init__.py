"""Helpers for plugin authors' tests: the source contract, a test source kind, services and clients.

- :class:`SourceContract` (``roadkit.testing.contract``): an engine plugin's test suite subclasses it
  and provides two fixtures, ``contract_source`` (a connected source) and ``contract_points`` (two
  routable points in the source's projection); pytest then runs every contract test against the
  plugin's engine.
- :class:`StraightSource` (``roadkit.testing.straight``): the ``straight`` source kind, answers in
  straight lines; the module is the plugin object that registers it (never installed).
- :func:`write_service`, :func:`service_client`, :func:`plugins_for_tests` (``roadkit.testing.services``):
  a service written from its documents, a client of its app, the plugins of a test.
- :func:`http_scope`, :func:`asgi_messages` (``roadkit.testing.asgi``): a request handed to an app as a
  server hands it, the query as it is (no HTTP client's encoding or length limit), and the app's answer.
- ``roadkit.testing.plugin``: the pytest plugin (``roadkit_plugins``, ``roadkit_service_files``,
  ``roadkit_client`` fixtures), loaded by pytest through its ``pytest11`` entry point.

The names are imported when first used: pytest loads this package with its plugin in every run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from roadkit.testing.asgi import asgi_messages, http_scope
    from roadkit.testing.contract import SourceContract
    from roadkit.testing.services import (
        PROJECTIONS,
        SERVICE,
        WORLD,
        plugins_for_tests,
        service_client,
        straight_plugins,
        straight_resource,
        straight_source,
        write_service,
    )
    from roadkit.testing.straight import StraightCost, StraightLimits, StraightOptions, StraightSource, great_circle

_MODULES = {
    "asgi_messages": "asgi",
    "http_scope": "asgi",
    "SourceContract": "contract",
    "PROJECTIONS": "services",
    "SERVICE": "services",
    "WORLD": "services",
    "plugins_for_tests": "services",
    "service_client": "services",
    "straight_plugins": "services",
    "straight_resource": "services",
    "straight_source": "services",
    "write_service": "services",
    "StraightCost": "straight",
    "StraightLimits": "straight",
    "StraightOptions": "straight",
    "StraightSource": "straight",
    "great_circle": "straight",
}

__all__ = [
    "PROJECTIONS",
    "SERVICE",
    "WORLD",
    "SourceContract",
    "StraightCost",
    "StraightLimits",
    "StraightOptions",
    "StraightSource",
    "asgi_messages",
    "great_circle",
    "http_scope",
    "plugins_for_tests",
    "service_client",
    "straight_plugins",
    "straight_resource",
    "straight_source",
    "write_service",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
