"""A JSON reader that fails as RapidJSON (osrm-routed's JSON parser) fails, with its messages.

osrm-routed answers a malformed POST body with ``invalid JSON: <RapidJSON's message>``; Python's
``json`` words its errors differently. Values come back as Python values; numbers written without
fraction or exponent are ``int`` (RapidJSON's integer kinds), others ``float``. An object keeps the
first of repeated members, as RapidJSON's ``FindMember`` finds it.
"""

from __future__ import annotations

from typing import Any

from roadkit.contract.apis import MAX_JSON_DEPTH, MAX_NUMBER_LENGTH, nesting_depth

_WHITESPACE = " \t\n\r"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = "0123456789abcdefABCDEF"


class JsonSyntaxError(Exception):
    """RapidJSON's parse error message (``GetParseError_En``)."""


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i


def _digits(text: str, i: int) -> int:
    while i < len(text) and "0" <= text[i] <= "9":
        i += 1
    return i


def _number(text: str, i: int) -> tuple[Any, int]:
    start = i
    if text.startswith("-", i):
        i += 1
    if i < len(text) and text[i] == "0":
        i += 1
    elif i < len(text) and "1" <= text[i] <= "9":
        i = _digits(text, i)
    else:
        raise JsonSyntaxError("Invalid value.")
    integer = True
    if text.startswith(".", i):
        j = _digits(text, i + 1)
        if j == i + 1:
            raise JsonSyntaxError("Miss fraction part in number.")
        i, integer = j, False
    if i < len(text) and text[i] in "eE":
        j = i + 1
        if j < len(text) and text[j] in "+-":
            j += 1
        k = _digits(text, j)
        if k == j:
            raise JsonSyntaxError("Miss exponent in number.")
        i, integer = k, False
    literal = text[start:i]
    if len(literal) > MAX_NUMBER_LENGTH:  # before int(), which refuses thousands of digits
        raise JsonSyntaxError(f"Number longer than {MAX_NUMBER_LENGTH} characters.")
    if integer and -(1 << 63) <= int(literal) < (1 << 64):
        return int(literal), i
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise JsonSyntaxError("Number too big to be stored in double.")
    return value, i


def _string(text: str, i: int) -> tuple[str, int]:
    # text[i] is the opening quotation mark
    i += 1
    out: list[str] = []
    while True:
        if i >= len(text):
            raise JsonSyntaxError("Missing a closing quotation mark in string.")
        c = text[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            e = text[i + 1] if i + 1 < len(text) else ""
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                i += 2
            elif e == "u":
                code, i = _unicode(text, i + 2)
                out.append(code)
            else:
                raise JsonSyntaxError("Invalid escape character in string.")
        elif ord(c) < 0x20:
            raise JsonSyntaxError("Missing a closing quotation mark in string." if c == "\0" else "Invalid encoding in string.")
        else:
            out.append(c)
            i += 1


def _hex4(text: str, i: int) -> int:
    digits = text[i : i + 4]
    if len(digits) < 4 or any(d not in _HEX for d in digits):
        raise JsonSyntaxError("Incorrect hex digit after \\u escape in string.")
    return int(digits, 16)


def _unicode(text: str, i: int) -> tuple[str, int]:
    code = _hex4(text, i)
    i += 4
    if 0xD800 <= code <= 0xDBFF:
        if not text.startswith("\\u", i):
            raise JsonSyntaxError("The surrogate pair in string is invalid.")
        low = _hex4(text, i + 2)
        if not 0xDC00 <= low <= 0xDFFF:
            raise JsonSyntaxError("The surrogate pair in string is invalid.")
        return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), i + 6
    return chr(code), i


def _value(text: str, i: int) -> tuple[Any, int]:
    c = text[i] if i < len(text) else ""
    if c == "{":
        return _object(text, i)
    if c == "[":
        return _array(text, i)
    if c == '"':
        return _string(text, i)
    for word, value in (("true", True), ("false", False), ("null", None)):
        if c == word[0]:
            if not text.startswith(word, i):
                raise JsonSyntaxError("Invalid value.")
            return value, i + len(word)
    return _number(text, i)


def _object(text: str, i: int) -> tuple[dict[str, Any], int]:
    members: dict[str, Any] = {}
    i = _skip(text, i + 1)
    if text.startswith("}", i):
        return members, i + 1
    while True:
        if not text.startswith('"', i):
            raise JsonSyntaxError("Missing a name for object member.")
        name, i = _string(text, i)
        i = _skip(text, i)
        if not text.startswith(":", i):
            raise JsonSyntaxError("Missing a colon after a name of object member.")
        value, i = _value(text, _skip(text, i + 1))
        members.setdefault(name, value)
        i = _skip(text, i)
        if text.startswith(",", i):
            i = _skip(text, i + 1)
        elif text.startswith("}", i):
            return members, i + 1
        else:
            raise JsonSyntaxError("Missing a comma or '}' after an object member.")


def _array(text: str, i: int) -> tuple[list[Any], int]:
    items: list[Any] = []
    i = _skip(text, i + 1)
    if text.startswith("]", i):
        return items, i + 1
    while True:
        value, i = _value(text, i)
        items.append(value)
        i = _skip(text, i)
        if text.startswith(",", i):
            i = _skip(text, i + 1)
        elif text.startswith("]", i):
            return items, i + 1
        else:
            raise JsonSyntaxError("Missing a comma or ']' after an array element.")


def read_json(body: bytes) -> Any:
    """The value of a JSON document, or :class:`JsonSyntaxError` with RapidJSON's message."""
    if nesting_depth(body) > MAX_JSON_DEPTH:  # the reader recurses once per level
        raise JsonSyntaxError(f"Nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects.")
    text = body.decode("utf-8", errors="surrogateescape")
    i = _skip(text, 0)
    if i == len(text):
        raise JsonSyntaxError("The document is empty.")
    value, i = _value(text, i)
    if _skip(text, i) != len(text):
        raise JsonSyntaxError("The document root must not be followed by other values.")
    return value
