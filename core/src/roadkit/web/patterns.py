"""Decimal ranges as regular expressions: a text pattern for every number in [lo, hi].

The OpenAPI documents use them where a parameter is text (a query string, a path segment) but its
value is a number with bounds: the simple API's points and costs, the native OSRM API's options.
"""

from __future__ import annotations

import math


def digit_ranges(lo: str, hi: str) -> list[list[str]]:
    """Token lists (one token per digit) matching every digit string from ``lo`` to ``hi`` (same length)."""
    if lo == hi:
        return [list(lo)]
    if len(lo) == 1:
        return [[f"[{lo}-{hi}]"]]
    rest = len(lo) - 1
    if lo[0] == hi[0]:
        return [[lo[0], *tail] for tail in digit_ranges(lo[1:], hi[1:])]
    if lo[1:] == "0" * rest and hi[1:] == "9" * rest:
        return [[f"[{lo[0]}-{hi[0]}]", *[r"\d"] * rest]]
    parts = [[lo[0], *tail] for tail in digit_ranges(lo[1:], "9" * rest)]
    if int(hi[0]) - int(lo[0]) > 1:
        middle = f"[{int(lo[0]) + 1}-{int(hi[0]) - 1}]" if int(hi[0]) - int(lo[0]) > 2 else str(int(lo[0]) + 1)
        parts.append([middle, *[r"\d"] * rest])
    parts += [[hi[0], *tail] for tail in digit_ranges("0" * rest, hi[1:])]
    return parts


def _segments(lo: int, hi: int) -> list[tuple[int, int]]:
    """[lo, hi] (both >= 0) cut where the count of digits changes."""
    found = []
    for digits in range(len(str(lo)), len(str(hi)) + 1):
        a, b = max(lo, 10 ** (digits - 1) if digits > 1 else 0), min(hi, 10**digits - 1)
        if a <= b:
            found.append((a, b))
    return found


def _level(low: int, high: int, k: int) -> list[str]:
    """Alternatives for the texts ``N`` (k = 0, then optional decimals) or ``N/10^k`` written with k
    decimals then any digits, for N in [low, high]: values in [low/10^k, (high+1)/10^k)."""
    found = []
    for a, b in _segments(low, high):
        width = max(len(str(b)), k + 1)
        for tokens in digit_ranges(str(a).zfill(width), str(b).zfill(width)):
            if k:
                found.append("".join(tokens[:-k]) + r"\." + "".join(tokens[-k:]) + r"\d*")
            else:
                found.append("".join(tokens) + r"(?:\.\d*)?")
    return found


def decimal_pattern(lo: float, hi: float, *, integer: bool = False) -> str | None:
    """A regex (unanchored) of decimal texts whose value is in [lo, hi]; None when the range is empty.

    Integers: exactly the range (leading zeros allowed). Decimals: the union, for k = 0 up to a
    few digits past what the range needs, of "k decimals then any digits" whose every reading stays
    inside: all but texts within 10^-K of the ends.
    """
    if hi < lo:
        return None
    if lo < 0 < hi:  # the larger side only (Monaco and most extents do not straddle 0)
        lo, hi = (0.0, hi) if hi >= -lo else (lo, 0.0)
    negative = hi <= 0 and lo < 0
    if negative:
        lo, hi = -hi, -lo
    alternatives: list[str] = []
    if integer:
        low, high = math.ceil(lo), math.floor(hi)
        if high < low:
            return None
        for a, b in _segments(low, high):
            alternatives += ["".join(t) for t in digit_ranges(str(a).zfill(len(str(b))), str(b))]
    else:
        span = hi - lo
        needed = max(0, math.ceil(math.log10(100 / span))) if span > 0 else 1
        for k in range(0, needed + 3):
            low, high = math.ceil(lo * 10**k), math.floor(hi * 10**k) - 1
            if low <= high:
                alternatives += _level(low, high, k)
    if not alternatives:
        return None
    return ("-" if negative else "0*") + "(?:" + "|".join(alternatives) + ")"


__all__ = ["decimal_pattern", "digit_ranges"]
