"""Configuration documents: TOML, or JSON when the file starts with ``{`` (Road2 files); merged overrides."""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class DocumentError(ValueError):
    """A document that can't be read; ``problems`` name the file (``path: what is wrong``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


#: The largest document read: a configuration file is kilobytes. A path the admin API was given may
#: name anything (a projections folder of /proc holds kcore, terabytes): at most this much is read.
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024


def read_document(path: Path) -> dict[str, Any]:
    """The document in ``path`` as a dict; every failure is a DocumentError naming the file."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_DOCUMENT_BYTES + 1)
        if len(raw) > MAX_DOCUMENT_BYTES:
            raise DocumentError([f"{path}: larger than {MAX_DOCUMENT_BYTES} bytes: not a configuration document"])
        text = raw.decode("utf-8-sig")
    except FileNotFoundError:
        raise DocumentError([f"{path}: file not found"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentError([f"{path}: can't read the file ({exc})"]) from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DocumentError([f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"]) from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise DocumentError([f"{path}: invalid TOML: {exc}"]) from None
    if not isinstance(data, dict):
        raise DocumentError([f"{path}: expected a table (object) at the top level"])
    return data


def deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``overrides`` into a copy of ``base``; nested tables merge, other values replace."""
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
