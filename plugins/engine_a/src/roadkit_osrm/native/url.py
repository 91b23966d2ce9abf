"""The path part osrm-routed reads: ``/{service}/v{version}/{profile}/{query}``, decoded as it decodes it."""

from __future__ import annotations

import attrs

from roadkit_osrm.native.grammar import Expectation, chars, expect, lit, unsigned

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#: characters of a service or profile name (URL-unreserved characters)
NAME_CHARS = _ALNUM + "-._~"
_QUERY_CHARS = frozenset(_ALNUM + "_-[]{}@?|\\~`^" + "=,;:&().")
_HEX = "0123456789abcdefABCDEF"


class UrlError(Exception):
    """osrm-routed's ``InvalidUrl``: where parsing stopped in the decoded request string."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@attrs.frozen
class ParsedUrl:
    """The parts of an OSRM URL; ``prefix_length`` is where the query starts (for error positions)."""

    service: str
    version: int
    profile: str
    query: str
    prefix_length: int


def uri_decode(raw: bytes) -> str:
    """osrm-routed's ``URIDecode``: ``%XX`` decoded, the rest kept; one character per byte."""
    out = bytearray()
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == 0x25 and i + 2 < n + 0 and chr(raw[i + 1]) in _HEX and chr(raw[i + 2]) in _HEX:
            out.append(int(raw[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(c)
            i += 1
    return out.decode("latin-1")


def _query(text: str, start: int) -> tuple[int, str]:
    """``+all_chars`` where a ``%`` must be followed by two hex digits (decoded again, as osrm-routed does)."""
    out: list[str] = []
    i = start
    while i < len(text):
        c = text[i]
        if c == "%":
            if i + 2 < len(text) + 0 and text[i + 1] in _HEX and text[i + 2] in _HEX:
                out.append(chr(int(text[i + 1 : i + 3], 16)))
                i += 3
                continue
            raise Expectation(i + 1)
        if c not in _QUERY_CHARS:
            break
        out.append(c)
        i += 1
    return i, "".join(out)


_NAME = chars(NAME_CHARS)
_HEAD = expect(lit("/"), _NAME, lit("/"), lit("v"), unsigned(32), lit("/"), _NAME)


def _malformed(text: str, pos: int) -> UrlError:
    begin = 0 if pos < 3 else pos - 3
    context = text[begin : min(pos + 3, len(text))]
    return UrlError(f'URL string malformed close to position {pos}: "{context}"')


def parse_post_url(text: str) -> ParsedUrl:
    """The parts of a POST's URL, ``/{service}/v{version}/{profile}[/]`` (the options are in the body)."""
    pos = 0
    try:
        r = _HEAD(text, 0)
        if r is not None:
            end, values = r
            if text.startswith("/", end):
                end += 1
            if end == len(text):
                return ParsedUrl(values[1], values[4], values[6], "", end)
            pos = end
    except Expectation as exc:
        pos = exc.pos
    raise _malformed(text, pos)


def parse_url(text: str) -> ParsedUrl:
    """The parts of ``text`` (already URI-decoded), or :class:`UrlError` with osrm-routed's message."""
    head = expect(_HEAD, lit("/"))
    pos = 0
    try:
        r = head(text, 0)
        if r is not None:
            end, values = r
            pos, query = _query(text, end)
            if pos > end and pos == len(text):
                names = values[0]
                return ParsedUrl(names[1], names[4], names[6], query, end)
            if pos == end:
                raise Expectation(end)
    except Expectation as exc:
        pos = exc.pos
    raise _malformed(text, pos)
