"""The workers' allocator in their environment: ``LD_PRELOAD`` for a worker, which allocator a process has,
and how a worker gives the memory it no longer uses back to the system.

The setting and its check are :mod:`roadkit.config.allocator`.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path

from roadkit.config.allocator import LIBRARIES

#: tcmalloc's cap on the free memory its threads keep for themselves (its default: 32 MiB). The
#: event loop, engine and executor threads of a worker each kept megabytes no release returns:
#: 2 MiB saves about 7 MiB a worker after isochrones (benchmarks.md, "Memory and start-up").
THREAD_CACHES = 2 << 20


def _is_allocator(item: str) -> bool:
    name = Path(item).name
    return any(name == library for libraries in LIBRARIES.values() for library in libraries)


def environment(library: Path | None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a worker with ``library`` preloaded (None: glibc's allocator).

    An allocator the administrator's own environment preloads (tcmalloc or jemalloc in an
    inherited ``LD_PRELOAD``) is left out, so the setting decides; other preloads are kept. tcmalloc's
    threads keep :data:`THREAD_CACHES` at most, unless the environment already says how much.
    """
    env = dict(os.environ if base is None else base)
    inherited = [item for item in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if item]
    kept = [item for item in inherited if not _is_allocator(item) and item != str(library)]
    preload = ([str(library)] if library is not None else []) + kept
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    else:
        env.pop("LD_PRELOAD", None)
    if library is not None and library.name in LIBRARIES["tcmalloc"]:
        env.setdefault("TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES", str(THREAD_CACHES))
    return env


def loaded(pid: int | str = "self", library: Path | None = None) -> str:
    """The allocator a running process uses, read from its memory map.

    tcmalloc, jemalloc, the file name of ``library`` (a path setting) when it is mapped, else
    system; unknown when the map cannot be read.
    """
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return "unknown"
    for name, libraries in LIBRARIES.items():
        if any(f"/{file}" in maps for file in libraries):
            return name
    if library is not None and str(library.resolve()) in maps:
        return library.name
    return "system"


@functools.cache
def own() -> str:
    """The allocator of this process (:func:`loaded`, read once: a running process keeps its allocator)."""
    return loaded()


#: A second of the process's CPU under this: idle. Work since the last release over ``WORK_CPU``: release.
IDLE_CPU = 0.01
WORK_CPU = 0.1


def releaser(name: str | None = None) -> Callable[[], object] | None:
    """The call that gives the free memory of the allocator ``name`` (default: this process's) back to the
    system, or None (an allocator given by path)."""
    name = name or own()
    process = ctypes.CDLL(None)
    try:
        if name == "tcmalloc":
            release: Callable[[], object] = process.MallocExtension_ReleaseFreeMemory
            return release
        if name == "jemalloc":
            mallctl = process.mallctl
            return lambda: mallctl(b"arena.4096.purge", None, None, None, 0)  # 4096: every arena (MALLCTL_ARENAS_ALL)
        if name == "system":
            trim = process.malloc_trim
            return lambda: trim(0)
    except AttributeError:  # a build without that call
        return None
    return None


async def give_back_when_idle(release: Callable[[], object], period: float = 1.0, cpu: Callable[[], float] = time.process_time) -> None:
    """Give the allocator's free memory back once the process is idle after some work (forever).

    Allocators keep the memory a request freed for the next one: after an isochrone (Valhalla's grid,
    GEOS's hull of thousands of points) a worker keeps 10 to 15 MiB it does not use. Every ``period``
    the process's CPU time tells whether it worked; the first idle second after at least ``WORK_CPU``
    of work gives the memory back. Nothing runs on a request's path, and a busy worker keeps its
    memory (the next request would take it again).
    """
    worked, last = 0.0, cpu()
    while True:
        await asyncio.sleep(period)
        now = cpu()
        spent, last = now - last, now
        if spent > IDLE_CPU * period:
            worked += spent
        elif worked >= WORK_CPU:
            release()
            worked, last = 0.0, cpu()
