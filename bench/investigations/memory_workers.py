"""Memory and start-up of the Monaco demo with 1, 2, 4 and 8 worker processes: PSS, not RSS.

PSS (proportional set size, ``/proc/<pid>/smaps_rollup``) divides every shared page among the
processes that map it, so the sum over the administrator and every process below it (the workers'
zygote, the workers) is what the service really costs; RSS would count a memory-mapped dataset
once per worker. "Beyond the first" is what each worker adds to the 1-worker total: the figure of
the issue's target (at most 30 MiB).

Run with ``python -m bench.investigations.memory_workers [--workers 1 2 4 8] [--no-mmap] [--tile-folder]``
after ``roadkit prepare --config examples/monaco/server.toml``. The demo's OSRM and Valhalla sources are
used (pgRouting needs its database: left out). Each worker answers requests of every resource
before the measurement, so the engines have touched their data. "Start-up" is from ``roadkit
serve`` to the service's ``ready``; "restart" the admin API's restart without downtime, until it
answers. ``--tile-folder`` has Valhalla read its tile folder (each worker caches the tiles it reads
in its own heap) instead of memory-mapping the demo's tar extract; the "tiles.tar PSS" column is
what the mapped extract costs all workers together.
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


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children...)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *descendants(int(child))]
    return found


def measure(workers: int, mmap: bool, tile_folder: bool = False, allocator: str | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        server, admin_port, service_port = example_files(Path(tmp), workers, mmap, tile_folder, allocator)
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "roadkit.cli", "serve", str(server)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        admin = f"http://127.0.0.1:{admin_port}/admin/1.0.0"
        try:
            deadline = time.monotonic() + 120
            described: dict[str, object] = {}
            while time.monotonic() < deadline:
                try:
                    described = httpx.get(f"{admin}/services/main").json()
                    if described.get("lifecycle") == "ready":
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.02)
            startup = time.monotonic() - started
            restarting = time.monotonic()
            assert httpx.get(f"{admin}/services/main/restart", timeout=120).json()["lifecycle"] == "ready"
            restart = time.monotonic() - restarting
            described = httpx.get(f"{admin}/services/main").json()
            pids = [p["pid"] for p in described["processes"]]  # type: ignore[index]
            # Enough requests that every worker (they share one accept queue) computed some of each.
            with httpx.Client(base_url=f"http://127.0.0.1:{service_port}", limits=httpx.Limits(max_keepalive_connections=0)) as client:
                for _ in range(20 * workers):
                    for params in ROUTES:
                        answer = client.get("/simple/1.0.0/route", params=params)
                        assert answer.status_code == 200, answer.text
            time.sleep(0.5)
            admin_pss = pss_kib(process.pid)
            others = [pid for pid in descendants(process.pid) if pid not in pids]
            others_pss = sum(pss_kib(pid) for pid in others)
            worker_pss = [pss_kib(pid) for pid in pids]
            worker_rss = [rss_kib(pid) for pid in pids]
            tar_pss = sum(tar_pss_kib(pid) for pid in pids)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    return {
        "workers": workers,
        "startup_s": startup,
        "restart_s": restart,
        "admin_pss_mib": admin_pss / 1024,
        "others_pss_mib": others_pss / 1024,
        "workers_pss_mib": sum(worker_pss) / 1024,
        "total_pss_mib": (admin_pss + others_pss + sum(worker_pss)) / 1024,
        "per_worker_pss_mib": sum(worker_pss) / 1024 / workers,
        "workers_rss_mib": sum(worker_rss) / 1024,
        "tar_pss_mib": tar_pss / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--no-mmap", action="store_true", help="OSRM reads its files into each worker (for comparison)")
    parser.add_argument("--tile-folder", action="store_true", help="Valhalla reads the tile folder, not the tar (for comparison)")
    parser.add_argument("--allocator", default=None, help="the workers' allocator setting (default: the example's, \"auto\")")
    args = parser.parse_args()
    print(
        "| workers | start-up (s) | restart (s) | total PSS (MiB) | administrator | zygote and others | workers | per worker "
        "| beyond the first | workers' RSS (MiB) | tiles.tar PSS (MiB) |"
        f"  (OSRM mmap: {not args.no_mmap}, Valhalla tar: {not args.tile_folder}, allocator: {args.allocator or 'the example'})"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    first: dict[str, float] | None = None
    for workers in args.workers:
        row = measure(workers, not args.no_mmap, args.tile_folder, args.allocator)
        first = first or row
        beyond = (row["total_pss_mib"] - first["total_pss_mib"]) / (workers - first["workers"]) if workers > first["workers"] else 0.0
        print(
            f"| {workers} | {row['startup_s']:.1f} | {row['restart_s']:.1f} | {row['total_pss_mib']:.0f} | {row['admin_pss_mib']:.0f} | "
            f"{row['others_pss_mib']:.0f} | {row['workers_pss_mib']:.0f} | {row['per_worker_pss_mib']:.0f} | "
            f"{beyond:.0f} | {row['workers_rss_mib']:.0f} | {row['tar_pss_mib']:.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
