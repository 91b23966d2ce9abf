"""The engine contract: a Source computes routes, isochrones and nearest points on one graph.

An engine plugin subclasses :class:`Source`, sets ``kind`` and ``options_class`` (an attrs class
structured from the kind-specific keys of the ``.source`` file), and implements the operations it
supports. Unsupported operations raise :class:`UnsupportedOperation`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import attrs

from roadkit.config import models
from roadkit.config.convert import structure
from roadkit.config.models import SourceConfig
from roadkit.errors import EngineTimeout, ParameterInvalid, UnsupportedOperation
from roadkit.routing.model import (
    ConstraintKeyType,
    Cost,
    CostType,
    IsochroneRequest,
    IsochroneResponse,
    MatrixRequest,
    MatrixResponse,
    NearestRequest,
    NearestResponse,
    RouteRequest,
    RouteResponse,
)
from roadkit.routing.versions import VersionedKind, apply_version

log = logging.getLogger(__name__)


def _option_paths(value: Any, key: str) -> Iterator[tuple[str, Path]]:
    """Every ``Path`` in parsed options (attrs classes, mappings, sequences), with its dotted key."""
    if isinstance(value, Path):
        yield key, value
    elif attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            yield from _option_paths(getattr(value, field.name), f"{key}.{field.name}" if key else field.name)
    elif isinstance(value, Mapping):
        for name, inner in value.items():
            yield from _option_paths(inner, f"{key}.{name}" if key else str(name))
    elif isinstance(value, list | tuple):
        for i, inner in enumerate(value):
            yield from _option_paths(inner, f"{key}[{i}]")


T = TypeVar("T")


class CostEntry(Protocol):
    """A configured cost of a multi-cost source (a Valhalla costing, a pair of pgRouting columns...)."""

    @property
    def profile(self) -> str: ...
    @property
    def optimization(self) -> str | None: ...
    @property
    def cost_type(self) -> CostType | None: ...


class CostTable[E: CostEntry]:
    """The costs of a source that computes several, found by route key (profile, optimization)
    first, then by isochrone key (profile, costType)."""

    def __init__(self, source_id: str, entries: Sequence[E]) -> None:
        self.source_id = source_id
        self.entries = tuple(entries)
        self._route = {(e.profile, e.optimization): e for e in self.entries if e.optimization}
        self._isochrone = {(e.profile, e.cost_type): e for e in self.entries if e.cost_type}

    def costs(self) -> list[Cost]:
        """The declared costs, in configuration order."""
        return [Cost(e.profile, e.optimization, e.cost_type) for e in self.entries]

    def find(self, cost: Cost) -> E:
        """The entry of ``cost`` (a 400 naming ``profile`` when the source has none)."""
        found = None
        if cost.optimization is not None:
            found = self._route.get((cost.profile, cost.optimization))
        if found is None and cost.cost_type is not None:
            found = self._isochrone.get((cost.profile, cost.cost_type))
        if found is None:
            raise ParameterInvalid(
                "profile", f"source {self.source_id} has no cost for {cost.profile}/{cost.optimization or cost.cost_type}"
            )
        return found


class SourceState(enum.StrEnum):
    """Connection state of a source: ``init`` until it connects, then ``green`` or ``red``."""

    INIT = "init"
    GREEN = "green"
    RED = "red"


def _no_connection_waits() -> bool:
    return False


@attrs.frozen
class SourceContext:
    """What a source learns of the process that runs it: values given by the service that builds it."""

    #: This process's share of the usable cores (all of them in same-process mode): the default number
    #: of an engine's threads, so that all workers together run as many engine threads as there are cores.
    cores: int = attrs.field(factory=lambda: models.usable_cores())
    #: Whether a connection waits for this process to accept it; work that holds the event loop's
    #: thread (an engine called on it) lets the loop accept it first. Always False in same-process mode.
    connection_waiting: Callable[[], bool] = _no_connection_waits

    @classmethod
    def worker(cls, workers: int, connection_waiting: Callable[[], bool]) -> SourceContext:
        """The context of one of ``workers`` worker processes of a service."""
        return cls(max(1, models.usable_cores() // max(1, workers)), connection_waiting)


class Progress:
    """Progress of a data-preparation step, printed for the user."""

    def __init__(self, write: Callable[[str], None] = print) -> None:
        self._write = write

    def step(self, message: str) -> None:
        """A new step begins."""
        self._write(f"==> {message}")

    def info(self, message: str) -> None:
        """A detail of the current step."""
        self._write(f"    {message}")


class Source:
    """Base class of every source kind."""

    kind: ClassVar[str] = ""
    #: The resource type whose resources may hold this kind's sources (None: the kind itself).
    #: A remote kind such as ``osrm-http`` serves ``osrm`` resources beside in-process sources.
    resource_type: ClassVar[str | None] = None
    options_class: ClassVar[type | None] = None
    operations: ClassVar[frozenset[str]] = frozenset()
    #: The constraint key types (``keyType`` of resource files) this kind applies, with their operators.
    #: A resource whose sources do not all declare a key's type refuses it in the configuration.
    constraint_key_types: ClassVar[Mapping[str, ConstraintKeyType]] = {}
    #: The years of a ``date_time`` the engine reads: a date outside is a 400 naming ``date_time``
    #: (the simple API's document gives the same range).
    date_time_years: ClassVar[tuple[int, int]] = (1000, 9999)
    #: Whether the engine computes routes that avoid areas (``RouteRequest.avoid``).
    avoids_areas: ClassVar[bool] = False
    #: The only projections the engine works in (a source file naming another is a configuration error,
    #: as the admin API's document states); None: any projection the service knows.
    projections: ClassVar[tuple[str, ...] | None] = None
    #: The keys of the source file that locate its data, each a ``"path"`` or a ``"name"`` (a schema):
    #: read for the file's ``version`` (roadkit.routing.versions), so that versions live side by side.
    versioned_keys: ClassVar[Mapping[str, VersionedKind]] = {}

    def __init__(self, config: SourceConfig, options: Any, *, timeout: float = 10.0) -> None:
        self.config = config
        self.options = options
        self.timeout = config.timeout or timeout
        self.state = SourceState.INIT
        self.reason = ""
        self._executor: Executor | None = None
        #: The engine setting of each declared cost, resolved once when the source connects (roadkit_resolve_cost).
        self.cost_settings: dict[Cost, Any] = {}
        #: The process the source runs in (given by :meth:`from_config`).
        self.context = SourceContext()

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def projection(self) -> str:
        return self.config.projection

    @property
    def data_version(self) -> str | None:
        """The version of the data this source computes on (the file's ``version``; None: unversioned)."""
        return self.config.version

    @property
    def vehicle_limits(self) -> Mapping[str, float]:
        """The vehicle dimensions (``height`` in metres, ``weight`` in tonnes) the engine keeps a route
        within (``RouteRequest.vehicle``), each with the largest value it reads; empty: none."""
        return {}

    @classmethod
    def parse_options(cls, config: SourceConfig) -> Any:
        """The kind-specific options of ``config`` (a ConfigurationError names file and key)."""
        if cls.options_class is None:
            return config.options
        return structure(config.options, cls.options_class, config.path)

    @classmethod
    def from_config(cls, config: SourceConfig, *, timeout: float = 10.0, context: SourceContext | None = None) -> Source:
        """A source built (not yet connected) from its configuration, in the process described by ``context``."""
        config = cls.versioned(config, config.version)
        source = cls(config, cls.parse_options(config), timeout=timeout)
        if context is not None:
            source.context = context
        return source

    @classmethod
    def versioned(cls, config: SourceConfig, version: str | None) -> SourceConfig:
        """``config`` read for data ``version``: its ``versioned_keys`` point at that version's data."""
        options = apply_version(config.options, version, cls.versioned_keys, config.path)
        return attrs.evolve(config, options=options, version=version)

    def costs(self) -> Sequence[Cost]:
        """The costs this source can compute."""
        return ()

    def resolve_cost(self, cost: Cost) -> Any:
        """The engine setting of one cost (default: the cost itself).

        The service asks this through the ``roadkit_resolve_cost`` hook once per declared cost when
        the source connects (a plugin may answer instead); the engine reads the answer with
        :meth:`setting`, never this method, so that an override is what requests get.
        """
        return cost

    def keep_cost_settings(self, settings: Mapping[Cost, Any]) -> None:
        """Keep the engine setting of every declared cost (called by the service before ``connect``)."""
        self.cost_settings = dict(settings)

    def setting(self, cost: Cost) -> Any:
        """The engine setting of a request's cost, as resolved at connection.

        A request's cost names a profile with an optimization (routes) or a cost type (isochrones):
        it matches the declared cost with the same profile and that optimization (else cost type).
        A source used without a service (no settings kept) resolves the cost itself.
        """
        if not self.cost_settings:
            return self.resolve_cost(cost)
        if cost in self.cost_settings:
            return self.cost_settings[cost]
        for declared, setting in self.cost_settings.items():
            if declared.profile == cost.profile and cost.optimization is not None and declared.optimization == cost.optimization:
                return setting
        for declared, setting in self.cost_settings.items():
            if declared.profile == cost.profile and cost.cost_type is not None and declared.cost_type == cost.cost_type:
                return setting
        # Not a declared cost: the source says why (e.g. a ParameterInvalid naming the profile).
        return self.resolve_cost(cost)

    @classmethod
    def prepare(cls, config: SourceConfig, options: Any, *, force: bool, progress: Progress) -> bool:
        """Build the source's data when missing (or always with ``force``); True when it built."""
        return False

    @classmethod
    def data_paths(cls, config: SourceConfig, options: Any) -> Sequence[Path]:
        """The files the source needs at connection (checked by ``roadkit check``)."""
        return ()

    @classmethod
    def named_paths(cls, config: SourceConfig, options: Any) -> Sequence[tuple[str, Path]]:
        """Every file or folder the source reads or builds, each with the key of its file that names it.

        A source written through the admin API may name only paths inside the folders the administrator
        allows. The default: every ``Path`` of the parsed options, then the ``data_paths`` not among them
        (named after the option they extend, such as ``storage.file`` for an OSRM dataset's files).
        """
        named = list(_option_paths(options, ""))
        fallback = next((key for key, kind in cls.versioned_keys.items() if kind == "path"), "storage")
        for path in cls.data_paths(config, options):
            if all(path != known for _, known in named):
                named.append((next((key for key, known in named if str(path).startswith(str(known))), fallback), path))
        return named

    def remote_hosts(self) -> Sequence[tuple[str, str]]:
        """The hosts the source connects to (databases, engine servers), each with the key of its file that names it.

        A source written through the admin API may connect only to the hosts the administrator allows.
        """
        return ()

    def constraint_problem(self, operation: str, constraint_type: str, key_type: str, field: str | None) -> str | None:
        """Why this source never applies a ``constraint_type`` constraint on such a key to ``operation`` requests (None: it does).

        A resource key that allows a constraint type one of its sources never applies is refused in
        the configuration, so that the capabilities only advertise what requests get.
        """
        return None

    def cost_constraint_problem(self, cost: Cost, constraint_type: str, key_type: str, field: str | None) -> str | None:
        """Why a request with ``cost`` can't get a ``constraint_type`` constraint on ``field`` (None: it can).

        For a constraint the source applies with some of its costs only (Valhalla's pedestrian costing
        weighs no motorways): such a request is a 400 naming ``constraints``, and the capabilities
        list per profile what each cost applies.
        """
        return None

    def isochrone_limit(self, cost_type: str) -> float | None:
        """The largest isochrone the engine computes: seconds (``time``) or meters (``distance``); None: no limit.

        Asked on a connected source. A larger ``costValue`` is a 400 naming it, and the simple API's
        document gives the largest value in each unit.
        """
        return None

    def supported_bans(self, fields: Collection[str], most: int) -> Collection[frozenset[str]] | None:
        """The sets of banned ``field`` values (at most ``most`` together) the engine applies at once.

        None (the default) when every combination works. Called on a connected source while its
        resources are built, on the event loop: the capabilities advertise the result and other
        combinations are 400s. A source that must ask its engine over the network learns the answer
        in :meth:`learn_bans` first; here it only reads what it learnt.
        """
        return None

    async def learn_bans(self, fields: Collection[str], most: int) -> None:
        """Learn what :meth:`supported_bans` will answer for these fields (asynchronous I/O allowed).

        Awaited on a connected source before the resources that ban these fields are built (at the
        service's start, after a connection or a reconnection, when a resource is published). The
        default learns nothing: ``supported_bans`` knows its answer without asking.
        """

    async def connect(self) -> None:
        """Open the engine. Sets ``green`` on success; raises (and sets ``red``) on failure."""
        self.state = SourceState.GREEN

    async def disconnect(self) -> None:
        """Release the engine and its threads."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        self.state = SourceState.INIT

    def fail(self, reason: str) -> None:
        """Mark the source red with a reason that health reports (logged once, when a green one turns red)."""
        if self.state is SourceState.GREEN:  # a failed connection is logged by the service, with its retry
            log.warning("source %s (%s) is red: %s", self.id, self.kind, reason)
        self.state = SourceState.RED
        self.reason = reason

    def executor(self) -> Executor:
        """The thread pool that runs this source's blocking engine calls."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.threads(), thread_name_prefix=f"src-{self.id}")
        return self._executor

    def threads(self) -> int:
        """How many engine calls may run at once (override for engines that release the GIL)."""
        return 4

    async def run_blocking(self, fn: Callable[..., T], *args: Any, bounded: bool = True) -> T:
        """Run a blocking engine call off the event loop, bounded by the source's time-out.

        ``bounded=False`` for work that is no request, such as loading the engine's data at
        connection: the time-out is a request's, and a large dataset may take far longer to load.
        """
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executor(), fn, *args)
        if not bounded:
            return await future
        try:
            return await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            raise EngineTimeout(f"The engine of source {self.id} did not answer within {self.timeout:g} s") from None

    def run_inline(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a short blocking engine call on the event loop itself, with the time-out of :meth:`run_blocking`.

        For engines that hold the GIL for the whole call (osrm-bindings): in a thread such a call
        blocks the event loop just the same, and the hand-off to the thread and back costs more
        than a Monaco route. The time-out keeps its meaning: an answer that took longer than the
        source's time-out is discarded and the request gets the same EngineTimeout (a thread could
        not have answered earlier either, the loop being blocked). Never use it for engines that
        release the GIL (Valhalla): there a thread lets other requests run meanwhile.
        """
        started = time.perf_counter()
        result = fn(*args)
        if time.perf_counter() - started > self.timeout:
            raise EngineTimeout(f"The engine of source {self.id} did not answer within {self.timeout:g} s")
        return result

    async def route(self, request: RouteRequest) -> RouteResponse:
        """Compute a route."""
        raise UnsupportedOperation(f"source kind {self.kind!r} does not compute routes")

    async def isochrone(self, request: IsochroneRequest) -> IsochroneResponse:
        """Compute isochrones or isodistances."""
        raise UnsupportedOperation(f"source kind {self.kind!r} does not compute isochrones")

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        """Find the nearest graph points."""
        raise UnsupportedOperation(f"source kind {self.kind!r} does not compute nearest points")

    async def matrix(self, request: MatrixRequest) -> MatrixResponse:
        """Compute a matrix of durations and distances; an unsnappable point raises :class:`PointNotSnapped`."""
        raise UnsupportedOperation(f"source kind {self.kind!r} does not compute matrices")

    def health(self) -> dict[str, Any]:
        """The source's entry in the health answer."""
        entry: dict[str, Any] = {"id": self.id, "type": self.kind, "state": str(self.state)}
        if self.data_version is not None:
            entry["version"] = self.data_version
        if self.reason:
            entry["reason"] = self.reason
        return entry
