"""osrm-routed's URL grammar, rebuilt so that every answer (errors and their positions included) matches.

osrm-routed parses its URLs with Boost.Spirit Qi. The combinators below keep Qi's semantics, because
the error messages name the position where parsing stopped:

* ``seq(a, b)`` is Qi's ``a >> b``: any part failing makes the whole fail softly (backtrack);
* ``expect(a, b, c)`` is Qi's ``a > b > c``: ``a`` may fail softly, a later part failing raises
  :class:`Expectation` at the position where that part was tried (alternatives do not catch it);
* ``alt`` is ``|`` (first that matches), ``opt`` is unary ``-``, ``lst(a, sep)`` is ``a % sep``;
* semantic actions run as soon as their parser matches and are never undone, as in Qi.

A parser is ``parse(text, pos) -> (end, value) | None``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from roadkit.contract.apis import MAX_NUMBER_LENGTH

Result = tuple[int, Any] | None
Parser = Callable[[str, int], Result]


class Expectation(Exception):
    """A Qi expectation failure: parsing stopped for good at ``pos``."""

    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.pos = pos


def lit(text: str) -> Parser:
    """A literal string (no attribute)."""
    n = len(text)

    def parse(s: str, i: int) -> Result:
        return (i + n, None) if s.startswith(text, i) else None

    return parse


def chars(allowed: str, *, min_count: int = 1, max_count: int | None = None) -> Parser:
    """``+char_(set)`` (or ``repeat(n)[char_(set)]`` with min = max = n): the matched string."""
    table = frozenset(allowed)

    def parse(s: str, i: int) -> Result:
        j = i
        end = len(s) if max_count is None else min(len(s), i + max_count)
        while j < end and s[j] in table:
            j += 1
        return (j, s[i:j]) if j - i >= min_count else None

    return parse


def symbols(table: dict[str, Any]) -> Parser:
    """``qi::symbols``: the longest key that prefixes the input, its value as attribute."""
    keys = sorted(table, key=len, reverse=True)

    def parse(s: str, i: int) -> Result:
        for key in keys:
            if s.startswith(key, i):
                return i + len(key), table[key]
        return None

    return parse


def seq(*parts: Parser) -> Parser:
    """``a >> b >> ...``: the list of the parts' attributes."""

    def parse(s: str, i: int) -> Result:
        values = []
        for part in parts:
            r = part(s, i)
            if r is None:
                return None
            i, value = r
            values.append(value)
        return i, values

    return parse


def expect(first: Parser, *rest: Parser) -> Parser:
    """``a > b > ...``: the list of the parts' attributes; a failing later part raises."""

    def parse(s: str, i: int) -> Result:
        r = first(s, i)
        if r is None:
            return None
        i, value = r
        values = [value]
        for part in rest:
            r = part(s, i)
            if r is None:
                raise Expectation(i)
            i, value = r
            values.append(value)
        return i, values

    return parse


def alt(*options: Parser) -> Parser:
    """``a | b | ...``: the first option that matches."""

    def parse(s: str, i: int) -> Result:
        for option in options:
            r = option(s, i)
            if r is not None:
                return r
        return None

    return parse


def opt(part: Parser) -> Parser:
    """``-a``: always matches; the attribute is None when ``a`` did not match."""

    def parse(s: str, i: int) -> Result:
        r = part(s, i)
        return (i, None) if r is None else r

    return parse


def lst(part: Parser, sep: Parser) -> Parser:
    """``a % sep``: one or more ``a``; a separator not followed by ``a`` is left unconsumed."""

    def parse(s: str, i: int) -> Result:
        r = part(s, i)
        if r is None:
            return None
        i, value = r
        values = [value]
        while True:
            rs = sep(s, i)
            if rs is None:
                return i, values
            r = part(s, rs[0])
            if r is None:
                return i, values
            i, value = r
            values.append(value)

    return parse


def act(part: Parser, action: Callable[[Any], None]) -> Parser:
    """``a[action]``: run ``action(attribute)`` when ``a`` matches."""

    def parse(s: str, i: int) -> Result:
        r = part(s, i)
        if r is not None:
            action(r[1])
        return r

    return parse


def _digits(s: str, i: int) -> int:
    j = i
    while j < len(s) and "0" <= s[j] <= "9":
        j += 1
    return j


def _bounded_int(digits: str, most: int) -> int | None:
    """The value of ``digits``, or None past ``most`` significant digits (an overflow: no ``int()`` of
    thousands of digits, which Python refuses past 4300 and takes quadratic time to reach)."""
    significant = digits.lstrip("0")
    return None if len(significant) > most else int(significant or "0")


def unsigned(bits: int) -> Parser:
    """``qi::uint_`` (32 bits) or ``qi::ulong_long`` (64): digits only, an overflow fails."""
    limit = (1 << bits) - 1
    most = len(str(limit))

    def parse(s: str, i: int) -> Result:
        j = _digits(s, i)
        if j == i:
            return None
        value = _bounded_int(s[i:j], most)
        return None if value is None or value > limit else (j, value)

    return parse


def signed_short(s: str, i: int) -> Result:
    """``qi::short_``: an optional sign and digits within [-32768, 32767]."""
    j = i + 1 if i < len(s) and s[i] in "+-" else i
    k = _digits(s, j)
    if k == j:
        return None
    magnitude = _bounded_int(s[j:k], 5)
    if magnitude is None:
        return None
    value = -magnitude if s[i] == "-" else magnitude
    return None if not -32768 <= value <= 32767 else (k, value)


def boolean(s: str, i: int) -> Result:
    """``qi::bool_``: ``true`` or ``false`` (case-sensitive)."""
    if s.startswith("true", i):
        return i + 4, True
    if s.startswith("false", i):
        return i + 5, False
    return None


def real(s: str, i: int) -> Result:
    """osrm-routed's ``double_``: sign, digits, dot, digits; no exponent, NaN or infinity.

    A number longer than ``MAX_NUMBER_LENGTH`` characters, or beyond a double's range, fails.

    A dot directly followed by ``json`` is not taken, so ``43.json`` leaves ``.json`` to the format.
    """
    j = i + 1 if i < len(s) and s[i] in "+-" else i
    k = _digits(s, j)
    has_int = k > j
    if k < len(s) and s[k] == "." and not (k + 4 < len(s) and s[k + 1 : k + 5] == "json"):
        f = _digits(s, k + 1)
        if not has_int and f == k + 1:
            return None
        k = f
    elif not has_int:
        return None
    text = s[i:k]
    if len(text) > MAX_NUMBER_LENGTH:
        return None  # a number no client writes: refused as an overflow is, before float() reads it
    if text.endswith("."):
        text += "0"
    if text.lstrip("+-").startswith("."):
        text = text.replace(".", "0.", 1)
    value = float(text)
    return (k, value) if math.isfinite(value) else None


UNLIMITED = math.inf
