"""Reading configuration documents: TOML, or JSON when the file starts with ``{`` (Road2 files)."""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roadkit.errors import ConfigurationError


def read_document(path: Path) -> dict[str, Any]:
    """The document in ``path`` as a dict; every failure is a ConfigurationError naming the file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigurationError([f"{path}: file not found"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError([f"{path}: can't read the file ({exc})"]) from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigurationError([f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"]) from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError([f"{path}: invalid TOML: {exc}"]) from None
    if not isinstance(data, dict):
        raise ConfigurationError([f"{path}: expected a table (object) at the top level"])
    return data


def resolve(base: Path, value: str | Path) -> Path:
    """A path from a configuration file, relative to the folder of that file."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base.parent / path).resolve()


def deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``overrides`` into a copy of ``base``; nested tables merge, other values replace."""
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
