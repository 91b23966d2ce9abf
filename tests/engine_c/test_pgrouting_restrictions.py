"""Turn restrictions: imported from the OSM relations (via a node or via ways, ``no_*`` and ``only_*``)
and honoured by routes, on Monaco and on a small synthetic extract with via-way restrictions."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from roadkit.contract.sources import Progress
from roadkit.routing.model import Coord, Cost, RouteRequest
from roadkit_pgrouting import queries, restrictions
from roadkit_pgrouting.importer import import_osm
from roadkit_pgrouting.options import DatabaseFile
from roadkit_pgrouting.restrictions import Edge, Relation
from roadkit_pgrouting.source import PgRoutingSource
from tests.engine_c.conftest import MONACO_PBF, make_pg_example
from tests.engine_c.test_pgrouting_failures import _source

SYNTHETIC_OSM = Path(__file__).parent / "restrictions.osm"
SYNTHETIC = "synthetic"
CAR_SHORTEST = Cost("car", "shortest")
EDGES = "SELECT id, source, target, cost_m_car AS cost, reverse_cost_m_car AS reverse_cost FROM {schema}.ways"


def osmium_kinds(extract: Path) -> Counter[tuple[str, str]]:
    """The restriction relations osmium finds, by (no|only, node|way): the kind from ``r/restriction=no_*``
    and ``only_*`` filters, the via from the members of osmium's OPL output."""
    found: Counter[tuple[str, str]] = Counter()
    for kind in ("no", "only"):
        opl = subprocess.run(
            ["osmium", "tags-filter", str(extract), f"r/restriction={kind}_*", "-R", "-f", "opl", "-o", "-"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        for line in opl.splitlines():
            members = line.split(" M", 1)[1].split(",")
            found[(kind, "way" if any(m.startswith("w") and m.endswith("@via") for m in members) else "node")] += 1
    return found


async def _fetch(dsn: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


async def imported_kinds(dsn: str, schema: str) -> Counter[tuple[str, str]]:
    rows = await _fetch(
        dsn, f"SELECT split_part(kind, '_', 1) AS kind, via, count(DISTINCT osm_id) AS n FROM {schema}.turn_restrictions GROUP BY 1, 2"
    )
    return Counter({(r["kind"], r["via"]): r["n"] for r in rows})


async def paths_of(dsn: str, schema: str, relation: int) -> list[list[int]]:
    """A relation's forbidden paths, each as the OSM ways of its edges in order."""
    rows = await _fetch(
        dsn,
        f"""SELECT r.id, array_agg(w.osm_id ORDER BY e.n) AS ways FROM {schema}.turn_restrictions r
            CROSS JOIN LATERAL unnest(r.path) WITH ORDINALITY AS e(edge, n) JOIN {schema}.ways w ON w.id = e.edge
            WHERE r.osm_id = $1 GROUP BY r.id ORDER BY ways""",
        relation,
    )
    return [list(r["ways"]) for r in rows]


def holds(route: Sequence[int], path: Sequence[int]) -> bool:
    """True when ``route`` takes ``path``: its edges one after the other."""
    return any(list(route[i : i + len(path)]) == list(path) for i in range(len(route) - len(path) + 1))


async def direct(dsn: str, schema: str, first: int, last: int, restricted: bool, profile: str = "car") -> list[int]:
    """pgRouting called by hand on the whole graph, shortest, from the middle of edge ``first`` to the middle of ``last``."""
    edges = EDGES.format(schema=schema).replace("_car", f"_{profile}")
    points = f"SELECT 1 AS pid, {first}::bigint AS edge_id, 0.5::float8 AS fraction UNION ALL SELECT 2, {last}, 0.5"
    if restricted:
        call = "pgr_trspVia_withPoints($1, $3, $2, ARRAY[-1, -2]::bigint[], directed => true)"
        args = (edges, points, f"SELECT path, 1e7::float8 AS cost FROM {schema}.turn_restrictions")
    else:
        call = "pgr_withPointsVia($1, $2, ARRAY[-1, -2]::bigint[], directed => true)"
        args = (edges, points)
    rows = await _fetch(dsn, f"SELECT edge FROM {call} WHERE edge > 0 ORDER BY seq", *args)
    return [r["edge"] for r in rows]


async def middles(dsn: str, schema: str, first: int, last: int) -> tuple[Coord, Coord]:
    rows = await _fetch(
        dsn,
        f"SELECT ST_X(p) AS x, ST_Y(p) AS y FROM unnest($1::bigint[]) WITH ORDINALITY AS e(id, n) "
        f"JOIN {schema}.ways w ON w.id = e.id, ST_LineInterpolatePoint(w.the_geom, 0.5) AS p ORDER BY e.n",
        [first, last],
    )
    return (rows[0]["x"], rows[0]["y"]), (rows[1]["x"], rows[1]["y"])


async def roadkit_edges(
    source: PgRoutingSource, points: tuple[Coord, Coord], monkeypatch: pytest.MonkeyPatch, cost: Cost = CAR_SHORTEST
) -> list[int]:
    """The edges of roadkit's route, car shortest unless told (read from the row the route is built from)."""
    seen: list[int] = []
    build = queries._route_response

    def spy(request: RouteRequest, snapped: list[Any], row: Any, source: PgRoutingSource) -> Any:
        seen[:] = row["edges"] or []
        return build(request, snapped, row, source)

    monkeypatch.setattr(queries, "_route_response", spy)
    await source.route(RouteRequest(points, cost))
    monkeypatch.undo()
    return seen


async def check_avoided(dsn: str, schema: str, source: PgRoutingSource, path: Sequence[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Without restrictions the route from the path's first edge to its last takes it; roadkit's does not
    and is the route pgRouting gives with the same restriction table."""
    free = await direct(dsn, schema, path[0], path[-1], restricted=False)
    assert holds(free, path), f"the unrestricted route {free} should take {list(path)}"
    expected = await direct(dsn, schema, path[0], path[-1], restricted=True)
    found = await roadkit_edges(source, await middles(dsn, schema, path[0], path[-1]), monkeypatch)
    assert not holds(found, path)
    assert found == expected


# Monaco: 27 restriction relations, all via a node (4 no_*, 23 only_*).


async def test_monaco_restrictions_imported_by_kind_as_osmium_counts_them(pg_dsn: str) -> None:
    expected = osmium_kinds(MONACO_PBF)
    assert sum(expected.values()) > 20
    assert await imported_kinds(pg_dsn, "monaco") == expected


async def test_monaco_only_restriction_forbids_every_other_car_way_out(pg_dsn: str) -> None:
    """only_right_turn 3410840: every other car edge at the via node is forbidden, the U-turn too, footways not."""
    rows = await _fetch(
        pg_dsn,
        """WITH r AS (SELECT path FROM monaco.turn_restrictions WHERE osm_id = 3410840),
                v AS (SELECT CASE WHEN f.target IN (t.source, t.target) THEN f.target ELSE f.source END AS vertex, f.id AS from_edge
                      FROM r JOIN monaco.ways f ON f.id = r.path[1] JOIN monaco.ways t ON t.id = r.path[2]
                      WHERE r.path[1] <> r.path[2] LIMIT 1)
           SELECT (SELECT array_agg(path[2]) FROM r) AS forbidden, (SELECT from_edge FROM v) AS from_edge,
                  (SELECT array_agg(w.id) FROM v JOIN monaco.ways w ON v.vertex IN (w.source, w.target) AND w.car) AS car,
                  (SELECT count(*) FROM v JOIN monaco.ways w ON v.vertex IN (w.source, w.target) AND NOT w.car) AS not_car""",
    )
    row = rows[0]
    to_ways = await _fetch(pg_dsn, "SELECT id FROM monaco.ways WHERE osm_id = 157719689")
    allowed = set(row["car"]) - set(row["forbidden"])
    assert row["from_edge"] in row["forbidden"], "the U-turn is forbidden"
    assert len(allowed) == 1 and allowed <= {r["id"] for r in to_ways}, "only the to way stays open"
    assert row["not_car"] == 0 or not set(row["forbidden"]) - set(row["car"]), "ways cars do not use are not forbidden"


@pytest.fixture
async def monaco_source(pg_example: Path) -> AsyncIterator[PgRoutingSource]:
    from tests.engine_c.test_pgrouting_source import connected

    source = await connected(pg_example)
    yield source
    await source.disconnect()


@pytest.mark.parametrize("relation", [4799601, 3410841], ids=["no_left_turn", "only_right_turn"])
async def test_monaco_route_avoids_a_forbidden_turn_as_pgrouting_does(
    pg_dsn: str, monaco_source: PgRoutingSource, relation: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = await _fetch(pg_dsn, "SELECT path FROM monaco.turn_restrictions WHERE osm_id = $1 AND path[1] <> path[2] LIMIT 1", relation)
    await check_avoided(pg_dsn, "monaco", monaco_source, rows[0]["path"], monkeypatch)


# The synthetic extract (tests/engine_c/restrictions.osm): via-way restrictions, which Monaco lacks.


@pytest.fixture(scope="module")
def synthetic(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, int], list[str]]:
    """The synthetic extract converted by osmium and imported into schema ``synthetic``: DSN, counts, progress."""
    pbf = tmp_path_factory.mktemp("restrictions") / "restrictions.osm.pbf"
    subprocess.run(["osmium", "cat", str(SYNTHETIC_OSM), "-o", str(pbf), "-O"], check=True)
    messages: list[str] = []
    counts = import_osm(pbf, DatabaseFile(dsn=pg_dsn), SYNTHETIC, min_component=2, progress=Progress(messages.append))
    return pg_dsn, counts, messages


def test_synthetic_import_counts_every_relation_imported_or_skipped_with_its_reason(
    synthetic: tuple[str, dict[str, int], list[str]],
) -> None:
    _, counts, messages = synthetic
    osmium = osmium_kinds(SYNTHETIC_OSM)
    assert osmium == {("no", "way"): 2 + 1, ("no", "node"): 1 + 2, ("only", "way"): 1}  # + the broken ones
    assert counts["restriction_relations"] == 8  # with the lorries' one, which has no restriction tag
    assert counts["restrictions"] == 4 and counts["restrictions_skipped"] == 4
    line = next(m for m in messages if "turn restrictions:" in m)
    for reason in (restrictions.MALFORMED, restrictions.NOT_IN_GRAPH, restrictions.NOT_CONNECTED, restrictions.OTHER_VEHICLES):
        assert f"1 {reason}" in line


async def test_synthetic_via_way_paths_follow_the_ways_in_travel_order(synthetic: tuple[str, dict[str, int], list[str]]) -> None:
    dsn, _, _ = synthetic
    assert await imported_kinds(dsn, SYNTHETIC) == {("no", "way"): 2, ("no", "node"): 1, ("only", "way"): 1}
    # no_left_turn: the via way is split in two edges at the cross street.
    assert await paths_of(dsn, SYNTHETIC, 1) == [[101, 102, 102, 103]]
    # only_straight_on: the side exit and the U-turn on the via way are forbidden, not the to way.
    assert await paths_of(dsn, SYNTHETIC, 2) == [[201, 202, 202], [201, 202, 204]]
    # no_straight_on over two via ways listed in reverse order: the path takes them in travel order.
    assert await paths_of(dsn, SYNTHETIC, 3) == [[301, 302, 303, 304]]
    # no_u_turn from and to one way via a node: the turn back onto the same edge only.
    assert await paths_of(dsn, SYNTHETIC, 4) == [[104, 104]]


@pytest.fixture
async def synthetic_source(synthetic: tuple[str, dict[str, int], list[str]], tmp_path: Path) -> AsyncIterator[PgRoutingSource]:
    source = _source(make_pg_example(tmp_path / "example", synthetic[0]), **{'schema = "monaco"': f'schema = "{SYNTHETIC}"'})
    await source.connect()
    yield source
    await source.disconnect()


@pytest.mark.parametrize("relation", [1, 2, 3], ids=["via-way-split", "only-via-way", "two-via-ways"])
async def test_synthetic_route_avoids_a_via_way_restriction_as_pgrouting_does(
    synthetic: tuple[str, dict[str, int], list[str]], synthetic_source: PgRoutingSource, relation: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = synthetic[0]
    rows = await _fetch(dsn, f"SELECT path FROM {SYNTHETIC}.turn_restrictions WHERE osm_id = $1 ORDER BY id DESC LIMIT 1", relation)
    await check_avoided(dsn, SYNTHETIC, synthetic_source, rows[0]["path"], monkeypatch)


async def test_synthetic_restriction_leaves_the_turns_it_does_not_name(
    synthetic: tuple[str, dict[str, int], list[str]], synthetic_source: PgRoutingSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """only_straight_on keeps its own turn; no_left_turn over a via way still lets the route leave the via way half-way."""
    dsn = synthetic[0]
    ids = {r["osm_id"]: r["ids"] for r in await _fetch(dsn, f"SELECT osm_id, array_agg(id) AS ids FROM {SYNTHETIC}.ways GROUP BY 1")}
    only_from, only_to = ids[201][0], ids[203][0]
    found = await roadkit_edges(synthetic_source, await middles(dsn, SYNTHETIC, only_from, only_to), monkeypatch)
    assert found == await direct(dsn, SYNTHETIC, only_from, only_to, restricted=False) == [only_from, ids[202][0], only_to]
    path = (await _fetch(dsn, f"SELECT path FROM {SYNTHETIC}.turn_restrictions WHERE osm_id = 1"))[0]["path"]
    detour = await roadkit_edges(synthetic_source, await middles(dsn, SYNTHETIC, path[0], path[-1]), monkeypatch)
    assert detour[:2] == path[:2], "the route still takes the first via edge, then the cross street"


async def test_synthetic_pedestrian_cost_without_turn_restrictions_takes_the_forbidden_turn(
    synthetic: tuple[str, dict[str, int], list[str]], synthetic_source: PgRoutingSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example's pedestrian costs set ``turn_restrictions = false`` (OSM's restrictions are for vehicles):
    their routes are pgRouting's without the restrictions, while the car's still avoid the forbidden path."""
    dsn = synthetic[0]
    for relation in (1, 3):  # via ways: no_left_turn split in two edges, no_straight_on over two via ways
        path = (await _fetch(dsn, f"SELECT path FROM {SYNTHETIC}.turn_restrictions WHERE osm_id = $1", relation))[0]["path"]
        points = await middles(dsn, SYNTHETIC, path[0], path[-1])
        walked = await roadkit_edges(synthetic_source, points, monkeypatch, Cost("pedestrian", "shortest"))
        assert holds(walked, path), (relation, walked, list(path))
        assert walked == await direct(dsn, SYNTHETIC, path[0], path[-1], restricted=False, profile="pedestrian")
        assert not holds(await roadkit_edges(synthetic_source, points, monkeypatch), path)


# The resolution alone, on hand-made edges.


def test_relations_are_read_from_osmium_opl_with_their_members() -> None:
    opl = (
        "r1 v1 Ttype=restriction,restriction=no_left_turn Mw10@from,n20@via,w30@to\n"
        "r2 v1 Ttype=restriction,restriction=only_straight_on Mw11@from,w31@to,w21@via,w22@via\n"
        "r3 v1 Ttype=restriction,restriction:motorcar=no_u_turn Mw12@from,n13@via,w12@to\n"
        "r4 v1 Ttype=restriction,restriction=give_way Mw1@from,n2@via,w3@to\n"
        "r5 v1 Ttype=restriction,restriction=no_left_turn,except=bicycle;%20%motorcar Mw1@from,n2@via,w3@to\n"
        "r6 v1 Ttype=restriction,restriction=no_left_turn Mw1@from,n2@via,n4@via,w3@to\n"
        "r7 v1 Ttype=restriction,restriction=no_entry Mw1@from,w5@from,n2@via,w3@to\n"
    )
    relations, skipped = restrictions.read_relations(opl)
    assert relations == [
        Relation(1, "no_left_turn", (10,), (30,), via_node=20),
        Relation(2, "only_straight_on", (11,), (31,), via_ways=(21, 22)),
        Relation(3, "no_u_turn", (12,), (12,), via_node=13),
        Relation(7, "no_entry", (1, 5), (3,), via_node=2),
    ]
    assert skipped == {restrictions.UNKNOWN_KIND: 1, restrictions.OTHER_VEHICLES: 1, restrictions.MALFORMED: 1}


def test_via_ways_are_chained_whatever_their_order_and_the_edges_direction() -> None:
    # from way 1 (edge 10: 1->2), via way 2 (edges 20: 3->2 and 21: 3->4, split at 3), via way 3 (edge 30: 5->4),
    # to way 4 (edge 40: 5->6); a side way 5 (edge 50: 3->7) is not part of it.
    edges = [Edge(10, 1, 1, 2), Edge(20, 2, 3, 2), Edge(21, 2, 3, 4), Edge(30, 3, 5, 4), Edge(40, 4, 5, 6), Edge(50, 5, 3, 7)]
    relation = Relation(9, "no_straight_on", (1,), (4,), via_ways=(3, 2))
    prefixes, skipped = restrictions.resolve([relation], edges, {})
    assert not skipped
    assert [(p.edges, p.vertex, p.to_edges) for p in prefixes] == [((10, 20, 21, 30), 5, (40,))]
    broken = Relation(8, "no_straight_on", (1,), (5,), via_ways=(3,))
    assert restrictions.resolve([broken], edges, {})[1] == {restrictions.NOT_CONNECTED: 1}
