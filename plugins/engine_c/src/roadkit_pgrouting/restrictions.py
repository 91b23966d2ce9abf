"""OSM turn restrictions as pgRouting restriction paths (the sequences of edge ids TRSP must not take).

``osmium tags-filter`` extracts the restriction relations (read here from its OPL text); SQL maps the
OSM ways and nodes they name onto osm2pgrouting's split edges and vertices (:data:`EDGES`,
:data:`VERTICES`); :func:`resolve` orders those edges into a path from the ``from`` way through the
``via`` node or way(s) to the ``to`` way. What it returns is a *prefix* (the from edge and the via
edges) with the vertex it ends at and the edges of the ``to`` way there; the SQL of
:data:`roadkit_pgrouting.import_sql.RESTRICTIONS` then writes the forbidden paths: ``no_*`` forbids
prefix + to edge, ``only_*`` forbids prefix + every *other* car edge leaving that vertex (U-turn
included). Relations that cannot be mapped are skipped and counted by reason.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

_ESCAPE = re.compile(r"%([0-9a-fA-F]+)%")

# Values of ``except`` that exempt cars from a restriction.
CAR_EXCEPTIONS = ("motorcar", "motor_vehicle", "vehicle")
MAX_VIA_EDGES = 64  # a via chain longer than this is a mapping error, not a turn

# Reasons a relation is skipped (the import's progress counts them).
OTHER_VEHICLES = "for other vehicles only"
UNKNOWN_KIND = "neither no_* nor only_*"
MALFORMED = "malformed members"
NOT_IN_GRAPH = "a member is not in the graph"
NOT_CONNECTED = "members not connected"
NOTHING_TO_FORBID = "nothing to forbid"  # only_* where the to way is the only car way out

COUNTS = """
SELECT split_part(kind, '_', 1) AS kind, via, count(DISTINCT osm_id) AS relations, count(*) AS paths
FROM {new}.turn_restrictions GROUP BY 1, 2
"""

EDGES = "SELECT id, osm_id, source, target FROM {new}.ways WHERE osm_id = ANY($1::bigint[])"
VERTICES = "SELECT osm_id, id FROM {new}.ways_vertices_pgr WHERE osm_id = ANY($1::bigint[])"


@attrs.frozen
class Relation:
    """An OSM restriction relation: its kind and its members' OSM ids (one via node, or via ways in order)."""

    id: int
    kind: str
    froms: tuple[int, ...]
    tos: tuple[int, ...]
    via_node: int | None = None
    via_ways: tuple[int, ...] = ()

    @property
    def via(self) -> str:
        return "node" if self.via_node is not None else "way"


@attrs.frozen
class Edge:
    """One split edge of the graph: its id, the OSM way it comes from, its end vertices."""

    id: int
    way: int
    source: int
    target: int

    def ends(self) -> tuple[int, int]:
        return (self.source, self.target)


@attrs.frozen
class Prefix:
    """A restriction resolved on the graph: ``edges`` end at ``vertex``, where ``to_edges`` leave."""

    relation: int
    kind: str
    via: str
    edges: tuple[int, ...]
    vertex: int
    to_edges: tuple[int, ...]

    def record(self) -> tuple[int, str, str, list[int], int, list[int]]:
        return (self.relation, self.kind, self.via, list(self.edges), self.vertex, list(self.to_edges))


@attrs.frozen
class Counts:
    """What an import did with the restriction relations: imported by kind and via, skipped by reason."""

    relations: int = 0  # every type=restriction relation osmium found
    by_kind: Mapping[tuple[str, str], tuple[int, int]] = attrs.field(factory=dict)  # (no|only, node|way) -> (relations, paths)
    skipped: Counter[str] = attrs.field(factory=Counter)

    @classmethod
    def of(cls, skipped: Counter[str], prefixes: Sequence[Prefix], rows: Iterable[Mapping[str, Any]]) -> Counts:
        """The counts from the relations skipped, the prefixes resolved and :data:`COUNTS`' rows (each relation is one or the other)."""
        by_kind = {(str(r["kind"]), str(r["via"])): (int(r["relations"]), int(r["paths"])) for r in rows}
        resolved = len({p.relation for p in prefixes})
        unused = resolved - sum(n for n, _ in by_kind.values())
        total = skipped + Counter({NOTHING_TO_FORBID: unused} if unused else {})
        return cls(sum(n for n, _ in by_kind.values()) + sum(total.values()), by_kind, total)

    @property
    def imported(self) -> int:
        return sum(n for n, _ in self.by_kind.values())

    @property
    def paths(self) -> int:
        return sum(p for _, p in self.by_kind.values())

    def summary(self) -> str:
        kinds = ", ".join(f"{self.by_kind.get((k, v), (0, 0))[0]} {k}_* via a {v}" for k in ("no", "only") for v in ("node", "way"))
        reasons = ", ".join(f"{n} {reason}" for reason, n in self.skipped.most_common())
        return (
            f"turn restrictions: {self.relations} OSM relations, {self.imported} imported ({kinds}) as {self.paths} "
            f"forbidden paths, {sum(self.skipped.values())} skipped" + (f" ({reasons})" if reasons else "")
        )


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def _tags(text: str) -> dict[str, str]:
    # OPL writes ',', '=', spaces... as %<hex>%: split first, then unescape.
    tags = {}
    for tag in text.split(","):
        key, equals, value = tag.partition("=")
        if equals:
            tags[_unescape(key)] = _unescape(value)
    return tags


def read_relations(opl: str) -> tuple[list[Relation], Counter[str]]:
    """The car turn restrictions among the relations of osmium's OPL text, and the others counted by reason.

    A restriction is for cars when ``restriction`` (or ``restriction:motorcar``) is ``no_*`` or
    ``only_*`` and ``except`` does not name cars. Members: one ``from`` and one ``to`` way (several
    ``from`` for ``no_entry``, several ``to`` for ``no_exit``), and one via node or one or more via ways.
    """
    relations: list[Relation] = []
    skipped: Counter[str] = Counter()
    for line in opl.splitlines():
        if not line.startswith("r"):
            continue
        fields = {part[:1]: part[1:] for part in line.split(" ") if part}
        tags = _tags(fields.get("T", ""))
        kind = tags.get("restriction:motorcar") or tags.get("restriction", "")
        excepted = {v.strip() for v in tags.get("except", "").split(";")}
        if not kind:
            skipped[OTHER_VEHICLES if any(k.startswith("restriction:") for k in tags) else UNKNOWN_KIND] += 1
            continue
        if excepted & set(CAR_EXCEPTIONS):
            skipped[OTHER_VEHICLES] += 1
            continue
        if not kind.startswith(("no_", "only_")):
            skipped[UNKNOWN_KIND] += 1
            continue
        roles: dict[str, list[str]] = {}
        for member in fields.get("M", "").split(","):
            ref, _, role = member.partition("@")
            if ref:
                roles.setdefault(role, []).append(ref)
        relation = _relation(int(fields["r"]), kind, roles)
        if relation is None:
            skipped[MALFORMED] += 1
        else:
            relations.append(relation)
    return relations, skipped


def _relation(number: int, kind: str, roles: Mapping[str, list[str]]) -> Relation | None:
    froms, vias, tos = roles.get("from", []), roles.get("via", []), roles.get("to", [])
    if not froms or not tos or not vias or any(m[:1] != "w" for m in froms + tos):
        return None
    if (len(froms) > 1 and kind != "no_entry") or (len(tos) > 1 and kind != "no_exit"):
        return None
    from_ways, to_ways = tuple(int(m[1:]) for m in froms), tuple(int(m[1:]) for m in tos)
    if len(vias) == 1 and vias[0][:1] == "n":
        return Relation(number, kind, from_ways, to_ways, via_node=int(vias[0][1:]))
    if all(m[:1] == "w" for m in vias):
        via_ways = tuple(int(m[1:]) for m in vias)
        if len(set(via_ways)) != len(via_ways) or set(via_ways) & set(from_ways + to_ways):
            return None
        return Relation(number, kind, from_ways, to_ways, via_ways=via_ways)
    return None


def osm_ids(relations: Iterable[Relation]) -> tuple[list[int], list[int]]:
    """The OSM ways and the via nodes the relations name (what :data:`EDGES` and :data:`VERTICES` look up)."""
    ways: set[int] = set()
    nodes: set[int] = set()
    for relation in relations:
        ways.update(relation.froms, relation.tos, relation.via_ways)
        if relation.via_node is not None:
            nodes.add(relation.via_node)
    return sorted(ways), sorted(nodes)


def resolve(relations: Sequence[Relation], edges: Iterable[Edge], vertices: Mapping[int, int]) -> tuple[list[Prefix], Counter[str]]:
    """The prefixes of the relations that map onto the graph, and the others counted by reason.

    ``edges`` are the split edges of the relations' ways, ``vertices`` the graph vertex of each via
    node (by OSM id). A relation with several from (or to) ways keeps the pairs that map.
    """
    by_way: dict[int, list[Edge]] = {}
    for edge in edges:
        by_way.setdefault(edge.way, []).append(edge)
    prefixes: list[Prefix] = []
    skipped: Counter[str] = Counter()
    for relation in relations:
        found: list[Prefix] = []
        reasons: list[str] = []
        for from_way in relation.froms:
            for to_way in relation.tos:
                if relation.via_node is not None:
                    pairs, reason = _via_node(relation, from_way, to_way, by_way, vertices.get(relation.via_node))
                else:
                    pairs, reason = _via_ways(relation, from_way, to_way, by_way)
                found += pairs
                reasons += [reason] if reason else []
        if found:
            prefixes += found
        else:
            skipped[reasons[0] if reasons else NOT_CONNECTED] += 1
    return prefixes, skipped


def _touching(edges: Sequence[Edge], vertex: int) -> list[Edge]:
    return [e for e in edges if vertex in e.ends()]


def _via_node(
    relation: Relation, from_way: int, to_way: int, by_way: Mapping[int, list[Edge]], vertex: int | None
) -> tuple[list[Prefix], str | None]:
    if vertex is None or from_way not in by_way or to_way not in by_way:
        return [], NOT_IN_GRAPH
    arriving, leaving = _touching(by_way[from_way], vertex), _touching(by_way[to_way], vertex)
    if not arriving or not leaving:
        return [], NOT_CONNECTED
    found = []
    for edge in arriving:
        # from = to (no_u_turn on one way): the turn back onto the same edge, not the way's other side.
        targets = (edge.id,) if from_way == to_way else tuple(e.id for e in leaving)
        found.append(Prefix(relation.id, relation.kind, "node", (edge.id,), vertex, targets))
    return found, None


def _via_ways(relation: Relation, from_way: int, to_way: int, by_way: Mapping[int, list[Edge]]) -> tuple[list[Prefix], str | None]:
    if any(w not in by_way for w in (from_way, to_way, *relation.via_ways)):
        return [], NOT_IN_GRAPH
    via = [e for w in relation.via_ways for e in by_way[w]]
    if len(via) > MAX_VIA_EDGES:
        return [], MALFORMED
    via_vertices = {v for e in via for v in e.ends()}
    starts = sorted(via_vertices & {v for e in by_way[from_way] for v in e.ends()})
    ends = via_vertices & {v for e in by_way[to_way] for v in e.ends()}
    chains = _chains(via, starts, ends, set(relation.via_ways))
    if not chains:
        return [], NOT_CONNECTED
    found = []
    for start, chain, end in chains:
        leaving = tuple(e.id for e in _touching(by_way[to_way], end))
        for edge in _touching(by_way[from_way], start):
            found.append(Prefix(relation.id, relation.kind, "way", (edge.id, *chain), end, leaving))
    return found, None


def _chains(via: Sequence[Edge], starts: Sequence[int], ends: set[int], ways: set[int]) -> list[tuple[int, tuple[int, ...], int]]:
    """The shortest chains of via edges from a start to an end vertex that go over every via way.

    Each chain is (start vertex, edge ids in travel order, end vertex); no vertex is visited twice.
    The members' order in the relation is not trusted: mappers list via ways in any order.
    """
    best: list[tuple[int, tuple[int, ...], int]] = []
    for start in starts:
        stack: list[tuple[int, tuple[Edge, ...], frozenset[int]]] = [(start, (), frozenset({start}))]
        while stack:
            vertex, path, seen = stack.pop()
            if best and len(path) >= len(best[0][1]):
                continue
            for edge in _touching(via, vertex):
                other = edge.target if edge.source == vertex else edge.source
                if other in seen:
                    continue
                chain = (*path, edge)
                if other in ends and {e.way for e in chain} == ways:
                    found = (start, tuple(e.id for e in chain), other)
                    if best and len(chain) < len(best[0][1]):
                        best = []
                    if found not in best:
                        best.append(found)
                    continue
                stack.append((other, chain, seen | {other}))
    return best
