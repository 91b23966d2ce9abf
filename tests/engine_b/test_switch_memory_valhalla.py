"""Memory while a Valhalla source switches to other tile extracts: one more extract mapped, the old one released after.

Two worker processes serve the Monaco tiles under load; the source is switched to a "v2" copy of its
tile extract, then to a "v3" copy, while the summed PSS of the service's processes is sampled every
50 ms (:mod:`tests.pss`). The extracts are memory-mapped, shared by the workers: the mapped part grows
by at most the new extract during a switch and comes back after it. Each new ``Actor`` also allocates
a heap of its own in every worker, which the allocator keeps once the old one is freed and reuses for
the next one: the first switch grows the total by that, later ones do not.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import httpx

from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.engine_b.test_data_versions_valhalla import _example, _load, _mapped
from tests.pss import MIB, Sampler


async def test_tile_switches_map_at_most_one_more_extract_and_release_the_old_one(valhalla_config: Path, tmp_path: Path) -> None:
    server, admin_port, service_port, v2_tar = _example(valhalla_config, tmp_path)
    v3 = v2_tar.parent.parent / "v3"
    shutil.copytree(v2_tar.parent, v3)
    settings = json.loads((v3 / "valhalla.json").read_text())
    settings["mjolnir"]["tile_extract"], settings["mjolnir"]["tile_dir"] = str(v3 / "tiles.tar"), str(v3 / "tiles")
    (v3 / "valhalla.json").write_text(json.dumps(settings))
    new_size = v2_tar.stat().st_size
    admin = administrator(load_server(server), Plugins.create())
    await admin.start()
    stop = asyncio.Event()
    clients: list[asyncio.Task[list[tuple[int, str]]]] = []
    try:
        base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
        async with httpx.AsyncClient(timeout=60) as c:
            pids = [p["pid"] for p in (await c.get(base)).json()["processes"]]
            assert len(pids) == 2
            clients = [asyncio.create_task(_load(f"http://127.0.0.1:{service_port}", stop)) for _ in range(4)]
            await asyncio.sleep(2.0)  # the workers' heaps and tile caches at their size under load
            marks: list[int] = []
            with Sampler(pids, "tiles.tar") as sampler:
                for version in ("v2", "v3"):
                    await asyncio.sleep(1.5)
                    marks.append(sampler.mark())
                    switched = await c.post(f"{base}/sources/monaco-valhalla/version", json={"version": version})
                    assert switched.status_code == 200, switched.text
                    tar = str(v2_tar.parent.parent / version / "tiles.tar")
                    for _ in range(100):  # the old extract goes 1 s after the switch (the source's time-out)
                        if all(_mapped(pid, "tiles.tar") == {tar} for pid in pids):
                            break
                        await asyncio.sleep(0.1)
                    assert {pid: _mapped(pid, "tiles.tar") for pid in pids} == {pid: {tar} for pid in pids}
                    marks.append(sampler.mark())
                await asyncio.sleep(1.5)
            stop.set()
            by_client = await asyncio.gather(*clients)
        assert [e for seen in by_client for e in seen if e[0] != 200] == [] and sum(map(len, by_client)) > 20
        assert all(seen[-1][1] == "v3" for seen in by_client)

        samples = sampler.samples
        # Phases: before v2, switching to v2, between, switching to v3, after.
        bounds = list(zip([0, *marks], [*marks, len(samples)], strict=True))
        total = [max(samples[a:b]) for a, b in bounds]
        mapped = [max(sampler.mapped[a:b]) for a, b in bounds]
        print(
            "\nPSS of the service's processes (MiB), before / switching to v2 / between / switching to v3 / after: "
            + " / ".join(f"{t / MIB:.1f}" for t in total)
            + "; of which the extracts' mappings: "
            + " / ".join(f"{m / MIB:.1f}" for m in mapped)
            + f"; an extract {new_size / MIB:.1f} MiB; {len(samples)} samples"
        )
        assert all(b - a >= 3 for a, b in bounds[1::2])  # each switch was watched, not stepped over
        # Both extracts mapped while switching, each counted once however many workers map it; then one.
        assert all(m <= 2 * new_size for m in mapped[1::2]) and all(0 < m <= new_size for m in mapped[0::2]), mapped
        # The second switch costs nothing more for good: the first Actor's heap holds the next one.
        assert total[4] - total[2] <= new_size, total
    finally:
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        await admin.stop()
