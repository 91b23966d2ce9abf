"""The memory allocator of a service's worker processes (``allocator`` of a ``[[services]]`` entry).

The engines roadkit runs in process (Valhalla's Actors, OSRM's bindings) allocate and free memory
at every request; glibc's allocator spends a measurable share of their time doing so. A worker
started with tcmalloc (Debian's ``libtcmalloc-minimal4``) or jemalloc (``libjemalloc2``) preloaded
spends less CPU per engine call: Valhalla's isochrone call, for instance, 5.4 ms with glibc and
5.2 ms with either. The administrator starts its child processes with the
library in ``LD_PRELOAD``; a same-process service runs in the administrator's process, which is
already started, so it keeps the allocator it has.

Settings: ``"auto"`` (the default: tcmalloc when installed, else jemalloc when installed, else
glibc's), ``"system"`` (glibc's), ``"tcmalloc"`` or ``"jemalloc"`` (that one; a configuration error
when it is not installed), or the path of a shared library that replaces ``malloc``.
"""

from __future__ import annotations

import re
import sysconfig
from collections.abc import Sequence
from pathlib import Path

#: The libraries of each named allocator, most preferred first.
LIBRARIES: dict[str, tuple[str, ...]] = {
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4"),
    "jemalloc": ("libjemalloc.so.2",),
}
#: The Debian package of each named allocator (named in errors).
PACKAGES = {"tcmalloc": "libtcmalloc-minimal4", "jemalloc": "libjemalloc2"}
#: What ``"auto"`` tries, in order (tcmalloc: the least CPU per engine call in our benchmarks).
AUTO_ORDER = ("tcmalloc", "jemalloc")
#: A library path LD_PRELOAD can hold: glibc's loader splits it at a space or ':', and no path holds
#: NUL (the admin API's schema states the same pattern).
PATH_REGEX = r"^/[^: \u0000]+$"
EXPECTED = 'expected "auto", "system", "tcmalloc", "jemalloc" or the absolute path of a shared library'


def library_folders() -> list[Path]:
    """Where the dynamic loader finds libraries on this machine (its default folders)."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    folders = ["/usr/local/lib"]
    if multiarch:
        folders += [f"/usr/lib/{multiarch}", f"/lib/{multiarch}"]
    folders += ["/usr/lib64", "/lib64", "/usr/lib", "/lib"]
    return [Path(folder) for folder in folders]


def find(name: str, folders: Sequence[Path] | None = None) -> Path | None:
    """The installed library of the named allocator, or None."""
    for folder in library_folders() if folders is None else folders:
        for library in LIBRARIES[name]:
            if (folder / library).is_file():
                return folder / library
    return None


def well_formed(setting: str) -> bool:
    """Whether ``setting`` is one of the names or an absolute path LD_PRELOAD can hold (whether it is installed aside)."""
    return setting in ("auto", "system", *LIBRARIES) or re.fullmatch(PATH_REGEX, setting) is not None


def problem(setting: str, folders: Sequence[Path] | None = None) -> str | None:
    """What is wrong with an ``allocator`` setting on this machine (the message's tail), or None."""
    if setting in ("auto", "system"):
        return None
    if setting in LIBRARIES:
        if find(setting, folders) is None:
            return (
                f"{setting} is not installed (none of {', '.join(LIBRARIES[setting])} in the loader's folders): "
                f'install Debian\'s {PACKAGES[setting]}, or set "auto" or "system"'
            )
        return None
    path = Path(setting)
    if not path.is_absolute():
        return f"{EXPECTED}, got {setting!r}"
    if not path.is_file():
        return f"{EXPECTED}, got {setting!r} (not found)"
    if not well_formed(setting):
        return f"{EXPECTED}, got {setting!r} (LD_PRELOAD cannot hold a path with spaces or ':')"
    try:
        with path.open("rb") as library:
            elf = library.read(4) == b"\x7fELF"
    except OSError as exc:
        return f"{EXPECTED}, got {setting!r} ({exc.strerror or exc})"
    if not elf:
        return f"{EXPECTED}, got {setting!r} (not a shared library: the loader would ignore it)"
    return None


def preload(setting: str, folders: Sequence[Path] | None = None) -> Path | None:
    """The library a worker preloads for ``setting``; None for glibc's allocator."""
    if setting == "system":
        return None
    if setting == "auto":
        return next((library for name in AUTO_ORDER if (library := find(name, folders)) is not None), None)
    if setting in LIBRARIES:
        return find(setting, folders)
    return Path(setting)
