"""roadkit's simple API against valhalla_service, on the same Monaco tiles, cores and requests.

Run from the repository root with ``python -m bench.bench_valhalla [--duration S] [--concurrency N...] [--threads T] [--rounds R]``.
Both servers run on the same core with the same number of engine threads: ``valhalla_service
<config> T`` (from the pyvalhalla wheel) and one roadkit process whose Valhalla source holds T
Actors. Both answer the same requests: car routes in Valhalla's OSRM format with steps and GeoJSON
shapes, and 5-minute car isochrones as polygons.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
import urllib.parse
from pathlib import Path

from bench.common import MONACO_BBOX, Result, free_port, load, pin_client, pin_server, random_pairs, report, wait_http
from bench.config import roadkit_files
from bench.servers import roadkit_command, valhalla_service, valhalla_service_config

ROUTE_OPTIONS = {"costing": "auto", "directions_options": {"format": "osrm"}, "shape_format": "geojson"}


def random_points(n: int, seed: int = 7) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    xmin, ymin, xmax, ymax = MONACO_BBOX
    return [(round(rng.uniform(xmin, xmax), 5), round(rng.uniform(ymin, ymax), 5)) for _ in range(n)]


def engine_urls(
    port: int, pairs: list[tuple[tuple[float, float], tuple[float, float]]], points: list[tuple[float, float]]
) -> dict[str, list[str]]:
    def url(action: str, body: dict[str, object]) -> str:
        return f"http://127.0.0.1:{port}/{action}?json=" + urllib.parse.quote(json.dumps(body, separators=(",", ":")))

    routes = [url("route", {"locations": [{"lon": a[0], "lat": a[1]}, {"lon": b[0], "lat": b[1]}], **ROUTE_OPTIONS}) for a, b in pairs]
    isochrones = [
        url("isochrone", {"locations": [{"lon": p[0], "lat": p[1]}], "costing": "auto", "contours": [{"time": 5.0}], "polygons": True})
        for p in points
    ]
    return {"route": routes, "isochrone": isochrones}


def roadkit_urls(
    port: int, pairs: list[tuple[tuple[float, float], tuple[float, float]]], points: list[tuple[float, float]]
) -> dict[str, list[str]]:
    base = f"http://127.0.0.1:{port}/simple/1.0.0"
    routes = [
        f"{base}/route?resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}&getSteps=true&getBbox=false&timeUnit=second" for a, b in pairs
    ]
    isochrones = [f"{base}/isochrone?resource=monaco&point={p[0]},{p[1]}&costType=time&costValue=300&timeUnit=second" for p in points]
    return {"route": routes, "isochrone": isochrones}


def measure(name: str, urls: dict[str, list[str]], concurrencies: list[int], duration: float) -> dict[tuple[str, int], Result]:
    """One load run per operation and concurrency against a server that is already up."""
    return {
        (op, c): load(f"{name} {op} c={c}", op_urls, concurrency=c, duration=duration, check=lambda status, body: status == 200)
        for op, op_urls in urls.items()
        for c in concurrencies
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8], help="one run per value")
    parser.add_argument("--threads", type=int, default=1, help="engine threads of both servers (they share one core)")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds per server; the best round is reported")
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        help=(
            "whole-machine runs instead: roadkit with N worker processes (1 Actor each) "
            "against valhalla_service with N threads, nothing pinned"
        ),
    )
    args = parser.parse_args()
    if args.workers:
        whole_machine(args)
        return

    pin_client()
    pairs, points = random_pairs(args.requests), random_points(args.requests)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        engine_port, service_port, admin_port = free_port(), free_port(), free_port()
        binary = valhalla_service()
        # Both servers run side by side on the same core; an idle server takes no CPU, and
        # alternating the rounds spreads the machine's noise over both.
        service = subprocess.Popen(
            [str(binary), str(valhalla_service_config(workdir, engine_port)), str(args.threads)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
        )
        server = roadkit_files(workdir, "valhalla", service_port, admin_port, workers=0, threads=args.threads)
        serve = subprocess.Popen(
            roadkit_command(server),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
        )
        engine: dict[tuple[str, int], Result] = {}
        ours: dict[tuple[str, int], Result] = {}
        try:
            wait_http(engine_urls(engine_port, pairs[:1], points[:1])["route"][0])
            wait_http(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health")
            for _ in range(args.rounds):
                for best, name, urls in (
                    (engine, f"valhalla_service -t {args.threads}", engine_urls(engine_port, pairs, points)),
                    (ours, f"roadkit, {args.threads} Actor(s)", roadkit_urls(service_port, pairs, points)),
                ):
                    for key, result in measure(name, urls, args.concurrency, args.duration).items():
                        if key not in best or result.rps > best[key].rps:
                            best[key] = result
        finally:
            for process in (service, serve):
                process.terminate()
                process.wait()

    for op, what in (("route", "car routes with steps and GeoJSON geometry"), ("isochrone", "5-minute car isochrones")):
        for concurrency in args.concurrency:
            report(
                f"Monaco {what}, {concurrency} concurrent client(s), one core and {args.threads} engine thread(s) per server",
                engine[(op, concurrency)],
                ours[(op, concurrency)],
                min_ratio=0.9,
                max_extra_p50_ms=None,
            )


def whole_machine(args: argparse.Namespace) -> None:
    """roadkit with N workers (child processes, one Actor each) against valhalla_service with N threads."""
    pairs, points = random_pairs(args.requests), random_points(args.requests)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        binary = valhalla_service()
        for workers in args.workers:
            engine_port, service_port, admin_port = free_port(), free_port(), free_port()
            service = subprocess.Popen(
                [str(binary), str(valhalla_service_config(workdir, engine_port)), str(workers)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                wait_http(engine_urls(engine_port, pairs[:1], points[:1])["route"][0])
                engine = measure(f"valhalla_service -t {workers}", engine_urls(engine_port, pairs, points), args.concurrency, args.duration)
            finally:
                service.terminate()
                service.wait()
            server = roadkit_files(workdir, "valhalla", service_port, admin_port, workers=workers, threads=1)
            serve = subprocess.Popen(roadkit_command(server), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_http(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health")
                ours = measure(f"roadkit, {workers} worker(s)", roadkit_urls(service_port, pairs, points), args.concurrency, args.duration)
            finally:
                serve.terminate()
                serve.wait()
            rows.extend((op, workers, c, engine[(op, c)], ours[(op, c)]) for op in ("route", "isochrone") for c in args.concurrency)
    print(f"\nWhole machine ({len(os.sched_getaffinity(0))} cores, client included), Monaco car routes with steps and 5-minute isochrones")
    print("| requests | workers / threads | clients | valhalla_service req/s | roadkit req/s | ratio |")
    print("|---|---|---|---|---|---|")
    for op, workers, c, engine_result, ours_result in rows:
        print(f"| {op} | {workers} | {c} | {engine_result.rps:.0f} | {ours_result.rps:.0f} | {ours_result.rps / engine_result.rps:.2f} |")


if __name__ == "__main__":
    main()
