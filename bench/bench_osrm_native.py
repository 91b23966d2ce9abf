"""roadkit's native OSRM API against osrm-routed: the same OSRM URLs, dataset and core.

Run from the repository root with ``python -m bench.bench_osrm_native [--duration S] [--concurrency N...]``.
osrm-routed runs with ``--threads 1``, roadkit as one service process; both are pinned to the same core.
Before measuring, every URL's two answers are compared (but for hints and data_version).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import Result, free_port, measure, pin_client, pin_server, random_pairs, report, wait_http
from bench.config import roadkit_files
from bench.servers import osrm_dataset, osrm_routed, roadkit_command

MIXES = {
    "plain": "",  # osrm-routed's defaults: simplified polyline overview, no steps
    "full": "?steps=true&overview=full&geometries=geojson&annotations=true",
}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("hint", "data_version")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8], help="one run per value")
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()

    pin_client()
    paths = {
        mix: [f"/route/v1/driving/{a[0]},{a[1]};{b[0]},{b[1]}{options}" for a, b in random_pairs(args.requests)]
        for mix, options in MIXES.items()
    }
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        dataset = osrm_dataset()
        osrm_port, service_port, admin_port = free_port(), free_port(), free_port()
        # One service process with the simple and the native OSRM APIs.
        server = roadkit_files(workdir, "osrm", service_port, admin_port, workers=0, threads=1)

        routed_binary = osrm_routed()
        routed = subprocess.Popen(
            [str(routed_binary), "--algorithm", "ch", "--ip", "127.0.0.1", "--port", str(osrm_port), "--threads", "1", str(dataset)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
            env={"DISABLE_ACCESS_LOGGING": "1"},
        )
        serve = subprocess.Popen(
            roadkit_command(server),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
        )
        engine: dict[str, dict[int, Result]] = {}
        ours: dict[str, dict[int, Result]] = {}
        try:
            osrm_base, native_base = f"http://127.0.0.1:{osrm_port}", f"http://127.0.0.1:{service_port}/osrm/1.0.0/monaco"
            wait_http(osrm_base + paths["plain"][0])
            wait_http(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health")
            for mix, mix_paths in paths.items():
                differ = [p for p in mix_paths[:200] if _strip(_get(osrm_base + p)) != _strip(_get(native_base + p))]
                print(
                    f"{mix}: {200 - len(differ)} of 200 answers equal to osrm-routed's"
                    + (f"; first difference: {differ[0]}" if differ else "")
                )
            ok = lambda status, body: status == 200  # noqa: E731
            for mix, mix_paths in paths.items():
                engine[mix] = measure(f"osrm-routed {mix}", [osrm_base + p for p in mix_paths], args.concurrency, args.duration, ok)
                ours[mix] = measure(f"roadkit native {mix}", [native_base + p for p in mix_paths], args.concurrency, args.duration, ok)
        finally:
            for process in (routed, serve):
                process.terminate()
                process.wait()

    for mix, options in MIXES.items():
        for concurrency in args.concurrency:
            report(
                f"Native OSRM API, Monaco car routes ({options or 'default options'}), "
                f"{concurrency} concurrent client(s), one core per server",
                engine[mix][concurrency],
                ours[mix][concurrency],
                min_ratio=0.5,
                max_extra_p50_ms=None,
            )


if __name__ == "__main__":
    main()
