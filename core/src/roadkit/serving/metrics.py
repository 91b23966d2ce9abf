"""A service's Prometheus metrics: its requests, their durations, the engines' time, the requests in flight.

In a worker process the administrator sets ``PROMETHEUS_MULTIPROC_DIR`` to the service's metrics folder, so
prometheus-client keeps these values in that folder's files (one set per process) and the administrator
sums them over every worker, a dead one's too; in the administrator's own process (a same-process service)
they are ordinary values of :data:`REGISTRY`. Every label value comes from the configuration (API names,
operation paths, resource and source ids) or is one fixed word, so no request can add a series of its own.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import unquote_plus

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import Scope

from roadkit.web.api import QueryRoute, ScopeRoute

#: The label of a resource that the service does not serve, and of a path or operation that no API has.
UNKNOWN = "unknown"
#: The label of a request that names no resource (capabilities, documentation).
NONE = "none"
#: The source methods whose time ``roadkit_engine_duration_seconds`` measures (``native``: the native OSRM API's calls).
ENGINE_OPERATIONS = ("route", "isochrone", "nearest", "matrix", "native")

REGISTRY = CollectorRegistry(auto_describe=True)
REQUESTS = Counter(
    "roadkit_requests",
    "HTTP requests answered by a service, by API, operation, resource and status",
    ["service", "api", "operation", "resource", "status"],
    registry=REGISTRY,
)
DURATION = Histogram(
    "roadkit_request_duration_seconds",
    "Time from a request's arrival at the service to the end of its answer",
    ["service", "api", "operation", "resource"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    registry=REGISTRY,
)
ENGINE = Histogram(
    "roadkit_engine_duration_seconds",
    "Time spent in a source's engine call (route, isochrone, nearest, matrix, native)",
    ["service", "source", "operation"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    registry=REGISTRY,
)
IN_FLIGHT = Gauge(
    "roadkit_requests_in_flight",
    "Requests a service is answering now",
    ["service"],
    multiprocess_mode="livesum",
    registry=REGISTRY,
)


_RESOURCE = re.compile(rb"(?:^|&)resource=([^&]*)")


class Measured(Protocol):
    """What the request metrics read of a service (:class:`~roadkit.serving.service.Service`)."""

    @property
    def id(self) -> str: ...
    @property
    def resources(self) -> Mapping[str, object]: ...


def time_engine(source: Any, service_id: str) -> None:
    """Measure the time of every engine call of ``source``, a :class:`~roadkit.routing.source.Source` (its methods are wrapped)."""
    for operation in ENGINE_OPERATIONS:
        method = getattr(source, operation, None)
        if method is not None:
            setattr(source, operation, _timed(method, service_id, source.id, operation))


def _timed(method: Callable[..., Awaitable[Any]], service_id: str, source_id: str, operation: str) -> Callable[..., Awaitable[Any]]:
    observe: Callable[[float], None] | None = None  # the series is made at the first call: none for operations never asked

    async def timed(*args: Any, **kwargs: Any) -> Any:
        nonlocal observe
        start = time.perf_counter()
        try:
            return await method(*args, **kwargs)
        finally:
            if observe is None:
                observe = ENGINE.labels(service_id, source_id, operation).observe
            observe(time.perf_counter() - start)

    return timed


def query_resource(query: bytes) -> str | None:
    """The ``resource`` parameter of a query string (its first occurrence), None when absent."""
    found = _RESOURCE.search(query)
    if found is None:
        return None
    raw: bytes = found[1]
    text = raw.decode("latin-1")
    return unquote_plus(text) if b"%" in raw or b"+" in raw else text


class RequestMetrics:
    """Counts and times a service's requests, labelled from its configuration.

    ``apis``: each mounted API's path prefix and name. A path the service's routes name exactly
    (an operation, the capabilities) is labelled by that path; a path under the prefix of an API whose
    :class:`~roadkit.web.api.ScopeRoute` takes ``/{resource}/{operation}/...`` by those two when they are
    known; anything else counts as ``unknown``.
    """

    def __init__(self, service: Measured, routes: Iterable[BaseRoute], apis: dict[str, str]) -> None:
        self.service = service
        #: Adds to the requests in flight (1 when one arrives, -1 when it is answered).
        self.in_flight = IN_FLIGHT.labels(service.id).inc
        #: Exact path -> (api, operation, whether the operation takes a resource).
        self.exact: dict[str, tuple[str, str, bool]] = {}
        #: API prefix -> (api, the operations its ScopeRoute knows, or None when it has none).
        self.prefixes: list[tuple[str, str, frozenset[str] | None]] = []
        for route in routes:
            if isinstance(route, Mount):
                api = apis.get(route.path, UNKNOWN)
                scoped: frozenset[str] | None = None
                for inner in route.routes:
                    if isinstance(inner, ScopeRoute):
                        scoped = (scoped or frozenset()) | inner.operations
                    elif isinstance(inner, Route) and "{" not in inner.path:
                        name = inner.path.strip("/") or "index"
                        self.exact.setdefault(route.path + inner.path, (api, name, isinstance(inner, QueryRoute)))
                self.prefixes.append((route.path + "/", api, scoped))
            elif isinstance(route, Route) and "{" not in route.path:
                self.exact.setdefault(route.path, ("service", route.path.strip("/") or "index", False))
        self._series: dict[tuple[str, str, str, int], tuple[Callable[[float], None], Callable[[float], None]]] = {}

    def labels(self, scope: Scope) -> tuple[str, str, str]:
        """(api, operation, resource) of a request, every value from the configuration or a fixed word."""
        path: str = scope["path"]
        exact = self.exact.get(path)
        if exact is not None:
            api, operation, takes_resource = exact
            if not takes_resource:
                return api, operation, NONE
            named = scope.get("roadkit.resource")  # a POST's, read from its body by the API
            if named is None:
                named = query_resource(scope.get("query_string", b""))
            return api, operation, self.resource(named)
        for prefix, api, scoped in self.prefixes:
            if path.startswith(prefix):
                if scoped is None:
                    return api, UNKNOWN, NONE
                resource, _, rest = path[len(prefix) :].partition("/")
                # The operation comes first (``route/v1/car/...``), or third in Road2's form (``v1/car/route/...``).
                operation = next((part for part in rest.split("/", 3)[:3] if part in scoped), UNKNOWN)
                return api, operation, self.resource(resource)
        return UNKNOWN, UNKNOWN, NONE

    def resource(self, named: Any) -> str:
        if named is None or named == "":
            return NONE
        return named if isinstance(named, str) and named in self.service.resources else UNKNOWN

    def record(self, scope: Scope, status: int, seconds: float) -> None:
        """Count one answered request and its duration."""
        api, operation, resource = self.labels(scope)
        key = (api, operation, resource, status)
        series = self._series.get(key)
        if series is None:
            sid = self.service.id
            series = self._series[key] = (
                REQUESTS.labels(sid, api, operation, resource, str(status)).inc,
                DURATION.labels(sid, api, operation, resource).observe,
            )
        series[0](1.0)
        series[1](seconds)
