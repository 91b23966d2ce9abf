"""roadkit's pgRouting source against the same SQL run directly with asyncpg, then route time against graph size.

Run from the repository root with ``python -m bench.bench_pgrouting [--duration S] [--concurrency N...] [--pool P]
[--sizes ...]``. A private PostgreSQL cluster (``roadkit_support.pgcluster``) holds the Monaco graph (the
cached dump of the tests, imported when missing).

1. Overhead: roadkit serves the monaco graph over HTTP with the demo's recommended settings (child
   processes, ``workers = "auto"``: one per core; the P connections split between the workers' pools),
   and glibc's allocator in the workers as recommended for pgRouting isochrones (``--allocator``);
   the direct client replays, with asyncpg on uvloop and one pool of P connections, the very
   statements roadkit sent for each request (recorded through the source once: the same SQL, the same
   round trips, the pool's reset query when roadkit's pool runs one; an isochrone's hulls computed
   from the reached points, as the source does). Same random Monaco pairs and
   points, car routes with steps and 5-minute car isochrones, 1 and 8 clients; with ``--ops matrix``,
   100 x 100 car matrices of random Monaco points (the sweep's ``bench.servers.matrix_points``). Nothing is pinned:
   PostgreSQL, roadkit's workers (or the direct client) and the HTTP load generator share the
   machine's cores, as on a server running both. Rounds alternate direct and roadkit (``--rounds``);
   it reports the best round of each side, the per-round ratios and p50 differences with their
   medians, and the CPU time per request of each party (PostgreSQL, roadkit's processes or the
   direct client, the load generator). ``--profile S`` then records roadkit's workers with py-spy.
2. Scale (``--sizes``; ``--ops`` with no operation runs only this part): synthetic grid graphs of
   about 10 k, 100 k and 1 M edges in the same schema (``tests/engine_c/grid.py``: 100 m blocks,
   every tenth street a main road); p50 of ~10 km car routes through the source, and on the largest
   grids of ~80 km routes searched with the importance network and in the box only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import uvloop

from bench.common import (
    EXAMPLE,
    MONACO_BBOX,
    Result,
    free_port,
    load,
    paired_difference,
    paired_ratio,
    py_spy,
    random_pairs,
    report,
    summarise,
    wait_http,
)
from bench.config import database_file, pgrouting_files, pgrouting_source_file
from bench.pgdirect import TIMEOUT, CpuMeter, direct_load, record
from bench.servers import matrix_points
from roadkit.config.loader import read_source
from roadkit.routing.model import Cost, IsochroneRequest, MatrixRequest, RouteRequest
from roadkit_pgrouting.importer import import_osm
from roadkit_pgrouting.options import DatabaseFile
from roadkit_pgrouting.source import PgRoutingSource
from roadkit_support.pgcluster import private_cluster


def monaco_graph(dsn: str, bindir: Path) -> None:
    """The Monaco graph in schema ``monaco``: the tests' cached dump, or a fresh import."""
    from tests.engine_c.conftest import cache_root, import_key

    dump = cache_root() / f"pgrouting-monaco-{import_key()}.dump"
    if dump.exists():
        # The password through the environment: a command line is readable by every user of the machine.
        url = urllib.parse.urlsplit(dsn)
        bare = url._replace(netloc=url.netloc.replace(f":{url.password}@", "@")).geturl()
        env = os.environ | {"PGPASSWORD": urllib.parse.unquote(url.password or "")}
        subprocess.run([str(bindir / "pg_restore"), "--no-owner", "-d", bare, str(dump)], check=True, env=env)
    else:
        import_osm(EXAMPLE / "monaco.osm.pbf", DatabaseFile(dsn=dsn), "monaco")


async def recorded_requests(
    workdir: Path, pairs: list[Any], points: list[Any], matrices: int
) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """Per operation, the statements of each request that succeeded, and what roadkit's URL for the same request needs."""
    source = PgRoutingSource.from_config(read_source(workdir / "sources" / "pg.source"))
    assert isinstance(source, PgRoutingSource)
    await source.connect()
    statements: dict[str, list[Any]] = {"route": [], "isochrone": [], "matrix": []}
    kept: dict[str, list[Any]] = {"route": [], "isochrone": [], "matrix": []}
    try:
        for a, b in pairs:
            recorded = await record(source, source.route(RouteRequest((a, b), Cost("car", "fastest"), steps=True)))
            if recorded:
                statements["route"].append(recorded)
                kept["route"].append((a, b))
        for p in points:
            recorded = await record(source, source.isochrone(IsochroneRequest(p, Cost("car", cost_type="time"), (300.0,))))
            if recorded:
                statements["isochrone"].append(recorded)
                kept["isochrone"].append(p)
        for a, b in pairs[:matrices]:
            sources, targets = matrix_points(a, b)
            request = MatrixRequest(tuple(sources), tuple(targets), Cost("car", "fastest"))
            recorded = await record(source, source.matrix(request))
            if recorded:
                statements["matrix"].append(recorded)
                kept["matrix"].append((sources, targets))
    finally:
        await source.disconnect()
    return statements, kept


def roadkit_urls(port: int, kept: dict[str, list[Any]]) -> dict[str, list[str]]:
    base = f"http://127.0.0.1:{port}/simple/1.0.0"
    return {
        "route": [
            f"{base}/route?resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}&getSteps=true&getBbox=false&timeUnit=second"
            for a, b in kept["route"]
        ],
        "isochrone": [
            f"{base}/isochrone?resource=monaco&point={p[0]},{p[1]}&costType=time&costValue=300&timeUnit=second" for p in kept["isochrone"]
        ],
        "matrix": [
            f"{base}/matrix?resource=monaco&sources={'|'.join(f'{x},{y}' for x, y in s)}&targets={'|'.join(f'{x},{y}' for x, y in t)}"
            "&timeUnit=second"
            for s, t in kept["matrix"]
        ],
    }


async def scale(dsn: str, workdir: Path, edges: int, routes: int) -> dict[str, Any]:
    """Route times on a synthetic grid of about ``edges`` edges, through the source.

    ~10 km car routes (p50, mean km); on grids large enough, ~60 km routes (straight line, far beyond
    ``importance_from``) with the importance network and with the box only (``importance_from`` out
    of reach): their p50 and the largest difference of their durations.
    """
    from tests.engine_c.grid import STEP, grid_side, write_grid

    n = grid_side(edges)
    schema = f"grid_{edges}"
    if not (workdir / "db.toml").exists():  # the overhead part did not run
        database_file(workdir, dsn, 1)
    count = await write_grid(dsn, schema, n)
    span = (n - 1) * STEP
    rng = random.Random(3)

    async def timed(search: str, dx: float, dy: float) -> tuple[list[float], list[Any]]:
        source_file = pgrouting_source_file(workdir, schema, schema, timeout=60.0, search=search)
        source = PgRoutingSource.from_config(read_source(source_file))
        assert isinstance(source, PgRoutingSource)
        await source.connect()
        latencies, results = [], []
        try:
            for _ in range(routes):
                x0, y0 = 7.0 + rng.uniform(0, span - dx), 44.0 + rng.uniform(0, span - dy)
                started = time.perf_counter()
                result = await source.route(RouteRequest(((x0, y0), (x0 + dx, y0 + dy)), Cost("car", "fastest"), steps=True))
                latencies.append((time.perf_counter() - started) * 1000)
                results.append(result)
        finally:
            await source.disconnect()
        return latencies, results

    # ~10 km by road: 5.5 km north (61 blocks) and 4.5 km east (69 blocks) when the grid is large enough.
    latencies, results = await timed("", min(span * 0.9, 0.062), min(span * 0.9, 0.05))
    figures: dict[str, Any] = {
        "edges": count,
        "p50": statistics.median(latencies),
        "km": statistics.fmean(r.distance / 1000 for r in results),
    }
    if span >= 0.5:  # ~45 km north and ~36 km east (about 58 km straight, 80 km by road)
        state = rng.getstate()
        bounded, with_network = await timed("", 0.45, 0.4)
        rng.setstate(state)  # the same routes with the box only
        box, box_only = await timed("[search]\nimportance_from = 1e12\n", 0.45, 0.4)
        figures.update(
            long_km=statistics.fmean(r.distance / 1000 for r in with_network),
            long_p50=statistics.median(bounded),
            box_p50=statistics.median(box),
            worst=max(abs(a.duration - b.duration) / b.duration for a, b in zip(with_network, box_only, strict=True)),
        )
    return figures


def roadkit_load(name: str, urls: list[str], concurrency: int, duration: float, meter: CpuMeter) -> tuple[Result, dict[str, float]]:
    """The HTTP load on roadkit (after a short warm-up), with the CPU time per request of each party."""
    load(name, urls[:50], concurrency=concurrency, duration=0.5, check=lambda status, body: status == 200, warm_up=False)
    meter.start()
    result = load(name, urls, concurrency=concurrency, duration=duration, check=lambda status, body: status == 200, warm_up=False)
    return result, meter.per_request_ms(result.requests)


def cpu_line(cpu: dict[str, float]) -> str:
    return "CPU per request: " + ", ".join(f"{name} {ms:.2f} ms" for name, ms in cpu.items()) + f" (total {sum(cpu.values()):.2f} ms)"


def profile(serve_pid: int, urls: list[str], seconds: float, concurrency: int, out: Path) -> str:
    """py-spy on roadkit's processes (the workers) under load; its summary (``bench.common.summarise``)."""
    import threading

    spy = subprocess.Popen(
        [
            py_spy(),
            "record",
            "--pid",
            str(serve_pid),
            "--subprocesses",
            "--duration",
            str(int(seconds)),
            "--rate",
            "200",
            *PY_SPY_RAW,
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    loader = threading.Thread(
        target=lambda: load("profile", urls, concurrency=concurrency, duration=seconds, check=lambda s, b: s == 200, warm_up=False)
    )
    loader.start()
    spy.wait()
    loader.join()
    return summarise(out, PROFILE_SUSPECTS)


PY_SPY_RAW = ("--nonblocking", "--format", "raw", "--output")
#: What the profile's summary reports (inclusive shares of frames whose "file:function" holds the text).
PROFILE_SUSPECTS = {
    "HTTP server (uvicorn)": "uvicorn/",
    "Starlette routing": "starlette/routing.py",
    "simple API (parse, write answer)": "apis/simple/",
    "parameter parsing": "parameters.py",
    "source (SQL, rows, answer)": "roadkit_pgrouting/",
    "asyncpg": "asyncpg/",
    "shapely": "shapely/",
    "projection": "projections.py",
    "geometry writing": "geometry.py",
    "JSON (orjson)": "orjson",
    "event loop (uvloop)": "uvloop/",
}


def overhead(args: argparse.Namespace, workdir: Path, dsn: str, postmaster: int) -> None:
    """Part 1: roadkit over HTTP against the direct replay of its statements, alternated rounds; the report."""
    service_port, admin_port = free_port(), free_port()
    server = pgrouting_files(workdir, dsn, "monaco", args.pool, service_port, admin_port, args.workers, TIMEOUT, allocator=args.allocator)
    pairs = random_pairs(args.requests)
    rng = random.Random(11)
    xmin, ymin, xmax, ymax = MONACO_BBOX
    points = [(round(rng.uniform(xmin, xmax), 5), round(rng.uniform(ymin, ymax), 5)) for _ in range(args.requests)]
    statements, kept = asyncio.run(recorded_requests(workdir, pairs, points, args.matrices if "matrix" in args.ops else 0))
    round_trips = {op: statistics.fmean(len(s) for s in statements[op]) for op in statements if statements[op]}
    urls = roadkit_urls(service_port, kept)
    serve = subprocess.Popen(
        [sys.executable, "-m", "roadkit.cli", "serve", str(server)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    rounds: dict[tuple[str, int], list[tuple[Result, Result, dict[str, float], dict[str, float]]]] = {}
    profiles: dict[str, str] = {}
    try:
        wait_http(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health")
        wait_http(urls["route"][0])
        for op in args.ops:  # the request of each operation answers (a resource or limit mistake stops here)
            with urllib.request.urlopen(urls[op][0], timeout=TIMEOUT) as response:
                assert response.status == 200, (op, response.status)
        for op in args.ops:
            for c in args.concurrency:
                for round_ in range(args.rounds):
                    name = f"asyncpg direct {op} c={c}"
                    meter = CpuMeter(postmaster, None)
                    # On uvloop, as roadkit's workers.
                    direct, direct_cpu = uvloop.run(direct_load(name, statements[op], dsn, args.pool, c, args.duration, meter))
                    ours, our_cpu = roadkit_load(f"roadkit {op} c={c}", urls[op], c, args.duration, CpuMeter(postmaster, serve.pid))
                    print(
                        f"round {round_ + 1}: {op} c={c}: direct {direct.rps:.1f} req/s p50 {direct.percentile(0.5):.2f} ms, "
                        f"roadkit {ours.rps:.1f} req/s p50 {ours.percentile(0.5):.2f} ms, ratio {ours.rps / direct.rps:.2f}"
                        f"\n  direct  {cpu_line(direct_cpu)}\n  roadkit {cpu_line(our_cpu)}",
                        flush=True,
                    )
                    rounds.setdefault((op, c), []).append((direct, ours, direct_cpu, our_cpu))
        if args.profile:
            folder = args.profile_out or workdir
            folder.mkdir(parents=True, exist_ok=True)
            for op in args.ops:
                profiles[op] = profile(serve.pid, urls[op], args.profile, max(args.concurrency), folder / f"pgrouting-{op}.txt")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(serve.pid, signal.SIGTERM)
        serve.wait()
    print(
        f"\n{len(kept['route'])} Monaco routes, {len(kept['isochrone'])} isochrone points and {len(kept['matrix'])} matrices; "
        f"pool of {args.pool} on both sides; "
        f"roadkit workers {args.workers} (allocator {args.allocator}); statements per request "
        + ", ".join(f"{op} {n:.1f}" for op, n in round_trips.items())
        + " (no reset query: the pools keep their sessions)"
    )
    for (op, c), measured in rounds.items():
        what = {"route": "car routes with steps", "isochrone": "5-minute car isochrones", "matrix": "100 x 100 car matrices"}[op]
        # The targets: a matrix within 1.5 times the direct SQL's time (at least 1 / 1.5 of its req/s);
        # routes and isochrones at least 0.9 of its req/s, at most 1 ms more at the median.
        target = 1 / 1.5 if op == "matrix" else 0.9
        direct = max((m[0] for m in measured), key=lambda r: r.rps)
        ours = max((m[1] for m in measured), key=lambda r: r.rps)
        report(f"Monaco {what}, {c} client(s), best rounds", direct, ours, min_ratio=target, max_extra_p50_ms=1.0)
        paired = paired_ratio([m[1].rps for m in measured], [m[0].rps for m in measured])
        p50 = paired_difference([m[1].percentile(0.5) for m in measured], [m[0].percentile(0.5) for m in measured])
        middle = sorted(measured, key=lambda m: m[1].rps / m[0].rps)[len(measured) // 2]
        print(
            f"paired ratio roadkit/direct {paired.median:.2f} {paired.verdict(target)} [{paired.low:.2f}, {paired.high:.2f}] "
            f"({paired.coverage:.0%}, target >= {target:.2f}); p50 difference {p50.median:+.1f} ms [{p50.low:+.1f}, {p50.high:+.1f}]; "
            f"median round: direct {middle[0].rps:.2f} req/s p50 {middle[0].percentile(0.5):.1f} ms "
            f"p99 {middle[0].percentile(0.99):.1f} ms, "
            f"roadkit {middle[1].rps:.2f} req/s p50 {middle[1].percentile(0.5):.1f} ms p99 {middle[1].percentile(0.99):.1f} ms"
        )
        ratios = [m[1].rps / m[0].rps for m in measured]
        extras = [m[1].percentile(0.5) - m[0].percentile(0.5) for m in measured]
        print(
            f"per-round ratios {' '.join(f'{r:.2f}' for r in ratios)}, median {statistics.median(ratios):.2f}; "
            f"per-round p50 differences {' '.join(f'{e:+.2f}' for e in extras)} ms, median {statistics.median(extras):+.2f} ms"
            " (a loaded machine: trust the medians more than the best rounds)"
        )
        for side, index in (("direct ", 2), ("roadkit", 3)):
            median = {name: statistics.median(m[index][name] for m in measured) for name in measured[0][index]}
            print(f"{side} median {cpu_line(median)}")
    for op, summary in profiles.items():
        print(f"\nProfile of roadkit's workers, {op}s, {max(args.concurrency)} clients:\n{summary}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--pool", type=int, default=8, help="connections of the direct pool, and of roadkit's workers' pools in all")
    parser.add_argument("--workers", default="auto", help='roadkit worker processes: a number or "auto" (one per core, the demo\'s)')
    parser.add_argument(
        "--allocator",
        default="system",
        help="the workers' allocator setting: \"system\" (recommended for pgRouting: GEOS's concave hull of an isochrone "
        'takes about a quarter more CPU on tcmalloc), "auto", "tcmalloc"...',
    )
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--scale-routes", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds; the best round of each side is reported")
    parser.add_argument(
        "--ops", nargs="*", default=["route", "isochrone"], choices=["route", "isochrone", "matrix"], help="none: the scale only"
    )
    parser.add_argument("--matrices", type=int, default=12, help="distinct 100 x 100 matrices of the matrix operation")
    parser.add_argument("--profile", type=float, default=0.0, metavar="S", help="then py-spy roadkit's workers for S seconds per op")
    parser.add_argument("--profile-out", type=Path, default=None, help="keep py-spy's raw stacks in this folder")
    args = parser.parse_args()

    with private_cluster() as cluster, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        dsn = cluster.create_database("bench", ("postgis", "pgrouting", "hstore"))
        postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
        monaco_graph(dsn, cluster.bindir)
        if args.ops:
            overhead(args, workdir, dsn, postmaster)
        if args.sizes:
            print("\nScale: car routes on synthetic grids (same schema), through the source")
        for size in args.sizes:
            figures = asyncio.run(scale(dsn, workdir, size, args.scale_routes))
            print(
                f"{figures['edges']:>9} edges: ~10 km route p50 {figures['p50']:8.1f} ms (mean route {figures['km']:.1f} km)"
                + ("  (target <= 200 ms)" if size >= 1_000_000 else "")
            )
            if "long_p50" in figures:
                print(
                    f"{'':>9}        ~{figures['long_km']:.0f} km routes: p50 {figures['long_p50']:.1f} ms with the importance network, "
                    f"{figures['box_p50']:.1f} ms in the box only; durations differ by {100 * figures['worst']:.3f} % at most"
                )


if __name__ == "__main__":
    main()
