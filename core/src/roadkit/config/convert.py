"""A strict cattrs converter whose errors read ``file: key.path: expected ..., got ...``."""

from __future__ import annotations

import collections.abc
import typing
from pathlib import Path
from typing import Any

import cattrs
from cattrs import transform_error
from cattrs.errors import ForbiddenExtraKeysError

from roadkit.config.models import Workers, max_workers
from roadkit.errors import ConfigurationError

_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean (true or false)"}


def _strict(kind: type) -> Any:
    def hook(value: Any, _: type) -> Any:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if kind is int and isinstance(value, float) and value.is_integer():
            return int(value)  # 8080.0 is an integer for JSON (and JSON Schema), as the admin API receives it
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"expected {_NAMES[kind]}")
        return value

    return hook


_SEQUENCES: tuple[Any, ...] = (tuple, list, set, frozenset, collections.abc.Sequence, collections.abc.Set)


def _strict_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    for kind in (str, int, float, bool):
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook(Path, _path)
    converter.register_structure_hook(Workers, _workers)
    return converter


def _path(value: Any, _: Any) -> Path:
    text = _strict(str)(value, str)
    if not text or "\x00" in text:
        # The operating system refuses NUL in a path (ValueError, not OSError, at the first use), and
        # an empty path would silently mean the file's own folder.
        raise TypeError("expected a non-empty path without NUL characters")
    path = Path(text)
    try:
        path.expanduser()  # what resolve() does later: "~nobody/x" names the home of an unknown user
    except RuntimeError:
        raise TypeError(f"expected a path ('~' followed by a known user name), got {text!r}") from None
    return path


def _workers(value: Any, _: Any) -> int | str:
    most = max_workers()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most):
        return value  # type: ignore[no-any-return]
    raise TypeError(f'expected a positive integer or "auto", at most {most} (4 per usable core)')


def make_converter() -> cattrs.Converter:
    """A converter that never coerces (``3`` is not a string, ``"car"`` is not a list) and refuses unknown keys."""
    converter = _strict_converter()
    # cattrs would iterate a string into its characters (and a table into its keys): a list is required.
    elements = _strict_converter()

    def sequence_hook(cls: Any) -> Any:
        structure_items = elements.get_structure_hook(cls)

        def hook(value: Any, _: Any) -> Any:
            if isinstance(value, str | bytes | dict):
                raise TypeError("expected a list")
            return structure_items(value, cls)

        return hook

    converter.register_structure_hook_factory(lambda cls: typing.get_origin(cls) in _SEQUENCES, sequence_hook)
    return converter


CONVERTER = make_converter()


def _lookup(data: Any, path: str) -> tuple[bool, Any]:
    value = data
    for part in path.replace("]", "").replace("[", ".").split(".")[1:]:
        if part == "":
            continue
        try:
            value = value[int(part)] if isinstance(value, list) else value[part]
        except (KeyError, IndexError, ValueError, TypeError):
            return False, None
    return True, value


def _describe(exc: BaseException, _type: Any) -> str:
    if isinstance(exc, KeyError):
        return "required key is missing"
    if isinstance(exc, ForbiddenExtraKeysError):
        return f"unknown key(s) {', '.join(sorted(exc.extra_fields))}"
    if isinstance(exc, TypeError | ValueError) and str(exc).startswith("expected"):
        return str(exc)
    if typing.get_origin(_type) is typing.Literal:
        return f"expected one of {', '.join(repr(choice) for choice in typing.get_args(_type))}"
    if _type is not None and getattr(_type, "__name__", None):
        return f"expected {_type.__name__} ({exc})"
    return str(exc)


def structure[T](data: Any, cls: type[T], where: Path | str, prefix: str = "") -> T:
    """``data`` structured into ``cls``; every problem at once in one ConfigurationError."""
    try:
        return CONVERTER.structure(data, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
        if not isinstance(exc, cattrs.BaseValidationError):
            raise ConfigurationError([f"{where}: {prefix or '(top level)'}: {exc}"]) from None
        problems = []
        for line in transform_error(exc, path="$", format_exception=_describe):
            message, _, path = line.rpartition(" @ ")
            found, value = _lookup(data, path)
            key = path[2:] if path.startswith("$.") else ""
            key = f"{prefix}.{key}" if prefix and key else (prefix or key or "(top level)")
            got = f", got {value!r}" if found and "expected" in message else ""
            problems.append(f"{where}: {key}: {message}{got}")
        raise ConfigurationError(problems) from None
