"""The Valhalla Actors' tile cache sized to the memory-mapped extract: the same answers for less memory per Actor."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from roadkit_valhalla.source import small_cache

MIB = 1 << 20

# A fresh process per Actor: the anonymous memory its creation adds, and one route's length.
ACTOR = """
import json, sys
def anonymous():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("RssAnon")) * 1024
import valhalla
before = anonymous()
actor = valhalla.Actor(json.loads(sys.argv[1]))
grown = anonymous() - before
route = json.loads(actor.route(json.dumps({"locations": [{"lat": 43.72956, "lon": 7.41337}, {"lat": 43.73115, "lon": 7.41983}],
                                           "costing": "auto"})))
print(json.dumps({"grown": grown, "length": route["trip"]["summary"]["length"]}))
"""


def actor_cost(settings: dict[str, object]) -> dict[str, float]:
    answer = subprocess.run([sys.executable, "-c", ACTOR, json.dumps(settings)], capture_output=True, text=True, check=True, timeout=120)
    result: dict[str, float] = json.loads(answer.stdout.strip().splitlines()[-1])
    return result


def test_the_cache_is_the_simple_one_bounded_by_twice_the_extract(tmp_path: Path) -> None:
    tar = tmp_path / "tiles.tar"
    tar.write_bytes(b"\0" * (10 * MIB))
    mjolnir: dict[str, object] = {"max_cache_size": 1_000_000_000}
    small_cache(mjolnir, tar)
    assert mjolnir == {"max_cache_size": 20 * MIB, "use_simple_mem_cache": True, "use_lru_mem_cache": False}
    tiny: dict[str, object] = {"max_cache_size": 1_000_000_000}
    small_cache(tiny, tmp_path / "missing.tar")  # Valhalla names the missing extract itself
    assert tiny == {"max_cache_size": 1_000_000_000}
    smaller: dict[str, object] = {"max_cache_size": 4 * MIB}  # a smaller setting of the file is kept
    small_cache(smaller, tar)
    assert smaller["max_cache_size"] == 4 * MIB


def test_an_actor_with_the_small_cache_answers_the_same_for_less_memory(valhalla_config: Path) -> None:
    settings = json.loads(valhalla_config.read_text())
    default = actor_cost(settings)
    small_cache(settings["mjolnir"], Path(settings["mjolnir"]["tile_extract"]))
    small = actor_cost(settings)
    assert small["length"] == default["length"] > 0
    # The flat cache's index and the 1 GB cache's reserve: about 8 MiB an Actor on any network.
    assert default["grown"] - small["grown"] > 6 * MIB, (default, small)
