"""Data versions of a source: several builds of its data side by side, the source file naming the one in use.

A source kind lists the keys of its file that locate its data (``Source.versioned_keys``): a path
(an OSRM dataset, Valhalla's tiles) or a name (a pgRouting schema). A ``.source`` file with
``version = "V"`` reads those keys for version V: a ``{version}`` written in the value is replaced by
V; a value without it gets V by a fixed rule, so that a file written before versions existed needs
no change: the path ``data/car/monaco.osrm`` becomes ``data/car/V/monaco.osrm`` and the name
``monaco`` becomes ``monaco_V`` (``.`` and ``-`` written ``_``, lower case: a plain SQL name).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from roadkit.config.models import DATA_VERSION_EXPECTED, DATA_VERSION_REGEX
from roadkit.errors import ConfigurationError

PLACEHOLDER = "{version}"

VersionedKind = Literal["path", "name"]

_VERSION = re.compile(DATA_VERSION_REGEX)


def version_problem(value: object) -> str | None:
    """Why ``value`` is not a data version (None when it is one)."""
    if isinstance(value, str) and _VERSION.fullmatch(value):
        return None
    shown = value if not isinstance(value, str) or len(value) <= 64 else value[:64] + "..."
    return f"{DATA_VERSION_EXPECTED}, got {shown!r}"


def _versioned(value: str, version: str, kind: VersionedKind) -> str:
    if kind == "name":
        suffix = re.sub(r"[.-]", "_", version).lower()
        return value.replace(PLACEHOLDER, suffix) if PLACEHOLDER in value else f"{value}_{suffix}"
    if PLACEHOLDER in value:
        return value.replace(PLACEHOLDER, version)
    return posixpath.join(posixpath.dirname(value), version, posixpath.basename(value.rstrip("/")))


def apply_version(options: Mapping[str, Any], version: str | None, keys: Mapping[str, VersionedKind], where: Path) -> dict[str, Any]:
    """The kind-specific ``options`` of a source file read for ``version`` (a copy; unchanged without a version).

    ``keys`` are dotted (``storage.file``). A ``{version}`` in a file that gives no ``version`` is a
    configuration error naming the key.
    """
    result = dict(options)
    for dotted, kind in keys.items():
        *parents, last = dotted.split(".")
        table: dict[str, Any] = result
        for part in parents:
            inner = table.get(part)
            if not isinstance(inner, dict):
                break
            table[part] = table = dict(inner)
        else:
            value = table.get(last)
            if not isinstance(value, str):
                continue
            if version is None:
                if PLACEHOLDER in value:
                    raise ConfigurationError([f"{where}: {dotted}: {PLACEHOLDER} needs a version key in the file, got none"])
                continue
            table[last] = _versioned(value, version, kind)
    return result


def new_version(options: Mapping[str, Any], inputs: list[Path], *, now: datetime | None = None) -> str:
    """A version for a build: its UTC date and a hash of what it is built from (the options and input files)."""
    digest = hashlib.sha256(repr(sorted(options.items(), key=lambda item: item[0])).encode())
    for path in inputs:
        with path.open("rb") as data:
            for block in iter(lambda: data.read(1 << 20), b""):
                digest.update(block)
    return f"{(now or datetime.now(UTC)):%Y%m%d}-{digest.hexdigest()[:10]}"
