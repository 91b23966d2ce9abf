"""The scale benchmark's generated networks: deterministic, and OSRM's car profile extracts them whole."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import network

pytestmark = pytest.mark.skipif(shutil.which("osmium") is None, reason="osmium-tool writes the PBF")


def test_the_same_seed_gives_the_same_network_and_another_seed_another() -> None:
    first, again, other = network.generate(500, 3), network.generate(500, 3), network.generate(500, 4)
    assert "".join(network.osm_xml(first)) == "".join(network.osm_xml(again))
    assert first.nodes != other.nodes


def test_the_network_has_the_size_asked_and_every_kind_of_road() -> None:
    net = network.generate(10_000)
    assert 9_500 <= net.segments() <= 10_500
    kinds = {tags["highway"] for _, tags in net.ways}
    assert kinds == {"primary", "tertiary", "residential", "motorway", "motorway_link"}
    assert any(tags.get("oneway") == "yes" for _, tags in net.ways if tags["highway"] == "residential")
    assert {kind for *_, kind in net.restrictions} == {"no_left_turn", "only_straight_on"}


def test_osrm_extracts_every_segment_and_turn_restriction(tmp_path: Path) -> None:
    from roadkit_osrm.prepare import profile_path

    net = network.generate(2_000, 2)
    pbf = tmp_path / "city.osm.pbf"
    network.write(net, pbf)
    done = subprocess.run(
        [sys.executable, "-m", "osrm", "extract", "-p", str(profile_path("car")), str(pbf)], capture_output=True, text=True, check=True
    )
    log = done.stdout + done.stderr
    raw = re.search(r"Raw input contains (\d+) nodes, (\d+) ways, and 0 relations, (\d+) restrictions", log)
    assert raw is not None, log
    assert tuple(map(int, raw.groups())) == (len(net.nodes), len(net.ways), len(net.restrictions))
    assert len(net.restrictions) > 0
    assert "removed 0 invalid turn restrictions" in log
    # OSRM's edges run between consecutive nodes of a way: every segment's length in nodes, and no way dropped.
    edges = re.search(r"Processed (\d+) edges", log)
    assert edges is not None, log
    assert int(edges.group(1)) == sum(len(refs) - 1 for refs, _ in net.ways)
