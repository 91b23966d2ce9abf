"""Memory while a source switches to another data version: at most one more dataset, the old one released after.

Two worker processes serve the Monaco example under load; the car (CH) and pedestrian (MLD) sources
are switched to a "v2" copy of their datasets. The proportional set size (PSS, which splits a page
shared by several processes between them, so that the sum counts each page once) of the service's
processes is sampled every 50 ms: its peak stays within the baseline plus one more dataset (its files,
mapped once for both workers, and the new engines' own objects), and once the old version is
released it comes back to the baseline.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.engine_a.test_data_versions import SWITCHED, _example, _load, _maps
from tests.pss import MIB, Sampler


async def test_a_version_switch_holds_at_most_one_more_dataset_and_releases_the_old_one(osrm_example: Path, tmp_path: Path) -> None:
    path, admin_port, service_port = _example(osrm_example, tmp_path / "monaco")
    data = path.parent / "data" / "osrm"
    new_size = sum(p.stat().st_size for folder in SWITCHED.values() for p in (data / folder / "v2").glob("monaco.osrm*"))
    old_files = {str(p) for folder in SWITCHED.values() for p in (data / folder).glob("monaco.osrm*")}
    admin = administrator(load_server(path), Plugins.create())
    await admin.start()
    stop = asyncio.Event()
    by_client: list[list[tuple[str, int, str | None]]] = [[] for _ in range(4)]
    clients: list[asyncio.Task[None]] = []
    try:
        base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
        async with httpx.AsyncClient(timeout=60) as c:
            pids = [p["pid"] for p in (await c.get(base)).json()["processes"]]
            assert len(pids) == 2
            clients = [asyncio.create_task(_load(f"http://127.0.0.1:{service_port}", stop, seen)) for seen in by_client]
            await asyncio.sleep(2.0)  # the workers' heaps at their size under load
            with Sampler(pids, str(data)) as sampler:
                await asyncio.sleep(1.5)
                before = sampler.mark()
                for sid in SWITCHED:
                    switched = await c.post(f"{base}/sources/{sid}/version", json={"version": "v2"})
                    assert switched.status_code == 200, switched.text
                # The old datasets go once the requests that could still use them are done (1 s here).
                for _ in range(100):
                    if not any(old_files & names for names in _maps(data).values()):
                        break
                    await asyncio.sleep(0.1)
                assert not any(old_files & names for names in _maps(data).values())
                released = sampler.mark()
                await asyncio.sleep(1.5)
            stop.set()
            await asyncio.gather(*clients)
        failures = [entry for seen in by_client for entry in seen if entry[1] != 200]
        assert failures == [] and sum(map(len, by_client)) > 100, failures[:5]
        assert {v for seen in by_client for kind, _, v in seen if kind == "car"} >= {"v2"}

        samples = sampler.samples
        baseline = max(samples[:before])
        peak = max(samples[before:released])
        after = max(samples[released:])
        print(
            f"\nPSS of the service's processes: baseline {baseline / MIB:.1f} MiB, peak while switching {peak / MIB:.1f} MiB "
            f"(+{(peak - baseline) / MIB:.1f}), after {after / MIB:.1f} MiB (+{(after - baseline) / MIB:.1f}); "
            f"new version's files {new_size / MIB:.1f} MiB; {len(samples)} samples"
        )
        mapped = sampler.mapped
        print(
            f"of which the datasets' mappings: baseline {max(mapped[:before]) / MIB:.1f}, "
            f"peak {max(mapped[before:released]) / MIB:.1f}, after {max(mapped[released:]) / MIB:.1f}"
        )
        assert len(samples[before:released]) >= 5  # the switch was watched, not stepped over
        # The new datasets' pages, counted once for both workers, within the size of their files...
        assert max(mapped[before:released]) - max(mapped[:before]) <= new_size, mapped
        # ...and in all at most one more dataset: its files, plus what each worker's new engines
        # allocate (a copy of the dataset per worker, were it not shared, would be 6.4 MiB more).
        assert peak - baseline <= new_size + len(pids) * MIB, (baseline, peak, new_size)
        # Back near the baseline: the old version's pages are gone (the new engines' own objects stay).
        assert max(mapped[released:]) - max(mapped[:before]) <= new_size / 4, mapped
        assert after - baseline <= new_size / 2, (baseline, after, new_size)
    finally:
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        await admin.stop()
