"""Memory of the Monaco demo with 1, 2 and 4 worker processes: PSS, not RSS.

PSS (proportional set size, ``/proc/<pid>/smaps_rollup``) divides every shared page among the
processes that map it, so the sum over the administrator and its workers is what the service
really costs; RSS would count a memory-mapped dataset once per worker.

Run with ``python -m bench.investigations.memory_workers [--workers 1 2 4] [--no-mmap] [--tile-folder]`` after
``roadkit prepare --config examples/monaco/server.toml``. The demo's OSRM and Valhalla sources are
used (pgRouting needs its database: left out). Each worker answers one request of every resource
before the measurement, so the engines have touched their data. ``--tile-folder`` has Valhalla read
its tile folder (each worker caches the tiles it reads in its own heap) instead of memory-mapping the
demo's tar extract; the "tiles.tar PSS" column is what the mapped extract costs all workers together.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.config import example_files

ROUTES = [
    {"resource": "monaco-osrm", "start": "7.41337,43.72956", "end": "7.41983,43.73115"},
    {"resource": "monaco-valhalla", "start": "7.41337,43.72956", "end": "7.41983,43.73115"},
]


def pss_kib(pid: int) -> int:
    """The PSS of one process in KiB."""
    text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    match = re.search(r"^Pss:\s+(\d+) kB", text, re.M)
    assert match is not None
    return int(match.group(1))


def rss_kib(pid: int) -> int:
    text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    match = re.search(r"^Rss:\s+(\d+) kB", text, re.M)
    assert match is not None
    return int(match.group(1))


def tar_pss_kib(pid: int) -> int:
    """The PSS of the process's mappings of a ``.tar`` file (Valhalla's memory-mapped tile extract), in KiB."""
    total, in_tar = 0, False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and re.fullmatch(r"[0-9a-f]+-[0-9a-f]+", fields[0]):
            in_tar = fields[-1].endswith(".tar")
        elif in_tar and fields and fields[0] == "Pss:":
            total += int(fields[1])
    return total


def measure(workers: int, mmap: bool, tile_folder: bool = False, allocator: str | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        server, admin_port, service_port = example_files(Path(tmp), workers, mmap, tile_folder, allocator)
        process = subprocess.Popen(
            [sys.executable, "-m", "roadkit.cli", "serve", str(server)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 120
            described: dict[str, object] = {}
            while time.monotonic() < deadline:
                try:
                    described = httpx.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main").json()
                    if described.get("lifecycle") == "ready":
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            pids = [p["pid"] for p in described["processes"]]  # type: ignore[index]
            # Enough requests that every worker (they share one accept queue) computed some of each.
            with httpx.Client(base_url=f"http://127.0.0.1:{service_port}", limits=httpx.Limits(max_keepalive_connections=0)) as client:
                for _ in range(20 * workers):
                    for params in ROUTES:
                        assert client.get("/simple/1.0.0/route", params=params).status_code == 200
            time.sleep(0.5)
            admin_pss = pss_kib(process.pid)
            worker_pss = [pss_kib(pid) for pid in pids]
            worker_rss = [rss_kib(pid) for pid in pids]
            tar_pss = sum(tar_pss_kib(pid) for pid in pids)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    return {
        "workers": workers,
        "admin_pss_mib": admin_pss / 1024,
        "workers_pss_mib": sum(worker_pss) / 1024,
        "total_pss_mib": (admin_pss + sum(worker_pss)) / 1024,
        "per_worker_pss_mib": sum(worker_pss) / 1024 / workers,
        "workers_rss_mib": sum(worker_rss) / 1024,
        "tar_pss_mib": tar_pss / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--no-mmap", action="store_true", help="OSRM reads its files into each worker (for comparison)")
    parser.add_argument("--tile-folder", action="store_true", help="Valhalla reads the tile folder, not the tar (for comparison)")
    parser.add_argument("--allocator", default=None, help="the workers' allocator setting (default: the example's, \"auto\")")
    args = parser.parse_args()
    print(
        "| workers | total PSS (MiB) | administrator | workers | per worker | workers' RSS (MiB) | tiles.tar PSS (MiB) |"
        f"  (OSRM mmap: {not args.no_mmap}, Valhalla tar: {not args.tile_folder}, allocator: {args.allocator or 'the example'})"
    )
    print("|---|---|---|---|---|---|---|")
    for workers in args.workers:
        row = measure(workers, not args.no_mmap, args.tile_folder, args.allocator)
        print(
            f"| {workers} | {row['total_pss_mib']:.0f} | {row['admin_pss_mib']:.0f} | {row['workers_pss_mib']:.0f} | "
            f"{row['per_worker_pss_mib']:.0f} | {row['workers_rss_mib']:.0f} | {row['tar_pss_mib']:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
