"""roadkit: a road-routing service framework with pluggable engines."""

from importlib.metadata import PackageNotFoundError, version

import pluggy

hookimpl = pluggy.HookimplMarker("roadkit")

try:
    __version__ = version("roadkit")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = ["__version__", "hookimpl"]
