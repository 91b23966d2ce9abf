"""Sampling profile of a roadkit service process under load (py-spy), summarised by function.

    python -m bench.investigations.profile osrm --query "geometryFormat=polyline&getSteps=false&getBbox=false" --seconds 15
    python -m bench.investigations.profile osrm --server hypercorn ...   # the other HTTP server

Starts the bench's roadkit service (same-process, pinned to the last core, the load generator on
the others), sends the same random Monaco routes as the benchmarks with 16 connections, records
the service process with ``py-spy record --format raw`` and prints the share of samples that pass
through the main suspects (inclusive), plus the top functions by own time. The raw collapsed
stacks are kept (``--out``) for flame graphs (e.g. ``py-spy``'s own ``--format flamegraph``).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from bench.common import free_port, load, pin_client, pin_server, py_spy, random_pairs, summarise, wait_http
from bench.config import roadkit_files
from bench.servers import roadkit_command

#: Substrings of frames whose inclusive share is reported (a frame is "file:function").
SUSPECTS = {
    "HTTP server (hypercorn)": "hypercorn/",
    "HTTP server (uvicorn)": "uvicorn/",
    "Starlette routing": "starlette/routing.py",
    "parameter parsing": "inputs.py",
    "engine call + reading (OSRM)": "roadkit_osrm/",
    "engine call + reading (Valhalla)": "roadkit_valhalla/",
    "thread hand-off": "run_blocking",
    "projection": "projections.py",
    "geometry writing": "geometry.py",
    "JSON rendering": "render",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("engine", choices=["osrm", "valhalla"])
    parser.add_argument("--query", default="", help="extra simple-API parameters, e.g. 'geometryFormat=polyline&getSteps=false'")
    parser.add_argument("--operation", default="route", choices=["route", "isochrone", "native"])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--server", default=None, help="http_server setting of the service (hypercorn, uvicorn)")
    parser.add_argument("--out", type=Path, default=None, help="keep py-spy's raw collapsed stacks here")
    args = parser.parse_args()

    pin_client()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        port, admin = free_port(), free_port()
        # One service process (same-process mode): the one py-spy records.
        server = roadkit_files(workdir, args.engine, port, admin, workers=0, threads=1, http_server=args.server)
        resource = "monaco"
        pairs = random_pairs(2000)
        base = f"http://127.0.0.1:{port}"
        if args.operation == "native":
            urls = [f"{base}/osrm/1.0.0/{resource}/route/v1/driving/{a[0]},{a[1]};{b[0]},{b[1]}?{args.query}" for a, b in pairs]
        elif args.operation == "isochrone":
            urls = [f"{base}/simple/1.0.0/isochrone?resource={resource}&point={a[0]},{a[1]}&costValue=300&{args.query}" for a, _ in pairs]
        else:
            urls = [f"{base}/simple/1.0.0/route?resource={resource}&start={a[0]},{a[1]}&end={b[0]},{b[1]}&{args.query}" for a, b in pairs]
        serve = subprocess.Popen(
            roadkit_command(server),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
        )
        raw = args.out or workdir / "profile.txt"
        try:
            wait_http(f"http://127.0.0.1:{admin}/admin/1.0.0/health")
            wait_http(urls[0])
            spy = subprocess.Popen(
                [
                    py_spy(),
                    "record",
                    "--pid",
                    str(serve.pid),
                    "--duration",
                    str(int(args.seconds)),
                    "--format",
                    "raw",
                    "--output",
                    str(raw),
                    "--nonblocking",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(0.5)
            result: list[object] = []
            loader = threading.Thread(
                target=lambda: result.append(
                    load("roadkit", urls, concurrency=args.concurrency, duration=args.seconds, check=lambda s, b: s == 200)
                )
            )
            loader.start()
            spy.wait()
            loader.join()
        finally:
            serve.terminate()
            serve.wait()
        print(result[0].line())  # type: ignore[attr-defined]
        print(summarise(raw, SUSPECTS))


if __name__ == "__main__":
    main()
