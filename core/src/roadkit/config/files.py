"""Reading configuration documents: TOML, or JSON when the file starts with ``{`` (Road2 files).

The reading itself is ``roadkit_support.documents`` (shared with the apps that are no routing
service); here its failures are the core's ConfigurationError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roadkit.errors import ConfigurationError
from roadkit_support.documents import DocumentError, deep_merge
from roadkit_support.documents import read_document as _read_document

__all__ = ["deep_merge", "read_document", "resolve"]


def read_document(path: Path) -> dict[str, Any]:
    """The document in ``path`` as a dict; every failure is a ConfigurationError naming the file."""
    try:
        return _read_document(path)
    except DocumentError as exc:
        raise ConfigurationError(exc.problems) from None


def resolve(base: Path, value: str | Path) -> Path:
    """A path from a configuration file, relative to the folder of that file."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base.parent / path).resolve()
