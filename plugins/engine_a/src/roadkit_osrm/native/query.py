"""The query part of an OSRM URL (coordinates, format and options), parsed as osrm-routed parses it.

``parse_query(service, text)`` returns the options as a dict whose keys are osrm-bindings' parameter
names, or raises :class:`QueryError` with the position osrm-routed names in its ``InvalidQuery``.
"""

from __future__ import annotations

from typing import Any

from roadkit_osrm.native.grammar import (
    UNLIMITED,
    Expectation,
    Parser,
    Result,
    act,
    alt,
    boolean,
    chars,
    expect,
    lit,
    lst,
    opt,
    real,
    signed_short,
    symbols,
    unsigned,
)

SERVICES = ("route", "nearest", "table", "trip", "match", "tile")
#: characters of an encoded polyline inside ``polyline(...)`` (osrm-routed's set: no dot)
POLYLINE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-[]{}@?|\\%~`^"
BASE64_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_="
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
#: length of one base64 segment hint in this OSRM version (a hint holds one or more)
HINT_SIZE = 112


def _in_fixed_range(value: float) -> bool:
    scaled = value * 1_000_000
    return -2147483648.5 < scaled < 2147483647.5


def _location(pair: Parser) -> Parser:
    """``lon,lat``; a value beyond OSRM's fixed-point range makes the location fail (softly), as in osrm-routed."""

    def parse(s: str, i: int) -> Result:
        r = pair(s, i)
        if r is None or not (_in_fixed_range(r[1][0]) and _in_fixed_range(r[1][2])):
            return None
        return r[0], (r[1][0], r[1][2])

    return parse


class QueryError(Exception):
    """The query does not parse; ``pos`` is where osrm-routed stops (relative to the query)."""

    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.pos = pos


def _polyline_integer(text: str, i: int) -> tuple[int, int]:
    # OSRM's varint decoding on 32-bit unsigned arithmetic, characters below '?' included.
    result = 0
    value = 32
    shift = 0
    while (value & 32) and shift < 31 and i < len(text):
        value = (ord(text[i]) - 63) & 0xFFFFFFFF
        result |= ((value & 31) << shift) & 0xFFFFFFFF
        i += 1
        shift += 5
    result = (~(result >> 1) & 0xFFFFFFFF) if result & 1 else result >> 1
    if result >= 1 << 31:
        result -= 1 << 32
    return result, i


def _int32(value: float) -> int:
    n = int(value) & 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def decode_polyline(text: str, precision: int) -> list[tuple[float, float]]:
    """OSRM's ``decodePolyline``: (lon, lat) in degrees, through OSRM's fixed-point coordinates."""
    factor = 1_000_000 / precision
    coords: list[tuple[float, float]] = []
    lat = lon = 0
    i = 0
    while i < len(text):
        dlat, i = _polyline_integer(text, i)
        dlon, i = _polyline_integer(text, i)
        lat = _int32(lat + dlat)
        lon = _int32(lon + dlon)
        coords.append((_int32(lon * factor) / 1e6, _int32(lat * factor) / 1e6))
    return coords


class _Grammar:
    """The grammar of one service, writing into ``self.params`` as osrm-routed's actions do."""

    def __init__(self, service: str) -> None:
        self.params: dict[str, Any] = {}

        def setter(key: str) -> Any:
            return lambda value: self._set(key, value)

        def appender(key: str) -> Any:
            return lambda value: self.params.setdefault(key, []).append(value)

        location = _location(expect(real, lit(","), real))
        coordinates_rule = alt(
            act(lst(location, lit(";")), lambda v: self._set("coordinates", v)),
            act(
                expect(lit("polyline("), chars(POLYLINE_CHARS), lit(")")),
                lambda v: self._set("coordinates", decode_polyline(v[1], 100_000)),
            ),
            act(
                expect(lit("polyline6("), chars(POLYLINE_CHARS), lit(")")),
                lambda v: self._set("coordinates", decode_polyline(v[1], 1_000_000)),
            ),
        )
        format_rule = opt(act(symbols({".json": "json", ".flatbuffers": "flatbuffers"}), setter("format")))

        radiuses = expect(lit("radiuses="), act(lst(opt(alt(real, _unlimited)), lit(";")), setter("radiuses")))
        hints = expect(lit("hints="), lst(act(opt(_hint), appender("hints")), lit(";")))
        generate_hints = expect(lit("generate_hints="), act(boolean, setter("generate_hints")))
        skip_waypoints = expect(lit("skip_waypoints="), act(boolean, setter("skip_waypoints")))
        bearings = expect(
            lit("bearings="),
            lst(
                act(
                    opt(expect(signed_short, lit(","), signed_short)),
                    lambda v: self.params.setdefault("bearings", []).append(None if v is None else (v[0], v[2])),
                ),
                lit(";"),
            ),
        )
        approaches = expect(
            lit("approaches="),
            act(
                lst(opt(symbols({"unrestricted": "unrestricted", "curb": "curb", "opposite": "opposite"})), lit(";")), setter("approaches")
            ),
        )
        snapping = expect(lit("snapping="), act(symbols({"default": "default", "any": "any"}), setter("snapping")))
        exclude = expect(lit("exclude="), act(lst(chars(ALNUM), lit(",")), setter("exclude")))
        base = alt(radiuses, hints, bearings, generate_hints, approaches, exclude, snapping, skip_waypoints)

        def add_annotation(value: str) -> None:
            annotations = self.params.setdefault("annotations", [])
            if value not in annotations:
                annotations.append(value)

        route_base = alt(
            base,
            expect(lit("waypoints="), act(lst(unsigned(64), lit(";")), setter("waypoints"))),
            expect(lit("steps="), act(boolean, setter("steps"))),
            expect(
                lit("geometries="),
                act(symbols({"geojson": "geojson", "polyline": "polyline", "polyline6": "polyline6"}), setter("geometries")),
            ),
            expect(
                lit("overview="),
                act(symbols({"simplified": "simplified", "full": "full", "false": "false", "by_legs": "by_legs"}), setter("overview")),
            ),
            expect(
                lit("annotations="),
                alt(
                    act(lit("true"), lambda v: add_annotation("all")),
                    act(lit("false"), lambda v: add_annotation("none")),
                    lst(
                        act(symbols({a: a for a in ("duration", "nodes", "distance", "weight", "datasources", "speed")}), add_annotation),
                        lit(","),
                    ),
                ),
            ),
        )

        def set_alternatives(value: Any) -> None:
            self.params["number_of_alternatives"] = int(value)
            self.params["alternatives"] = bool(value)

        route_only = alt(
            expect(lit("alternatives="), alt(act(unsigned(32), set_alternatives), act(boolean, set_alternatives))),
            expect(lit("continue_straight="), alt(lit("default"), act(boolean, setter("continue_straight")))),
        )
        options: Parser
        if service == "route":
            options = alt(route_only, route_base)
        elif service == "nearest":
            options = alt(expect(lit("number="), act(unsigned(32), setter("number_of_results"))), base)
        elif service == "table":
            indices = lst(unsigned(64), lit(";"))
            table_annotations = lst(act(symbols({"duration": "duration", "distance": "distance"}), add_annotation), lit(","))
            options = alt(
                expect(lit("destinations="), alt(lit("all"), act(indices, setter("destinations")))),
                expect(lit("sources="), alt(lit("all"), act(indices, setter("sources")))),
                alt(base, expect(lit("annotations="), table_annotations)),
                expect(lit("scale_factor="), act(real, setter("scale_factor"))),
                expect(lit("fallback_speed="), act(real, setter("fallback_speed"))),
                expect(
                    lit("fallback_coordinate="), act(symbols({"input": "input", "snapped": "snapped"}), setter("fallback_coordinate_type"))
                ),
            )
        elif service == "trip":
            options = alt(
                expect(lit("roundtrip="), act(boolean, setter("roundtrip"))),
                expect(lit("source="), act(symbols({"any": "any", "first": "first"}), setter("source"))),
                expect(lit("destination="), act(symbols({"any": "any", "last": "last"}), setter("destination"))),
                route_base,
            )
        elif service == "match":
            options = alt(
                expect(lit("timestamps="), act(lst(unsigned(32), lit(";")), setter("timestamps"))),
                route_base,
                expect(lit("gaps="), act(symbols({"split": "split", "ignore": "ignore"}), setter("gaps"))),
                expect(lit("tidy="), act(boolean, setter("tidy"))),
            )
        else:
            raise ValueError(service)
        self.root = expect(coordinates_rule, format_rule, opt(expect(lit("?"), lst(options, lit("&")))))

    def _set(self, key: str, value: Any) -> None:
        self.params[key] = value

    def parse(self, text: str) -> dict[str, Any]:
        """Fresh options parsed from ``text`` (one thread at a time per grammar)."""
        self.params = {}
        try:
            r = self.root(text, 0)
        except Expectation as exc:
            raise QueryError(exc.pos) from None
        if r is None:
            raise QueryError(0)
        if r[0] != len(text):
            raise QueryError(r[0])
        self.params.setdefault("coordinates", [])
        return self.params


_SEGMENT = chars(BASE64_CHARS, min_count=HINT_SIZE, max_count=HINT_SIZE)


def _hint(s: str, i: int) -> Result:
    """A hint: one or more base64 segment hints of ``HINT_SIZE`` characters each."""
    j = i
    while (r := _SEGMENT(s, j)) is not None:
        j = r[0]
    return (j, s[i:j]) if j > i else None


def _unlimited(s: str, i: int) -> Any:
    return (i + 9, UNLIMITED) if s.startswith("unlimited", i) else None


def _tile_parser(p: dict[str, Any]) -> Parser:
    return expect(
        lit("tile("),
        act(unsigned(32), lambda v: p.__setitem__("x", v)),
        lit(","),
        act(unsigned(32), lambda v: p.__setitem__("y", v)),
        lit(","),
        act(unsigned(32), lambda v: p.__setitem__("z", v)),
        lit(").mvt"),
    )


_GRAMMARS: dict[str, _Grammar] = {}


def parse_query(service: str, text: str) -> dict[str, Any]:
    """The options of ``text`` for ``service``, or :class:`QueryError` where osrm-routed stops.

    Called on the event loop only: the grammars are built once and reused.
    """
    if service == "tile":
        params: dict[str, Any] = {}
        try:
            r = _tile_parser(params)(text, 0)
        except Expectation as exc:
            raise QueryError(exc.pos) from None
        if r is None:
            raise QueryError(0)
        if r[0] != len(text):
            raise QueryError(r[0])
        return params
    grammar = _GRAMMARS.get(service)
    if grammar is None:
        grammar = _GRAMMARS[service] = _Grammar(service)
    return grammar.parse(text)
