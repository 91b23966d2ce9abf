"""Two roadkit versions against the engine's server in one run: the roadkit core of a git revision and the installed one.

    python -m bench.investigations.ab main            # main's core/ against the installed roadkit
    python -m bench.investigations.ab HEAD~3 --scenarios osrm-polyline --concurrency 4 16 --rounds 5
    python -m bench.investigations.ab main --scenarios valhalla-route valhalla-isochrone --concurrency 16 64

The revision's ``core/`` is extracted to a temporary folder and put first on ``PYTHONPATH`` of its
server (and so of its workers); the plugins are the installed ones. osrm-routed (one thread per
core) and the two roadkit services (``workers = "auto"``, child processes) run side by side on the
whole machine and are measured alternately in every round; the report gives the median ratio to
osrm-routed and each round's ratio, so that a change that makes rounds fast or slow by chance
(the connections' spread over the workers) shows, where the sweep (``bench.sweep``) keeps the best round only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tarfile
import tempfile
from contextlib import ExitStack
from pathlib import Path

from bench.common import CORES, ROOT, free_port, http_200, isochrone_points, load, random_pairs, session_cpu_seconds
from bench.config import roadkit_files
from bench.servers import SCENARIOS, accepted_per_worker, engine_command, roadkit_command, running


def extract_core(revision: str, into: Path) -> Path:
    """``core/src`` of ``revision`` extracted under ``into``."""
    archive = into / "core.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), revision, "core"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / revision.replace("/", "_"), filter="data")
    return into / revision.replace("/", "_") / "core" / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("revision", help="git revision whose core/ is the 'before'")
    osrm = [s for s, spec in SCENARIOS.items() if spec[0] == "osrm"]
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=osrm, help="of one engine family")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=2.0, help="seconds per measurement")
    args = parser.parse_args()
    families = {SCENARIOS[s][0] for s in args.scenarios}
    if len(families) != 1:
        parser.error("--scenarios: give scenarios of one engine family (osrm-* or valhalla-*)")
    family = families.pop()
    engine_name = "osrm-routed" if family == "osrm" else "valhalla_service"

    pairs = random_pairs(2000)
    points = isochrone_points(2000)  # as the sweep draws them
    results: dict[tuple[str, int, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        before = extract_core(args.revision, workdir)
        engine_port = free_port()
        first = args.scenarios[0]
        sample = points[0] if first.endswith("isochrone") else pairs[0]
        ready = f"http://127.0.0.1:{engine_port}" + SCENARIOS[first][1](*sample)
        engine = stack.enter_context(running(engine_command(family, workdir, engine_port, CORES), pinned=False, ready=ready))
        servers: dict[str, tuple[int, int, int]] = {engine_name: (engine_port, 0, engine.pid)}
        for name, path in ((args.revision, before), ("installed", None)):
            folder = workdir / f"roadkit-{len(servers)}"
            folder.mkdir()
            port, admin = free_port(), free_port()
            server = roadkit_files(folder, family, port, admin, workers="auto", threads=1)
            saved = os.environ.get("PYTHONPATH")
            if path is not None:
                os.environ["PYTHONPATH"] = str(path) + (os.pathsep + saved if saved else "")
            try:
                process = stack.enter_context(
                    running(
                        roadkit_command(server),
                        pinned=False,
                        ready=f"http://127.0.0.1:{admin}/admin/1.0.0/health",
                    )
                )
            finally:
                if saved is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved
            servers[name] = (port, admin, process.pid)
        for round_ in range(args.rounds):
            for scenario in args.scenarios:
                for concurrency in args.concurrency:
                    chosen = points if scenario.endswith("isochrone") else pairs
                    for name, (port, admin, pid) in servers.items():
                        path = SCENARIOS[scenario][1] if name == engine_name else SCENARIOS[scenario][2]
                        urls = [f"http://127.0.0.1:{port}" + path(*pair) for pair in chosen]
                        load(name, urls[:50], concurrency=concurrency, duration=0.3, check=http_200, warm_up=False)
                        accepted = accepted_per_worker(admin) if admin else []
                        cpu = session_cpu_seconds(pid)
                        result = load(name, urls, concurrency=concurrency, duration=args.duration, check=http_200, warm_up=False)
                        cpu = 1000 * (session_cpu_seconds(pid) - cpu) / max(result.requests, 1)
                        after = accepted_per_worker(admin) if accepted else []
                        spread = "/".join(str(b - a) for a, b in zip(accepted, after, strict=False))
                        results.setdefault((scenario, concurrency, name), []).append(result.rps)
                        print(
                            f"round {round_} {scenario:<19} c={concurrency:<3} {name:<12} {result.rps:8.1f} req/s"
                            f"  cpu {cpu:.3f} ms/req  errors {result.errors}" + (f"  connections per worker {spread}" if spread else ""),
                            flush=True,
                        )
    print()
    for scenario in args.scenarios:
        for concurrency in args.concurrency:
            engine_rps = results[(scenario, concurrency, engine_name)]
            cells = [f"{scenario:<19} c={concurrency:<3} {engine_name} {statistics.median(engine_rps):7.0f} req/s"]
            for name in (args.revision, "installed"):
                ratios = [ours / theirs for ours, theirs in zip(results[(scenario, concurrency, name)], engine_rps, strict=True)]
                rounds = " ".join(f"{r:.2f}" for r in ratios)
                cells.append(f"{name} ratio {statistics.median(ratios):.2f} ({rounds})")
            print(" | ".join(cells))


if __name__ == "__main__":
    main()
