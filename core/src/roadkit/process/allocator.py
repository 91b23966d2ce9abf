"""The workers' allocator in their environment: ``LD_PRELOAD`` for a worker, and which allocator a process has.

The setting and its check are :mod:`roadkit.config.allocator`.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from roadkit.config.allocator import LIBRARIES


def _is_allocator(item: str) -> bool:
    name = Path(item).name
    return any(name == library for libraries in LIBRARIES.values() for library in libraries)


def environment(library: Path | None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a worker with ``library`` preloaded (None: glibc's allocator).

    An allocator the administrator's own environment preloads (tcmalloc or jemalloc in an
    inherited ``LD_PRELOAD``) is left out, so the setting decides; other preloads are kept.
    """
    env = dict(os.environ if base is None else base)
    inherited = [item for item in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if item]
    kept = [item for item in inherited if not _is_allocator(item) and item != str(library)]
    preload = ([str(library)] if library is not None else []) + kept
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    else:
        env.pop("LD_PRELOAD", None)
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
