"""A roadkit gateway (osrm-http, valhalla-http sources) against the engine servers it fronts, on the same requests.

Run from the repository root with ``python -m bench.bench_remote [--duration S] [--concurrency N...] [--rounds R]``.
The engine server (osrm-routed ``--threads 1``, valhalla_service with 1 thread) and the gateway (one
roadkit process, no engine data) share one core; the load generator has the other. The clients ask
the engine server directly, then the same routes through the gateway's simple API: the ratio is
what a gateway costs in front of a server (an HTTP hop, the simple API, the answer read once more).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

from bench.common import Result, free_port, load, pin_client, pin_server, random_pairs, report, wait_http
from bench.config import gateway_files
from bench.servers import SCENARIOS, osrm_dataset, osrm_routed, roadkit_command, valhalla_service, valhalla_service_config


def compare(
    name: str, engine_urls_: list[str], gateway_urls: list[str], server: Path, concurrencies: list[int], duration: float, rounds: int
) -> None:
    """Load the engine server directly and through the gateway, in alternated rounds; the best round of each is reported.

    Both answer the same routes (the direct URLs ask what the source asks: full GeoJSON geometry,
    steps). An idle gateway takes no CPU, and alternating spreads the shared machine's noise over both.
    """
    ok = lambda status, body: status == 200  # noqa: E731
    gateway = subprocess.Popen(
        roadkit_command(server),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=pin_server,
    )
    engine: dict[int, Result] = {}
    ours: dict[int, Result] = {}
    try:
        wait_http(gateway_urls[0], ok=(200, 400, 404))
        for _ in range(rounds):
            for best, label, urls in ((engine, f"{name} server", engine_urls_), (ours, "gateway", gateway_urls)):
                for c in concurrencies:
                    result = load(f"{label} c={c}", urls, concurrency=c, duration=duration, check=ok)
                    if c not in best or result.rps > best[c].rps:
                        best[c] = result
    finally:
        gateway.terminate()
        gateway.wait()
    for c in concurrencies:
        report(
            f"{name}: Monaco car routes with steps, {c} client(s), server and gateway on one core",
            engine[c],
            ours[c],
            min_ratio=0.5,
            max_extra_p50_ms=None,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8], help="one run per value")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds per server; the best round is reported")
    args = parser.parse_args()

    pin_client()
    pairs = random_pairs(args.requests)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        engine_port, service_port, admin_port = free_port(), free_port(), free_port()
        dataset = osrm_dataset()
        binary = osrm_routed()
        routed = subprocess.Popen(
            [str(binary), "--ip", "127.0.0.1", "--port", str(engine_port), "--threads", "1", str(dataset)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
        )
        try:
            base = f"http://127.0.0.1:{engine_port}"
            wait_http(f"{base}/route/v1/driving/7.41337,43.72956;7.41983,43.73115")
            server = gateway_files(workdir / "osrm", "osrm", base, service_port, admin_port)
            direct = [f"{base}/route/v1/driving/{a[0]},{a[1]};{b[0]},{b[1]}?overview=full&geometries=geojson&steps=true" for a, b in pairs]
            through = [
                f"http://127.0.0.1:{service_port}/simple/1.0.0/route?resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}"
                for a, b in pairs
            ]
            compare("osrm-http -> osrm-routed -t 1", direct, through, server, args.concurrency, args.duration, args.rounds)
        finally:
            routed.terminate()
            routed.wait()

        engine_port, service_port, admin_port = free_port(), free_port(), free_port()
        service = subprocess.Popen(
            [str(valhalla_service()), str(valhalla_service_config(workdir, engine_port)), "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
        )
        try:
            base = f"http://127.0.0.1:{engine_port}"
            direct = [base + SCENARIOS["valhalla-route"][1](a, b) for a, b in pairs]  # the sweep's valhalla_service routes
            wait_http(direct[0], ok=(200, 400))
            server = gateway_files(workdir / "valhalla", "valhalla", base, service_port, admin_port)
            through = [
                f"http://127.0.0.1:{service_port}/simple/1.0.0/route?resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}"
                for a, b in pairs
            ]
            compare("valhalla-http -> valhalla_service 1 thread", direct, through, server, args.concurrency, args.duration, args.rounds)
        finally:
            service.terminate()
            service.wait()


if __name__ == "__main__":
    main()
