"""A clock that tests can move forward (``POST /_testing/clock``)."""

from __future__ import annotations

import time


class Clock:
    """Wall-clock time plus an offset that only ever grows."""

    def __init__(self) -> None:
        self._offset = 0.0

    def now(self) -> float:
        """Current time in seconds since the epoch, offset included."""
        return time.time() + self._offset

    def now_int(self) -> int:
        """Current time as whole seconds (JWT ``iat``/``exp`` resolution)."""
        return int(self.now())

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (must be >= 0) and return the total offset."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self._offset += seconds
        return self._offset

    @property
    def offset(self) -> float:
        """Seconds added to the wall clock so far."""
        return self._offset
