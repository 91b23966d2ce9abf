"""A city-like road network of a chosen size, as an OSM extract that OSRM, Valhalla and osm2pgrouting import.

    python -m bench.network --edges 10000 --out /tmp/city-10k.osm.pbf [--seed 1]

The network: a square grid of streets 100 m apart (intersections moved a few metres at random);
every tenth street an arterial (``primary``, 70 km/h, two-way, named "Avenue" or "Boulevard"), every
tenth shifted by five a collector (``tertiary``, 50 km/h), the others residential (30 km/h, one in two
one-way, alternating directions, as in a city centre); a motorway ring three blocks outside the grid
(two one-way carriageways, 110 km/h) joined to every arterial's end by four one-way links; turn
restrictions (``type=restriction`` relations: ``no_left_turn`` and ``only_straight_on``) at a third of the
arterials' crossings. ``--edges`` counts the road segments between intersections (what osm2pgrouting's
``ways`` table holds after the import); the real count is printed. The same seed gives the same file.

It writes OSM XML and converts it with ``osmium cat`` (osmium-tool) to the PBF asked for.
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

#: The south-west corner of the grid (an empty spot of the map: nothing real is routed there).
ORIGIN = (4.0, 45.0)
BLOCK_M = 100.0
#: Every ARTERIAL-th street is an arterial; the ways are cut at the arterials' crossings.
ARTERIAL = 10
RING_OFFSET = 3  # blocks between the grid and the ring's inner carriageway

Tags = dict[str, str]


@dataclass
class Network:
    """Nodes (lon, lat), ways (node ids, tags) and restrictions (from way, via node, to way, kind)."""

    nodes: list[tuple[float, float]] = field(default_factory=list)
    ways: list[tuple[list[int], Tags]] = field(default_factory=list)
    restrictions: list[tuple[int, int, int, str]] = field(default_factory=list)

    def node(self, lon: float, lat: float) -> int:
        self.nodes.append((lon, lat))
        return len(self.nodes)

    def way(self, refs: list[int], tags: Tags) -> int:
        self.ways.append((refs, tags))
        return len(self.ways)

    def segments(self) -> int:
        """Road segments between intersections (nodes shared by two ways or more, and way ends)."""
        uses: dict[int, int] = {}
        for refs, _ in self.ways:
            for ref in refs:
                uses[ref] = uses.get(ref, 0) + 1
        total = 0
        for refs, _ in self.ways:
            total += 1 + sum(1 for ref in refs[1:-1] if uses[ref] > 1)
        return total


def side_for(edges: int) -> int:
    """The grid's side (intersections) for about ``edges`` segments: 2 n (n - 1) in the grid, ~2.4 n around it."""
    return max(2 * ARTERIAL + 1, round((-0.4 + math.sqrt(0.16 + 8 * edges)) / 4))


def bbox(edges: int) -> tuple[float, float, float, float]:
    """The grid's box (west, south, east, north) for ``edges``: every point in it is within 60 m of a street."""
    n = side_for(edges)
    dlat = BLOCK_M / 111_320.0
    dlon = dlat / math.cos(math.radians(ORIGIN[1]))
    return (ORIGIN[0], ORIGIN[1], ORIGIN[0] + (n - 1) * dlon, ORIGIN[1] + (n - 1) * dlat)


def street_tags(index: int, across: bool, rng: random.Random) -> tuple[Tags, int]:
    """The tags of street ``index`` (a row when not ``across``) and its one-way direction (1, -1 or 0)."""
    kind = "Street" if across else "Road"
    if index % ARTERIAL == 0:
        name = f"{'Boulevard' if across else 'Avenue'} {index // ARTERIAL + 1}"
        return {"highway": "primary", "name": name, "maxspeed": "70", "lanes": "2", "surface": "asphalt"}, 0
    if index % ARTERIAL == ARTERIAL // 2:
        return {"highway": "tertiary", "name": f"{kind} {index}", "maxspeed": "50", "surface": "asphalt"}, 0
    tags = {"highway": "residential", "name": f"{kind} {index}", "maxspeed": "30"}
    if rng.random() < 0.1:
        tags["surface"] = "paving_stones"
    direction = {1: 1, 3: -1}.get(index % 4, 0)
    if direction:
        tags["oneway"] = "yes"
    return tags, direction


def generate(edges: int, seed: int = 1) -> Network:
    """The network of about ``edges`` segments (see the module's description)."""
    rng = random.Random(seed)
    n = side_for(edges)
    dlat = BLOCK_M / 111_320.0
    dlon = dlat / math.cos(math.radians(ORIGIN[1]))
    net = Network()
    jitter = 0.08  # of a block: streets a little crooked, never crossing

    def position(i: float, j: float) -> tuple[float, float]:
        return (round(ORIGIN[0] + j * dlon, 7), round(ORIGIN[1] + i * dlat, 7))

    grid = [[0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            lon, lat = position(i + rng.uniform(-jitter, jitter), j + rng.uniform(-jitter, jitter))
            grid[i][j] = net.node(lon, lat)

    # Streets cut at every arterial crossing: rows run west to east (i fixed), columns south to north.
    row_ways: dict[tuple[int, int], int] = {}  # (row, first column of the piece) -> way id
    column_ways: dict[tuple[int, int], int] = {}  # (column, first row of the piece) -> way id
    for across in (False, True):
        for index in range(n):
            tags, direction = street_tags(index, across, rng)
            for start in range(0, n - 1, ARTERIAL):
                stop = min(start + ARTERIAL, n - 1)
                refs = [grid[index][k] if not across else grid[k][index] for k in range(start, stop + 1)]
                way = net.way(refs[::-1] if direction < 0 else refs, dict(tags))
                (column_ways if across else row_ways)[(index, start)] = way

    # Turn restrictions at a third of the arterials' inner crossings.
    for i in range(ARTERIAL, n - 1, ARTERIAL):
        for j in range(ARTERIAL, n - 1, ARTERIAL):
            pick = rng.random()
            if pick < 1 / 6:  # eastbound on the row, no left turn (north) onto the column
                net.restrictions.append((row_ways[(i, j - ARTERIAL)], grid[i][j], column_ways[(j, i)], "no_left_turn"))
            elif pick < 1 / 3:  # northbound on the column, straight on only
                net.restrictions.append((column_ways[(j, i - ARTERIAL)], grid[i][j], column_ways[(j, i)], "only_straight_on"))

    ring(net, grid, n, position)
    return net


def ring(net: Network, grid: list[list[int]], n: int, place: Callable[[float, float], tuple[float, float]]) -> None:
    """The motorway ring around the grid (``place``: (row, column) to (lon, lat)), its two carriageways, and
    four links at every arterial's end."""
    low, high = -RING_OFFSET, n - 1 + RING_OFFSET
    # The perimeter counter-clockwise from the south-west corner, one point per block, and each point's side.
    perimeter: list[tuple[int, int]] = (
        [(low, j) for j in range(low, high)]
        + [(i, high) for i in range(low, high)]
        + [(high, j) for j in range(high, low, -1)]
        + [(i, low) for i in range(high, low, -1)]
    )
    motorway = {"highway": "motorway", "oneway": "yes", "maxspeed": "110", "lanes": "3", "ref": "R1", "name": "Ring"}
    link = {"highway": "motorway_link", "oneway": "yes", "maxspeed": "70", "lanes": "1"}
    ends: dict[tuple[int, int], int] = {}  # perimeter point -> the arterial's end node facing it
    for k in range(0, n, ARTERIAL):
        ends[(k, low)], ends[(k, high)] = grid[k][0], grid[k][n - 1]
        ends[(low, k)], ends[(high, k)] = grid[0][k], grid[n - 1][k]
    for carriageway, outward, order in ((0, 0.0, 1), (1, 0.25, -1)):
        points = perimeter[::order]
        centre = (n - 1) / 2
        nodes = []
        for i, j in points:
            # the outer carriageway a quarter block further out
            di, dj = (i - centre), (j - centre)
            scale = 1 + outward / max(abs(di), abs(dj))
            nodes.append(net.node(*place(centre + di * scale, centre + dj * scale)))
        count = len(nodes)
        for start in range(0, count, ARTERIAL):
            refs = [nodes[k % count] for k in range(start, min(start + ARTERIAL, count) + 1)]
            net.way(refs, dict(motorway, name=f"Ring ({'inner' if carriageway == 0 else 'outer'})"))
        for k, point in enumerate(points):
            end = ends.get(point)
            if end is None:
                continue
            net.way([end, nodes[(k + 1) % count]], dict(link))  # on: merges downstream
            net.way([nodes[(k - 1) % count], end], dict(link))  # off: leaves upstream


def osm_xml(net: Network) -> Iterator[str]:
    """The network as OSM XML (nodes, ways, relations, ids in order), line by line."""
    yield "<?xml version='1.0' encoding='UTF-8'?>\n<osm version=\"0.6\" generator=\"roadkit bench.network\">\n"
    stamp = 'version="1" timestamp="2026-01-01T00:00:00Z" changeset="1" uid="1" user="bench"'
    for node_id, (lon, lat) in enumerate(net.nodes, start=1):
        yield f'<node id="{node_id}" {stamp} lat="{lat:.7f}" lon="{lon:.7f}"/>\n'
    for way_id, (refs, tags) in enumerate(net.ways, start=1):
        body = "".join(f'<nd ref="{ref}"/>' for ref in refs) + "".join(f"<tag k={quoteattr(k)} v={quoteattr(v)}/>" for k, v in tags.items())
        yield f'<way id="{way_id}" {stamp}>{body}</way>\n'
    for relation_id, (source, via, target, kind) in enumerate(net.restrictions, start=1):
        yield (
            f'<relation id="{relation_id}" {stamp}><member type="way" ref="{source}" role="from"/>'
            f'<member type="node" ref="{via}" role="via"/><member type="way" ref="{target}" role="to"/>'
            f'<tag k="type" v="restriction"/><tag k="restriction" v="{kind}"/></relation>\n'
        )
    yield "</osm>\n"


def write(net: Network, out: Path) -> None:
    """``out`` as OSM XML (``.osm``) or, through ``osmium cat``, any format osmium writes (``.osm.pbf``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.name.endswith(".osm"):
        with out.open("w") as file:
            file.writelines(osm_xml(net))
        return
    osmium = shutil.which("osmium")
    if osmium is None:
        raise SystemExit("bench.network: osmium (osmium-tool) is needed to write PBF: apt-get install osmium-tool")
    with tempfile.TemporaryDirectory(prefix="roadkit-network-") as tmp:
        xml = Path(tmp) / "network.osm"
        with xml.open("w") as file:
            file.writelines(osm_xml(net))
        subprocess.run([osmium, "cat", str(xml), "-o", str(out), "-O", "--no-progress"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edges", type=int, required=True, help="road segments between intersections, about")
    parser.add_argument("--out", type=Path, required=True, help="the extract to write: .osm.pbf (or .osm)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.edges < 100:
        parser.error(f"--edges: expected at least 100, got {args.edges}")
    net = generate(args.edges, args.seed)
    write(net, args.out)
    print(
        f"{args.out}: {net.segments()} segments, {len(net.nodes)} nodes, {len(net.ways)} ways, "
        f"{len(net.restrictions)} turn restrictions (grid side {side_for(args.edges)})"
    )


if __name__ == "__main__":
    main()
