"""Quota counters shared by every worker of a service: exact request-rate and concurrency limits.

A :class:`QuotaTable` is a fixed-size hash table in shared memory (a memfd): the service's handle
in the administrator creates it and hands its descriptor to each worker process, which maps it
(:meth:`QuotaTable.attach`); a same-process service uses the object itself. Every check holds an
``fcntl`` lock on the descriptor (POSIX record locks exclude other processes, and a worker's event
loop is its only user of the table), so the workers together never let more requests through than a
quota allows.

Each entry counts the requests of one caller in its current window (a fixed window that starts at
the caller's first request) and the caller's requests in progress. The table never grows: a new
caller takes an empty entry near its hash, else the least recently seen entry with no request in
progress; when even that is missing the request is refused as busy.
"""

from __future__ import annotations

import fcntl
import hashlib
import math
import mmap
import os
import struct
import time
from collections.abc import Callable

import attrs

from roadkit.config.models import Quota

#: key hash (0: empty), window start, requests in the window, requests in progress, last seen.
_ENTRY = struct.Struct("<Qdqqd")
ENTRY_SIZE = _ENTRY.size
#: Entries looked at from a caller's hash: enough that a table full to 90% still finds room.
PROBES = 32


@attrs.frozen
class Decision:
    """The answer to one request's check: whether it may go on, and what its quota headers say.

    ``remaining`` and ``reset`` describe the rate quota (None without one); ``retry_after`` is set
    when refused; ``reason`` is ``rate``, ``concurrency`` or ``busy`` when refused.
    """

    allowed: bool
    remaining: int | None = None
    reset: int | None = None
    retry_after: int | None = None
    reason: str = ""


def identity_hash(identity: str) -> int:
    """A caller's 64-bit key in the table, the same in every process (Python's ``hash`` is not)."""
    value = int.from_bytes(hashlib.blake2b(identity.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
    return value or 1


class QuotaTable:
    """Counters of ``size`` callers in shared memory; see the module's docstring."""

    def __init__(self, fd: int | None, size: int, *, now: Callable[[], float] = time.monotonic) -> None:
        self.fd = fd
        self.size = size
        # CLOCK_MONOTONIC is one clock for the whole machine: every worker reads the same time.
        self.now = now
        self._map = mmap.mmap(-1 if fd is None else fd, size * ENTRY_SIZE)
        self.closed = False

    @classmethod
    def create(cls, size: int) -> QuotaTable:
        """A new, empty table (a memfd that :meth:`attach` maps in another process; private memory without memfd)."""
        if not hasattr(os, "memfd_create"):
            return cls(None, size)
        fd = os.memfd_create("roadkit-quotas", 0)  # not inheritable: passed to each worker explicitly
        os.ftruncate(fd, size * ENTRY_SIZE)
        return cls(fd, size)

    @classmethod
    def attach(cls, fd: int) -> QuotaTable:
        """A worker's view of the table its administrator created (the descriptor it inherited)."""
        return cls(fd, os.fstat(fd).st_size // ENTRY_SIZE)

    def _lock(self) -> None:
        if self.fd is not None:
            fcntl.lockf(self.fd, fcntl.LOCK_EX)

    def _unlock(self) -> None:
        if self.fd is not None:
            fcntl.lockf(self.fd, fcntl.LOCK_UN)

    def _find(self, key: int, now: float, *, create: bool) -> int | None:
        """The offset of ``key``'s entry; with ``create`` a new one (None when every probed entry is in use)."""
        start = key % self.size
        free: int | None = None
        oldest: tuple[float, int] | None = None
        for step in range(min(PROBES, self.size)):
            offset = ((start + step) % self.size) * ENTRY_SIZE
            found, _, _, in_progress, seen = _ENTRY.unpack_from(self._map, offset)
            if found == key:
                return offset
            if found == 0:
                if free is None:
                    free = offset
            elif in_progress <= 0 and (oldest is None or seen < oldest[0]):
                oldest = (seen, offset)
        if not create:
            return None
        if free is None and oldest is None:
            return None
        chosen = free if free is not None else oldest[1]  # type: ignore[index]
        _ENTRY.pack_into(self._map, chosen, key, now, 0, 0, now)
        return chosen

    def acquire(self, identity: str, quota: Quota) -> Decision:
        """Count one request of ``identity`` if ``quota`` allows it; a request allowed must be :meth:`release`\\ d."""
        key = identity_hash(identity)
        self._lock()
        try:
            now = self.now()
            offset = self._find(key, now, create=True)
            if offset is None:
                return Decision(False, retry_after=1, reason="busy")
            _, window_start, count, in_progress, _ = _ENTRY.unpack_from(self._map, offset)
            if now >= window_start + quota.window or now < window_start:
                window_start, count = now, 0
            reset = max(1, math.ceil(window_start + quota.window - now))
            limited = quota.requests is not None
            if limited and count >= quota.requests:  # type: ignore[operator]
                return Decision(False, 0, reset, reset, "rate")
            if quota.concurrent is not None and in_progress >= quota.concurrent:
                remaining = quota.requests - count if limited else None  # type: ignore[operator]
                return Decision(False, remaining, reset if limited else None, 1, "concurrency")
            _ENTRY.pack_into(self._map, offset, key, window_start, count + 1, in_progress + 1, now)
            return Decision(True, quota.requests - count - 1 if limited else None, reset if limited else None)  # type: ignore[operator]
        finally:
            self._unlock()

    def release(self, identity: str) -> None:
        """A request that :meth:`acquire` allowed has ended."""
        if self.closed:
            return
        key = identity_hash(identity)
        self._lock()
        try:
            offset = self._find(key, 0.0, create=False)
            if offset is not None:
                found, window_start, count, in_progress, seen = _ENTRY.unpack_from(self._map, offset)
                _ENTRY.pack_into(self._map, offset, found, window_start, count, max(0, in_progress - 1), seen)
        finally:
            self._unlock()

    def forget_in_progress(self) -> None:
        """Count no request in progress (a worker died: those it was serving will never be released)."""
        self._lock()
        try:
            for index in range(self.size):
                offset = index * ENTRY_SIZE
                if struct.unpack_from("<q", self._map, offset + 24)[0]:
                    struct.pack_into("<q", self._map, offset + 24, 0)
        finally:
            self._unlock()

    def close(self) -> None:
        """Unmap the table and close its descriptor (the workers keep their own)."""
        if self.closed:
            return
        self.closed = True
        self._map.close()
        if self.fd is not None:
            os.close(self.fd)
