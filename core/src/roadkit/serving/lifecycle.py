"""Lifecycle states of a managed service, their health colour, and the restart back-off."""

from __future__ import annotations

import asyncio
import enum
import signal
from collections.abc import Awaitable, Callable


class Lifecycle(enum.StrEnum):
    """Where a managed service is in its life, as ``GET services/{id}`` and ``/health`` show it.

    ``restarting`` is a planned restart: the old workers serve until the new ones are ready, so
    health keeps the old workers' colour. ``recovering`` follows an unexpected exit: a worker is
    missing until the automatic restart (after its back-off) brings it back, so health is red.
    """

    INIT = "init"
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    RECOVERING = "recovering"
    FAILED = "failed"
    STOPPING = "stopping"
    STOPPED = "stopped"


class HealthState(enum.StrEnum):
    """Colours of the health answer. ``unknown``: the service gave no usable answer (counts as red)."""

    GREEN = "green"
    ORANGE = "orange"
    RED = "red"
    INIT = "init"
    UNKNOWN = "unknown"


#: The colour of a lifecycle in which the service's own answer is not asked for.
STATIC_HEALTH = {
    Lifecycle.INIT: HealthState.INIT,
    Lifecycle.STARTING: HealthState.INIT,
    Lifecycle.RECOVERING: HealthState.RED,
    Lifecycle.FAILED: HealthState.RED,
    Lifecycle.STOPPING: HealthState.RED,
    Lifecycle.STOPPED: HealthState.RED,
}


def describe_exit(returncode: int) -> str:
    """``exit code 3`` or ``signal SIGKILL``: how a process ended, for logs and ``lastExit``."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class MergedRuns:
    """Runs an action one at a time; calls that arrive while it runs share ONE next run.

    This is how restarts are queued and merged: the first call runs at once; every call made
    while a run (or the service's first start, which holds ``lock`` too) is in progress waits for
    the single run queued after it. Runs are tasks, so a caller that goes away cancels nothing.
    """

    def __init__(self, action: Callable[[], Awaitable[None]]) -> None:
        self.action = action
        self.lock = asyncio.Lock()
        self._queued: asyncio.Task[None] | None = None

    async def __call__(self) -> None:
        if self._queued is None:
            self._queued = asyncio.create_task(self._next())
        await asyncio.shield(self._queued)

    async def _next(self) -> None:
        async with self.lock:
            self._queued = None  # calls from now on queue the run after this one
            await self.action()
