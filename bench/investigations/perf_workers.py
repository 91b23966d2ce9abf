"""``perf record`` of roadkit's child-process workers under the sweep's load, whole machine.

    python -m bench.investigations.perf_workers [--scenario valhalla-isochrone] [--seconds 8] [--out /tmp/workers.data] [--allocator auto]
    perf report -i /tmp/workers.data --no-children --sort pid,dso -g none --percent-limit 0.3 --stdio

Starts the bench service of the scenario's engine with ``workers = "auto"`` (as ``bench.sweep``),
warms it up, then records every thread of the workers with ``perf record -g`` (999 Hz) while 16
clients send the sweep's requests. The workers run with ``PYTHONPERFSUPPORT=1``, so Python
functions appear in the report as ``py::...`` symbols. Where a sampling profile of the Python
stacks is wanted instead, ``bench.investigations.profile`` runs py-spy on a same-process service. Sorting the
report by ``pid,dso`` splits the CPU by thread (event loops, engine threads) and by library
(the engine, libpython, the allocator, the kernel): this is how the allocator's share was found.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import free_port, isochrone_points, load, random_pairs, wait_http
from bench.config import roadkit_files
from bench.servers import SCENARIOS, roadkit_command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="valhalla-isochrone", choices=list(SCENARIOS))
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--allocator", default=None, help='the workers\' allocator setting (default "auto")')
    parser.add_argument("--out", default="/tmp/workers.data")
    args = parser.parse_args()
    family, _, roadkit_path, _ = SCENARIOS[args.scenario]
    points = isochrone_points(2000) if args.scenario.endswith("isochrone") else random_pairs(2000)  # the sweep's
    workdir = Path(tempfile.mkdtemp())
    port, admin = free_port(), free_port()
    server = roadkit_files(workdir, family, port, admin, workers="auto", threads=1, allocator=args.allocator)
    env = os.environ | {"PYTHONPERFSUPPORT": "1"}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    ours = subprocess.Popen(roadkit_command(server), env=env, start_new_session=True, **quiet)  # type: ignore[call-overload]
    try:
        urls = [f"http://127.0.0.1:{port}" + roadkit_path(*p) for p in points]
        wait_http(f"http://127.0.0.1:{admin}/admin/1.0.0/health", 180)
        wait_http(urls[0], 180)
        load("warm-up", urls, concurrency=args.concurrency, duration=2, check=lambda s, b: s == 200)
        found = subprocess.run(["pgrep", "-s", str(ours.pid)], capture_output=True, text=True, check=False).stdout.split()
        workers = [pid for pid in found if pid != str(ours.pid)]
        perf = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-o", args.out, "-p", ",".join(workers)], **quiet)  # type: ignore[call-overload]
        time.sleep(0.5)
        print(load("roadkit", urls, concurrency=args.concurrency, duration=args.seconds, check=lambda s, b: s == 200, warm_up=False).line())
        perf.send_signal(signal.SIGINT)
        perf.wait()
        print(f"workers {', '.join(workers)} recorded in {args.out}")
    finally:
        os.killpg(ours.pid, signal.SIGTERM)
        ours.wait(30)


if __name__ == "__main__":
    main()
