"""JSON from a client (a request body, or JSON inside a query parameter), read within fixed bounds.

Python's ``json`` reads ``NaN``, ``Infinity`` and ``1e999`` (as infinity), converts integers of thousands
of digits (``int()`` refuses past 4300 digits) and recurses once per nesting level (a RecursionError
past about a thousand). :func:`read_json` refuses all of these with a :class:`JsonInputError` that
names where the value is, before anything else sees it.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate, repeat
from typing import Any

#: The deepest nesting of arrays and objects accepted (a request needs a handful of levels).
MAX_JSON_DEPTH = 32
#: The longest number accepted, in characters (a double needs 17 significant digits).
MAX_NUMBER_LENGTH = 64

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')  # once escapes are gone: linear, no backtracking
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"\\')
# ``[`` and ``{`` become 2, ``]`` and ``}`` become 0: minus one, the change of depth.
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


class JsonInputError(ValueError):
    """JSON a request may not hold; ``path`` is where (``["nbPoints"]``), empty for the whole text."""

    def __init__(self, detail: str, path: tuple[str | int, ...] = ()) -> None:
        super().__init__(detail)
        self.detail = detail
        self.path = path

    @property
    def where(self) -> str:
        """The path as ``constraints[0].costRatio`` ('' for the whole text)."""
        text = ""
        for step in self.path:
            text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
        return text


class _Refused:
    """A number the text holds that is no usable number (its text, kept for the message)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text if len(text) <= 20 else f"{text[:12]}... ({len(text)} characters)"


def nesting_depth(data: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` outside strings (C-speed steps: no Python loop per character)."""
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return MAX_JSON_DEPTH  # cannot be deeper: no need to look
    # Escapes go first, on the whole text: "\n" must not pair its backslash with a quotation mark.
    structure = _STRING.sub(b"", _ESCAPE.sub(b"", data).translate(None, _NOT_STRUCTURE))
    steps = structure.translate(None, b'"').translate(_STEPS)
    return max(accumulate(map(int.__sub__, steps, repeat(1))), default=0)


def read_json(data: bytes | str) -> Any:
    """The value of a JSON text, or :class:`JsonInputError` (bad syntax, too deep, a number out of bounds)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if nesting_depth(raw) > MAX_JSON_DEPTH:
        raise JsonInputError(f"nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects")
    refused = False

    def refuse(text: str) -> _Refused:
        nonlocal refused
        refused = True
        return _Refused(text)

    def number(text: str) -> Any:
        if len(text) > MAX_NUMBER_LENGTH:
            return refuse(text)
        value = float(text)
        return value if math.isfinite(value) else refuse(text)

    def integer(text: str) -> Any:
        return refuse(text) if len(text) > MAX_NUMBER_LENGTH else int(text)

    try:
        value = json.loads(data, parse_constant=refuse, parse_float=number, parse_int=integer)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"expected JSON ({exc})") from None
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"expected JSON in UTF-8 ({exc.reason})") from None
    if refused:
        _raise_refused(value)
    return value


def _raise_refused(value: Any) -> None:
    """Raise for the first refused number in ``value`` (depth already bounded: an explicit stack anyway)."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, _Refused):
            raise JsonInputError(f"expected a finite number of at most {MAX_NUMBER_LENGTH} characters, got {item.text}", path)
        if isinstance(item, dict):
            stack.extend(((*path, k), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(item))))
