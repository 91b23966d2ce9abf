"""CPU per request of each thread of valhalla_service and of roadkit's workers, under the same load.

    python -m bench.investigations.thread_cpu [--scenario valhalla-isochrone] [--concurrency 16] [--duration 6] [--rounds 2]

Whole machine, the sweep's settings (valhalla_service with one thread per core, roadkit with
``workers = "auto"`` and one Actor per worker) and the sweep's requests, the two servers
alternated. For each thread of each server: CPU time (user, system) per request, page faults and
context switches per request, read from ``/proc/<pid>/task/<tid>``. A roadkit worker has its event
loop (the thread whose id is the process id) and one engine thread per Actor; valhalla_service has
its HTTP and ZeroMQ threads and its worker threads. It says whether a difference is in the engine
or around it, which the sweep's CPU per process cannot.

``--b-engine-calls inline`` (or ``--b-limits KEY=VALUE...``, ``--b-env NAME=VALUE...``) adds a second roadkit, "roadkit-b", measured
in the same rounds: two roadkit settings compared on the same machine state. The last lines give each
roadkit's ratio of requests/s to valhalla_service's, round by round, and their median.

``--ceiling [raw] [uvicorn]`` adds ``bench.investigations.ceiling_valhalla`` in the same rounds: the thinnest Python
server on the Actor (valhalla_service's own requests, the Actor's text answered as is, nothing
checked), run as roadkit's workers run. Its ratio to valhalla_service is the most a Python server on
the Actor gains here; roadkit's ratio to it is what roadkit's own path costs. ``uvicorn`` adds the same
answers as an ASGI app under uvicorn ("ceiling-uvicorn"): the HTTP server's and ASGI's share.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import CORES, ROOT, free_port, isochrone_points, load, paired_ratio, random_pairs, wait_http
from bench.config import roadkit_files
from bench.servers import SCENARIOS, engine_command, roadkit_command, valhalla_config

TICKS = os.sysconf("SC_CLK_TCK")

#: (pid, tid) -> (name, CPU ticks, user ticks, system ticks, minor faults, context switches)
Tasks = dict[tuple[str, str], tuple[str, int, int, int, int, int]]


def tasks(session: int) -> Tasks:
    """Every thread of the live processes of a session (a server and its workers)."""
    found: Tasks = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if int(text[text.rindex(")") + 2 :].split()[3]) != session:
            continue
        pid = stat.parent.name
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                line = (task / "stat").read_text()
                status = (task / "status").read_text()
            except OSError:
                continue
            name = line[line.index("(") + 1 : line.rindex(")")]
            fields = line[line.rindex(")") + 2 :].split()
            switches = sum(int(n) for n in re.findall(r"voluntary_ctxt_switches:\s+(\d+)", status))
            user, system = int(fields[11]), int(fields[12])
            found[(pid, task.name)] = (name, user + system, user, system, int(fields[7]), switches)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="valhalla-isochrone", choices=[s for s in SCENARIOS if s.startswith("valhalla")])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--roadkit-env", nargs="*", default=[], metavar="NAME=VALUE", help="more environment for roadkit")
    parser.add_argument("--engine-env", nargs="*", default=[], metavar="NAME=VALUE", help="more environment for valhalla_service")
    parser.add_argument(
        "--b-env",
        nargs="*",
        default=None,
        metavar="NAME=VALUE",
        help="also run a second roadkit ('roadkit-b') with this environment added, in the same rounds",
    )
    parser.add_argument(
        "--b-engine-calls", default=None, choices=["threads", "inline"], help="roadkit-b's Valhalla limits.engine_calls (implies roadkit-b)"
    )
    parser.add_argument(
        "--b-limits", nargs="*", default=None, metavar="KEY=VALUE", help="roadkit-b's more Valhalla limits, TOML (implies roadkit-b)"
    )
    parser.add_argument(
        "--ceiling",
        nargs="*",
        default=None,
        choices=["raw", "uvicorn"],
        help="also run bench.investigations.ceiling_valhalla (the thinnest server on the Actor; raw by default) in the same rounds",
    )
    args = parser.parse_args()
    points = isochrone_points(2000) if args.scenario.endswith("isochrone") else random_pairs(2000)  # the sweep's
    engine_path, roadkit_path = SCENARIOS[args.scenario][1], SCENARIOS[args.scenario][2]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        engine_port, port, admin = free_port(), free_port(), free_port()
        (workdir / "roadkit").mkdir()
        server = roadkit_files(workdir / "roadkit", "valhalla", port, admin, workers="auto", threads=1)
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
        engine_env = os.environ | dict(item.split("=", 1) for item in args.engine_env)
        roadkit_env = os.environ | dict(item.split("=", 1) for item in args.roadkit_env)
        engine = subprocess.Popen(engine_command("valhalla", workdir, engine_port, CORES), env=engine_env, **quiet)  # type: ignore[call-overload]
        ours = subprocess.Popen(roadkit_command(server), env=roadkit_env, **quiet)  # type: ignore[call-overload]
        servers = [
            ("valhalla_service", engine, [f"http://127.0.0.1:{engine_port}" + engine_path(*p) for p in points]),
            ("roadkit", ours, [f"http://127.0.0.1:{port}" + roadkit_path(*p) for p in points]),
        ]
        if args.b_env is not None or args.b_engine_calls is not None or args.b_limits is not None:
            port_b, admin_b = free_port(), free_port()
            (workdir / "roadkit-b").mkdir()
            server_b = roadkit_files(
                workdir / "roadkit-b",
                "valhalla",
                port_b,
                admin_b,
                workers="auto",
                threads=1,
                engine_calls=args.b_engine_calls,
                limits=args.b_limits or (),
            )
            b_env = roadkit_env | dict(item.split("=", 1) for item in args.b_env or [])
            other = subprocess.Popen(roadkit_command(server_b), env=b_env, **quiet)  # type: ignore[call-overload]
            servers.append(("roadkit-b", other, [f"http://127.0.0.1:{port_b}" + roadkit_path(*p) for p in points]))
        for http in args.ceiling or (["raw"] if args.ceiling == [] else []):
            ceiling_port = free_port()
            command = [sys.executable, "-m", "bench.investigations.ceiling_valhalla", str(valhalla_config()), str(ceiling_port)]
            ceiling = subprocess.Popen([*command, "--http", http], env=roadkit_env, cwd=ROOT, **quiet)  # type: ignore[call-overload]
            name = "ceiling" if http == "raw" else f"ceiling-{http}"
            servers.append((name, ceiling, [f"http://127.0.0.1:{ceiling_port}" + engine_path(*p) for p in points]))
        rates: dict[str, list[float]] = {who: [] for who, _, _ in servers}
        try:
            wait_http(f"http://127.0.0.1:{engine_port}" + engine_path(*points[0]), 180)
            for _, _, urls in servers[1:]:
                wait_http(urls[0], 180)
            for _ in range(args.rounds):
                for who, process, urls in servers:
                    load("warm-up", urls[:50], concurrency=args.concurrency, duration=0.5, check=lambda s, b: s == 200, warm_up=False)
                    before = tasks(process.pid)
                    result = load(
                        who, urls, concurrency=args.concurrency, duration=args.duration, check=lambda s, b: s == 200, warm_up=False
                    )
                    after = tasks(process.pid)
                    n = max(result.requests, 1)
                    rates[who].append(result.rps)
                    print(result.line())
                    total = 0.0
                    rows = []
                    for key, (name, cpu, user, system, faults, switches) in after.items():
                        old = before.get(key, (name, 0, 0, 0, 0, 0))
                        ms = 1000 * (cpu - old[1]) / TICKS / n
                        total += ms
                        if ms:
                            user_ms, system_ms = 1000 * (user - old[2]) / TICKS / n, 1000 * (system - old[3]) / TICKS / n
                            rows.append(
                                (
                                    ms,
                                    f"{key[0]:>7}/{key[1]:<7} {name:<16} {ms:.3f} ms (user {user_ms:.3f}, system {system_ms:.3f})"
                                    f", {(faults - old[4]) / n:.1f} faults, {(switches - old[5]) / n:.2f} switches",
                                )
                            )
                    for _, row in sorted(rows, reverse=True):
                        print("   ", row)
                    print(f"    total {total:.3f} ms CPU per request")
            for who in list(rates)[1:]:
                pairs = [ours / theirs for ours, theirs in zip(rates[who], rates["valhalla_service"], strict=True)]
                print(f"{who} / valhalla_service, each round: {' '.join(f'{r:.3f}' for r in pairs)}; median {statistics.median(pairs):.3f}")
                print(f"    median and its interval: {paired_ratio(rates[who], rates['valhalla_service']).text()}")
            for who in (name for name in rates if name.startswith("ceiling")):
                print(f"roadkit / {who}, median and its interval: {paired_ratio(rates['roadkit'], rates[who]).text()}")
        finally:
            for _, process, _ in servers:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(30)


if __name__ == "__main__":
    main()
