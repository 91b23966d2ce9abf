"""How the administrator drives a managed service, wherever it runs (same process or worker processes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from roadkit.config.models import ManagedService
from roadkit.serving.lifecycle import Lifecycle

if TYPE_CHECKING:
    from roadkit.process.metrics import MetricsFolder


class ServiceHandle(Protocol):
    """How the administrator drives a managed service, wherever it runs.

    ``restart`` and ``reload`` re-read the service file and replace the running service without
    refusing a request; calls made while a start or restart runs are merged into one next run.
    The publication calls load one source or resource from its file on disk (or drop it).
    """

    id: str
    managed: ManagedService
    lifecycle: Lifecycle
    #: Why the last start or restart failed ("" after a good one).
    error: str
    #: Where its worker processes write their metrics (None: it runs in this process, whose metrics are ordinary).
    metrics_folder: MetricsFolder | None
    #: Workers started again after an unexpected exit.
    worker_restarts: int

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def restart(self) -> None: ...
    async def reload(self) -> None: ...
    async def health(self) -> dict[str, Any]: ...
    async def projection(self, pid: str) -> dict[str, str]: ...
    async def describe_apis(self) -> dict[str, Any]:
        """What the APIs of the running service add to its description (``ogcApis``); empty when it is not running."""
        ...

    async def publish_source(self, sid: str) -> None: ...
    async def remove_source(self, sid: str) -> None: ...
    async def publish_resource(self, rid: str) -> None: ...
    async def remove_resource(self, rid: str) -> None: ...
    def describe(self) -> dict[str, Any]: ...
    def processes(self) -> list[tuple[str, int]]:
        """Each process serving it now: (worker label, pid), for the metrics of CPU and memory."""
        ...
