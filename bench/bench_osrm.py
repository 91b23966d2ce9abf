"""roadkit's simple API against osrm-routed, on the same Monaco dataset, cores and requests.

Run from the repository root with ``python -m bench.bench_osrm [--duration S] [--concurrency N...] [--workers N...]``.
Both servers get one core: osrm-routed ``--threads 1`` and one roadkit service process (the OSRM
binding holds the GIL, so a roadkit process uses one core).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

from bench.common import free_port, measure, pin_client, pin_server, random_pairs, report, wait_http
from bench.config import roadkit_files
from bench.servers import osrm_dataset, osrm_routed, roadkit_command


def roadkit_config(workdir: Path, service_port: int, admin_port: int, workers: int = 0) -> Path:
    """The bench service with the simple API only: same-process (one core), or ``workers`` child processes."""
    return roadkit_files(workdir, "osrm", service_port, admin_port, workers=workers, threads=1, native_api=False)


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
        dataset = osrm_dataset()
        pairs = random_pairs(args.requests)
        osrm_port, service_port, admin_port = free_port(), free_port(), free_port()

        routed_binary = osrm_routed()
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

        server = roadkit_config(workdir, service_port, admin_port)
        serve = subprocess.Popen(
            roadkit_command(server),
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
        dataset = osrm_dataset()
        pairs = random_pairs(args.requests)
        for workers in args.workers:
            osrm_port, service_port, admin_port = free_port(), free_port(), free_port()
            routed_binary = osrm_routed()
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
            server = roadkit_config(workdir, service_port, admin_port, workers)
            serve = subprocess.Popen(roadkit_command(server), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
