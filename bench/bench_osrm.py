"""roadkit's simple API against osrm-routed, on the same Monaco dataset, cores and requests.

Run with ``./dev bench`` (or ``python bench/bench_osrm.py [--duration S] [--concurrency N] [--cores N]``).
Both servers get one core: osrm-routed ``--threads 1`` and one roadkit service process (the OSRM
binding holds the GIL, so a roadkit process uses one core).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import osrm
from common import Result, free_port, load, pin_client, pin_server, random_pairs, report, wait_http

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "monaco"


def prepare(workdir: Path) -> Path:
    """Build (or reuse) the car/fastest dataset of the example; returns the .osrm path."""
    cache = Path(os.environ.get("ROADKIT_CACHE", ROOT / ".cache")) / "bench-osrm"
    dataset = cache / "car-fastest" / "monaco.osrm"
    if not Path(str(dataset) + ".hsgr").exists():
        subprocess.run(
            [sys.executable, "-m", "roadkit.cli", "osrm-build", str(EXAMPLE / "monaco.osm.pbf"), str(dataset), "--profile", "car"],
            check=True,
        )
    return dataset


def roadkit_config(workdir: Path, dataset: Path, service_port: int, admin_port: int, workers: int | None = None) -> Path:
    """The bench service: same-process (one core), or ``workers`` child processes."""
    (workdir / "sources").mkdir(exist_ok=True)
    (workdir / "resources").mkdir(exist_ok=True)
    (workdir / "sources" / "car.source").write_text(
        'id = "car"\ntype = "osrm"\nprojection = "EPSG:4326"\n[storage]\nfile '
        f'= "{dataset}"\n[cost]\nprofile = "car"\noptimization = "fastest"\n'
    )
    (workdir / "resources" / "monaco.resource").write_text(
        'id = "monaco"\ntype = "osrm"\nsources = ["car"]\n[operations.route]\n[operations.nearest]\n'
    )
    (workdir / "service.toml").write_text(
        f'[application]\nname = "bench"\ntitle = "bench"\ndescription = "bench"\n[[listeners]]\nport = {service_port}\n'
        '[folders]\nsources = ["sources"]\nresources = ["resources"]\n'
    )
    server = workdir / "server.toml"
    server.write_text(
        f'[administrator]\n[administrator.listener]\nport = {admin_port}\n[administrator.logging]\nlevel = "warning"\n'
        '[[services]]\nid = "main"\nconfiguration = "service.toml"\n'
        + ('mode = "same-process"\n' if workers is None else f'mode = "child-process"\nworkers = {workers}\n')
    )
    return server


def measure(
    name: str, urls: list[str], concurrencies: list[int], duration: float, check: Callable[[int, bytes], bool]
) -> dict[int, Result]:
    """One load run per concurrency against a server that is already up."""
    return {c: load(f"{name} c={c}", urls, concurrency=c, duration=duration, check=check) for c in concurrencies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8], help="one run per value")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        help="whole-machine runs instead: roadkit with N worker processes against osrm-routed --threads N, nothing pinned",
    )
    args = parser.parse_args()
    if args.workers:
        whole_machine(args)
        return

    pin_client()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        dataset = prepare(workdir)
        pairs = random_pairs(args.requests)
        osrm_port, service_port, admin_port = free_port(), free_port(), free_port()

        routed_binary = Path(osrm.__file__).parent / "bin" / "osrm-routed"
        routed = subprocess.Popen(
            [str(routed_binary), "--algorithm", "ch", "--ip", "127.0.0.1", "--port", str(osrm_port), "--threads", "1", str(dataset)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
        )
        try:
            wait_http(f"http://127.0.0.1:{osrm_port}/route/v1/driving/7.41337,43.72956;7.41983,43.73115")
            osrm_urls = [
                f"http://127.0.0.1:{osrm_port}/route/v1/driving/{a[0]},{a[1]};{b[0]},{b[1]}?overview=full&geometries=geojson&steps=true"
                for a, b in pairs
            ]
            engine = measure(
                "osrm-routed -t 1",
                osrm_urls,
                args.concurrency,
                args.duration,
                lambda status, body: status == 200 and json.loads(body)["code"] == "Ok",
            )
        finally:
            routed.terminate()
            routed.wait()

        server = roadkit_config(workdir, dataset, service_port, admin_port)
        serve = subprocess.Popen(
            [sys.executable, "-m", "roadkit.cli", "serve", str(server)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
        )
        try:
            wait_http(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health")
            roadkit_urls = [
                f"http://127.0.0.1:{service_port}/simple/1.0.0/route?resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}"
                "&getSteps=true&getBbox=false&timeUnit=second"
                for a, b in pairs
            ]
            ours = measure("roadkit, 1 process", roadkit_urls, args.concurrency, args.duration, lambda status, body: status == 200)
        finally:
            serve.terminate()
            serve.wait()

    for concurrency in args.concurrency:
        report(
            f"Monaco car routes with steps and full GeoJSON geometry, {concurrency} concurrent client(s), one core per server",
            engine[concurrency],
            ours[concurrency],
            min_ratio=0.5,
            max_extra_p50_ms=1.0,
        )


def whole_machine(args: argparse.Namespace) -> None:
    """roadkit with N workers (child processes sharing the listener) against osrm-routed with N threads."""
    ok = lambda status, body: status == 200  # noqa: E731
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        dataset = prepare(workdir)
        pairs = random_pairs(args.requests)
        for workers in args.workers:
            osrm_port, service_port, admin_port = free_port(), free_port(), free_port()
            routed_binary = Path(osrm.__file__).parent / "bin" / "osrm-routed"
            routed = subprocess.Popen(
                [
                    str(routed_binary),
                    "--algorithm",
                    "ch",
                    "--ip",
                    "127.0.0.1",
                    "--port",
                    str(osrm_port),
                    "--threads",
                    str(workers),
                    str(dataset),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                wait_http(f"http://127.0.0.1:{osrm_port}/route/v1/driving/7.41337,43.72956;7.41983,43.73115")
                urls = [
                    f"http://127.0.0.1:{osrm_port}/route/v1/driving/{a[0]},{a[1]};{b[0]},{b[1]}?overview=full&geometries=geojson&steps=true"
                    for a, b in pairs
                ]
                engine = measure(f"osrm-routed -t {workers}", urls, args.concurrency, args.duration, ok)
            finally:
                routed.terminate()
                routed.wait()
            server = roadkit_config(workdir, dataset, service_port, admin_port, workers)
            serve = subprocess.Popen(
                [sys.executable, "-m", "roadkit.cli", "serve", str(server)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            try:
                wait_http(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health")
                urls = [
                    f"http://127.0.0.1:{service_port}/simple/1.0.0/route?resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}&getSteps=true&getBbox=false&timeUnit=second"
                    for a, b in pairs
                ]
                ours = measure(f"roadkit, {workers} worker(s)", urls, args.concurrency, args.duration, ok)
            finally:
                serve.terminate()
                serve.wait()
            rows.extend((workers, c, engine[c], ours[c]) for c in args.concurrency)
    print(f"\nWhole machine ({len(os.sched_getaffinity(0))} cores, client included), Monaco car routes with steps")
    print("| workers / threads | clients | osrm-routed req/s | roadkit req/s | ratio |")
    print("|---|---|---|---|---|")
    for workers, c, engine_result, ours_result in rows:
        print(f"| {workers} | {c} | {engine_result.rps:.0f} | {ours_result.rps:.0f} | {ours_result.rps / engine_result.rps:.2f} |")


if __name__ == "__main__":
    main()
