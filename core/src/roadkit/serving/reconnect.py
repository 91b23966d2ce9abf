"""Sources that failed to connect are tried again, with a capped exponential back-off.

An engine whose data or database is not there yet at start (a dataset still being copied, a
database still starting) must not stay out of its resources for ever: the service keeps trying,
doubling the wait each time up to a cap, and health shows how it goes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import attrs

from roadkit.routing.source import Source, SourceState

log = logging.getLogger(__name__)


@attrs.frozen
class Backoff:
    """Waits of ``initial`` seconds, doubled after each failure, never above ``maximum``."""

    initial: float = 2.0
    maximum: float = 300.0

    def delay(self, failures: int) -> float:
        """The wait after ``failures`` failed attempts (1 → ``initial``)."""
        return float(min(self.maximum, self.initial * 2 ** max(0, failures - 1)))


@attrs.define
class Reconnection:
    """How the connection of one source goes: failed attempts, the last reason, the next try."""

    attempts: int = 1
    reason: str = ""
    next_at: float | None = None  # time.time() of the next attempt

    def health(self) -> dict[str, Any]:
        """The ``connection`` entry of the source in health."""
        entry: dict[str, Any] = {"attempts": self.attempts, "lastError": self.reason}
        if self.next_at is not None:
            entry["nextRetry"] = datetime.fromtimestamp(self.next_at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        return entry


async def keep_connecting(
    source: Source,
    state: Reconnection,
    backoff: Backoff,
    connect: Callable[[Source], Awaitable[None]],
    still_wanted: Callable[[Source], bool],
    connected: Callable[[Source], Awaitable[None]],
) -> None:
    """Try ``connect(source)`` again and again until the source is green, then call ``connected``.

    Stops quietly when the source is no longer the service's (replaced or removed): ``still_wanted``.
    """
    while True:
        delay = backoff.delay(state.attempts)
        state.next_at = time.time() + delay
        await asyncio.sleep(delay)
        if not still_wanted(source):
            return
        state.next_at = None
        await connect(source)
        if source.state is SourceState.GREEN:
            log.info("source %s (%s) connected after %d failed attempt(s)", source.id, source.kind, state.attempts)
            await connected(source)
            return
        state.attempts += 1
        state.reason = source.reason
        log.info(
            "source %s (%s): connection attempt %d failed (%s); next in %g s",
            source.id,
            source.kind,
            state.attempts,
            state.reason,
            backoff.delay(state.attempts),
        )
