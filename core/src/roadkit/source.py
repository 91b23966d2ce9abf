"""The engine contract: a Source computes routes, isochrones and nearest points on one graph.

An engine plugin subclasses :class:`Source`, sets ``kind`` and ``options_class`` (an attrs class
structured from the kind-specific keys of the ``.source`` file), and implements the operations it
supports. Unsupported operations raise :class:`UnsupportedOperation`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from roadkit.config.convert import structure
from roadkit.config.models import SourceConfig
from roadkit.errors import EngineTimeout, UnsupportedOperation
from roadkit.model import (
    ConstraintKeyType,
    Cost,
    IsochroneRequest,
    IsochroneResponse,
    NearestRequest,
    NearestResponse,
    RouteRequest,
    RouteResponse,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


class SourceState(enum.StrEnum):
    """Connection state of a source: ``init`` until it connects, then ``green`` or ``red``."""

    INIT = "init"
    GREEN = "green"
    RED = "red"


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

    def __init__(self, config: SourceConfig, options: Any, *, timeout: float = 10.0) -> None:
        self.config = config
        self.options = options
        self.timeout = config.timeout or timeout
        self.state = SourceState.INIT
        self.reason = ""
        self._executor: Executor | None = None

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def projection(self) -> str:
        return self.config.projection

    @classmethod
    def parse_options(cls, config: SourceConfig) -> Any:
        """The kind-specific options of ``config`` (a ConfigurationError names file and key)."""
        if cls.options_class is None:
            return config.options
        return structure(config.options, cls.options_class, config.path)

    @classmethod
    def from_config(cls, config: SourceConfig, *, timeout: float = 10.0) -> Source:
        """A source built (not yet connected) from its configuration."""
        return cls(config, cls.parse_options(config), timeout=timeout)

    def costs(self) -> Sequence[Cost]:
        """The costs this source can compute."""
        return ()

    def resolve_cost(self, cost: Cost) -> Any:
        """The engine setting of one cost (default: the cost itself)."""
        return cost

    @classmethod
    def prepare(cls, config: SourceConfig, options: Any, *, force: bool, progress: Progress) -> bool:
        """Build the source's data when missing (or always with ``force``); True when it built."""
        return False

    @classmethod
    def data_paths(cls, config: SourceConfig, options: Any) -> Sequence[Path]:
        """The files the source needs at connection (checked by ``roadkit check``)."""
        return ()

    def constraint_problem(self, constraint_type: str, key_type: str, field: str | None) -> str | None:
        """Why this source never applies a ``constraint_type`` constraint on such a key (None: it does).

        A resource key that allows a constraint type one of its sources never applies is refused in
        the configuration, so that the capabilities only advertise what requests get.
        """
        return None

    def supported_bans(self, fields: Collection[str], most: int) -> Collection[frozenset[str]] | None:
        """The sets of banned ``field`` values (at most ``most`` together) the engine applies at once.

        None (the default) when every combination works. Called on a connected source while its
        resources are built: the capabilities advertise the result and other combinations are 400s.
        """
        return None

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

    async def run_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking engine call off the event loop, bounded by the source's time-out."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executor(), fn, *args)
        try:
            return await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            raise EngineTimeout(f"The engine of source {self.id} did not answer within {self.timeout:g} s") from None

    async def route(self, request: RouteRequest) -> RouteResponse:
        """Compute a route."""
        raise UnsupportedOperation(f"source kind {self.kind!r} does not compute routes")

    async def isochrone(self, request: IsochroneRequest) -> IsochroneResponse:
        """Compute isochrones or isodistances."""
        raise UnsupportedOperation(f"source kind {self.kind!r} does not compute isochrones")

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        """Find the nearest graph points."""
        raise UnsupportedOperation(f"source kind {self.kind!r} does not compute nearest points")

    def health(self) -> dict[str, Any]:
        """The source's entry in the health answer."""
        entry: dict[str, Any] = {"id": self.id, "type": self.kind, "state": str(self.state)}
        if self.reason:
            entry["reason"] = self.reason
        return entry
