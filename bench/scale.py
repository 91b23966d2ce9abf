"""How roadkit's cost grows with the network: generated city networks of 10 k, 100 k (and 1 M) edges.

    python -m bench.scale --sizes 10000 100000                # prepare what is missing, measure, plot
    python -m bench.scale --sizes 1000000 --prepare-only      # only build the data (timed)
    python -m bench.scale --plot                              # the plot and the docs' table from the CSV

Each size is a network of ``bench.network`` (seeded), prepared once for the three engines with the
project's own preparation (``roadkit osrm-build`` with MLD, ``roadkit valhalla-build``, pgRouting's
``import_osm`` into a private cluster kept beside the data) under ``$ROADKIT_CACHE/bench-networks/``;
the preparation times and the imported counts are kept in ``prepare.json`` there.

At each size, on the whole machine (engine servers with one thread per core, roadkit with ``workers =
"auto"``, as the sweep), the same requests to the engine's own server and to roadkit's simple API, in
alternated rounds (the pairs of :func:`bench.common.paired_ratio`):

- routes across the network (from its western or southern fifth to the opposite fifth), OSRM in
  polyline without steps, Valhalla in GeoJSON with steps, pgRouting with steps;
- isochrones growing with the network (30 s of driving per km of the network's side), Valhalla and pgRouting;
- 100 x 100 matrices of random points, each engine's own table/matrix, pgRouting's.

pgRouting is compared with its own statements sent directly through asyncpg (``bench.pgdirect``'s
replay). Results: ``bench/results/scale.csv`` (the rows of the sizes measured replace the earlier ones),
``scale.png`` and the table between the ``scale-table`` markers of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import CORES, RESULTS, ROOT, Result, cache_root, free_port, load, paired_difference, paired_ratio, session_cpu_seconds
from bench.config import pgrouting_files, service_files
from bench.network import bbox, generate, write
from bench.servers import osrm_routed, roadkit_command, running, valhalla_service

Point = tuple[float, float]
#: The generator's seed of every prepared network.
SEED = 1
RESOURCE = "net"
SCHEMA = "net"
CSV_PATH = RESULTS / "scale.csv"
#: roadkit's engine time-out in the scale runs, seconds: a 100 x 100 matrix on a large network takes many.
ENGINE_TIMEOUT = 120.0
DOCS = ROOT / "docs" / "benchmarks.md"


def networks() -> Path:
    return cache_root() / "bench-networks"


# --- preparation ------------------------------------------------------------------------------------


@contextmanager
def database_cluster() -> Iterator[Any]:
    """The private PostgreSQL cluster of the networks' graphs, kept in the cache between runs."""
    from roadkit_support.pgcluster import private_cluster

    folder = networks() / "postgres"
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:  # the server refuses to run as root: its folder belongs to postgres
        shutil.chown(folder, "postgres", "postgres")
    with private_cluster(folder / "data") as cluster:
        yield cluster


def prepare(edges: int, cluster: Any, *, pgrouting: bool = True) -> dict[str, Any]:
    """The network of ``edges`` for the three engines, pgRouting's graph only when ``pgrouting`` (what is
    missing is built and timed); its record."""
    folder = networks() / f"{edges}-seed{SEED}"
    folder.mkdir(parents=True, exist_ok=True)
    record_path = folder / "prepare.json"
    record: dict[str, Any] = json.loads(record_path.read_text()) if record_path.exists() else {}
    pbf = folder / "network.osm.pbf"

    def save() -> None:
        record_path.write_text(json.dumps(record, indent=1) + "\n")

    if not pbf.exists():
        started = time.monotonic()
        net = generate(edges, SEED)
        write(net, pbf)
        record.update(generate_s=round(time.monotonic() - started, 1), segments=net.segments(), nodes=len(net.nodes))
        record.update(restrictions=len(net.restrictions), pbf_bytes=pbf.stat().st_size)
        save()
    osrm = folder / "osrm" / "network.osrm"
    if not Path(f"{osrm}.mldgr").exists():
        started = time.monotonic()
        cli = [sys.executable, "-m", "roadkit.cli"]
        subprocess.run([*cli, "osrm-build", str(pbf), str(osrm), "--profile", "car", "--algorithm", "MLD"], check=True)
        record["osrm_s"] = round(time.monotonic() - started, 1)
        save()
    valhalla = folder / "valhalla" / "valhalla.json"
    if not valhalla.exists():
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "roadkit.cli", "valhalla-build", str(pbf), str(valhalla.parent)], check=True)
        record["valhalla_s"] = round(time.monotonic() - started, 1)
        save()
    dsn = cluster.create_database(f"net_{edges}", ("postgis", "pgrouting", "hstore"))
    if pgrouting and "pgrouting_s" not in record:
        from roadkit_pgrouting.importer import import_osm
        from roadkit_pgrouting.options import DatabaseFile

        started = time.monotonic()
        counts = import_osm(pbf, DatabaseFile(dsn=dsn), SCHEMA)
        record.update(pgrouting_s=round(time.monotonic() - started, 1), pgrouting=counts)
        save()
    record.update(osrm=str(osrm), valhalla=str(valhalla), dsn=dsn, edges=edges)
    return record


# --- requests ---------------------------------------------------------------------------------------


def crossing_pairs(edges: int, n: int, seed: int = 5) -> list[tuple[Point, Point]]:
    """Routes across the network: from its western (or southern) fifth to the opposite fifth, either way."""
    rng = random.Random(seed)
    west, south, east, north = bbox(edges)

    def at(fx: float, fy: float) -> Point:
        return (round(west + fx * (east - west), 6), round(south + fy * (north - south), 6))

    pairs = []
    for _ in range(n):
        near, far, along = rng.uniform(0, 0.2), rng.uniform(0.8, 1.0), rng.uniform(0, 1)
        a, b = (at(near, along), at(far, rng.uniform(0, 1))) if rng.random() < 0.5 else (at(along, near), at(rng.uniform(0, 1), far))
        pairs.append((a, b) if rng.random() < 0.5 else (b, a))
    return pairs


def inner_points(edges: int, n: int, seed: int) -> list[Point]:
    """Random points in the network's middle half (isochrone centres, matrix points)."""
    rng = random.Random(seed)
    west, south, east, north = bbox(edges)
    return [
        (round(west + rng.uniform(0.25, 0.75) * (east - west), 6), round(south + rng.uniform(0.25, 0.75) * (north - south), 6))
        for _ in range(n)
    ]


def isochrone_seconds(edges: int) -> float:
    """The isochrones' budget: 30 s of driving per km of the network's side."""
    _, south, _, north = bbox(edges)
    return round(30 * (north - south) * 111.32)


def matrices(edges: int, n: int) -> list[tuple[list[Point], list[Point]]]:
    points = inner_points(edges, 200 * n, seed=9)
    return [(points[200 * k : 200 * k + 100], points[200 * k + 100 : 200 * k + 200]) for k in range(n)]


def coords(points: list[Point], sep: str) -> str:
    return sep.join(f"{x},{y}" for x, y in points)


def valhalla_json(path: str, body: dict[str, Any]) -> str:
    return f"{path}?json=" + urllib.parse.quote(json.dumps(body, separators=(",", ":")))


def simple(operation: str, query: str) -> str:
    return f"/simple/1.0.0/{operation}?resource={RESOURCE}&{query}"


#: scenario -> (family, engine path of a request, roadkit path of the same request); a request is a
#: route pair, an isochrone (point, seconds) or a matrix (sources, targets).
Scenario = tuple[str, Callable[[Any], str], Callable[[Any], str]]
SCENARIOS: dict[str, Scenario] = {
    "osrm-route": (
        "osrm",
        lambda r: f"/route/v1/driving/{coords(list(r), ';')}?overview=full&geometries=polyline&steps=false",
        lambda r: simple(
            "route", f"start={coords([r[0]], '')}&end={coords([r[1]], '')}&geometryFormat=polyline&getSteps=false&getBbox=false"
        ),
    ),
    "osrm-matrix": (
        "osrm",
        lambda r: (
            f"/table/v1/driving/{coords(r[0] + r[1], ';')}?annotations=duration,distance&generate_hints=false"
            f"&sources={';'.join(map(str, range(100)))}&destinations={';'.join(map(str, range(100, 200)))}"
        ),
        lambda r: simple("matrix", f"sources={coords(r[0], '|')}&targets={coords(r[1], '|')}&timeUnit=second"),
    ),
    "valhalla-route": (
        "valhalla",
        lambda r: valhalla_json(
            "/route",
            {
                "locations": [{"lon": p[0], "lat": p[1]} for p in r],
                "costing": "auto",
                "directions_options": {"format": "osrm"},
                "shape_format": "geojson",
            },
        ),
        lambda r: simple("route", f"start={coords([r[0]], '')}&end={coords([r[1]], '')}&getSteps=true&getBbox=false"),
    ),
    "valhalla-isochrone": (
        "valhalla",
        lambda r: valhalla_json(
            "/isochrone",
            {"locations": [{"lon": r[0][0], "lat": r[0][1]}], "costing": "auto", "contours": [{"time": r[1] / 60}], "polygons": True},
        ),
        lambda r: simple("isochrone", f"point={coords([r[0]], '')}&costType=time&costValue={r[1]:g}&timeUnit=second"),
    ),
    "valhalla-matrix": (
        "valhalla",
        lambda r: valhalla_json(
            "/sources_to_targets",
            {
                "sources": [{"lon": x, "lat": y} for x, y in r[0]],
                "targets": [{"lon": x, "lat": y} for x, y in r[1]],
                "costing": "auto",
                "verbose": False,
            },
        ),
        lambda r: simple("matrix", f"sources={coords(r[0], '|')}&targets={coords(r[1], '|')}&timeUnit=second"),
    ),
}


def requests_of(scenario: str, edges: int, count: int) -> list[Any]:
    if scenario.endswith("route"):
        return crossing_pairs(edges, count)
    if scenario.endswith("isochrone"):
        return [(p, isochrone_seconds(edges)) for p in inner_points(edges, count, seed=7)]
    return matrices(edges, max(2, count // 25))


# --- measurement ------------------------------------------------------------------------------------


def ok(status: int, body: bytes) -> bool:
    return status == 200


def answered(url: str) -> None:
    """Fail early, and clearly, when the first request of a scenario does not answer 200."""
    with urllib.request.urlopen(url, timeout=ENGINE_TIMEOUT) as response:
        if response.status != 200:
            raise RuntimeError(f"{url[:200]}: HTTP {response.status}")


def concurrencies(scenario: str, args: argparse.Namespace) -> list[int]:
    """A 100 x 100 matrix keeps a core busy for seconds: matrices at one client only."""
    return [1] if scenario.endswith("matrix") else args.concurrency


def row(edges: int, scenario: str, engine: str, concurrency: int, theirs: list[Result], ours: list[Result]) -> dict[str, Any]:
    """The CSV row of one scenario at one size and concurrency: medians of the rounds and the paired figures."""
    kept = [(a, b) for a, b in zip(ours, theirs, strict=True) if a.requests and b.requests]
    figures: dict[str, Any] = {
        "edges": edges,
        "scenario": scenario,
        "engine": engine,
        "concurrency": concurrency,
        "rounds": len(theirs),
        "engine_rps": round(statistics.median(r.rps for r in theirs), 2),
        "engine_p50_ms": round(statistics.median(r.percentile(0.5) for r in theirs), 2),
        "roadkit_rps": round(statistics.median(r.rps for r in ours), 2),
        "roadkit_p50_ms": round(statistics.median(r.percentile(0.5) for r in ours), 2),
        "errors": sum(r.errors for r in theirs + ours),
    }
    if kept:
        ratio = paired_ratio([a.rps for a, _ in kept], [b.rps for _, b in kept])
        p50 = paired_difference([a.percentile(0.5) for a, _ in kept], [b.percentile(0.5) for _, b in kept])
        figures.update(
            ratio=round(ratio.median, 3),
            ratio_low=round(ratio.low, 3),
            ratio_high=round(ratio.high, 3),
            coverage=round(ratio.coverage, 2),
            p50_diff_ms=round(p50.median, 2),
        )
    print(
        f"{edges} {scenario} c={concurrency}: {engine} {figures['engine_rps']} req/s p50 {figures['engine_p50_ms']} ms, "
        f"roadkit {figures['roadkit_rps']} req/s p50 {figures['roadkit_p50_ms']} ms, ratio {figures.get('ratio')} "
        f"[{figures.get('ratio_low')}, {figures.get('ratio_high')}], errors {figures['errors']}",
        flush=True,
    )
    return figures


def engine_files(
    family: str, record: dict[str, Any], workdir: Path, port: int, admin: int, workers: str, limits: list[str] | None = None
) -> Path:
    """roadkit's service of one engine on the prepared network (as ``bench.config.roadkit_files``, resource ``net``)."""
    if family == "osrm":
        source = (
            f'id = "car"\ntype = "osrm"\nprojection = "EPSG:4326"\ntimeout = {ENGINE_TIMEOUT}\n'
            f'[storage]\nfile = "{record["osrm"]}"\nalgorithm = "MLD"\n'
            '[cost]\nprofile = "car"\noptimization = "fastest"\n'
        )
        sources, used = {"car.source": source}, "car"
    else:
        count = CORES if workers == "auto" else int(workers)
        limits = limits or []
        source = (
            f'id = "valhalla"\ntype = "valhalla"\nprojection = "EPSG:4326"\ntimeout = {ENGINE_TIMEOUT}\n'
            f'[storage]\nconfig = "{record["valhalla"]}"\n'
            f"[limits]\nthreads = {max(1, CORES // count)}\n"
            + "".join(f"{line}\n" for line in limits)
            + '[[costs]]\nprofile = "car"\noptimization = "fastest"\ncost_type = "time"\ncosting = "auto"\n'
        )
        sources, used = {"valhalla.source": source}, "valhalla"
    resource = (
        f'id = "{RESOURCE}"\ntype = "{family}"\nsources = ["{used}"]\n[operations.route]\n[operations.nearest]\n'
        "[operations.matrix]\nlimits = { sources = 100, targets = 100, cells = 10000 }\n"
        + ("[operations.isochrone]\ncostValue = { min = 1, max = 7200 }\n" if family == "valhalla" else "")
    )
    return service_files(workdir, port=port, admin=admin, sources=sources, resources={"net.resource": resource}, workers=workers)


def engine_server(family: str, record: dict[str, Any], workdir: Path, port: int) -> list[str]:
    if family == "osrm":
        return [str(osrm_routed()), "--algorithm", "mld", "--ip", "127.0.0.1", "--port", str(port), "--threads", str(CORES), record["osrm"]]
    config = json.loads(Path(record["valhalla"]).read_text())
    config["httpd"]["service"].update(
        {"listen": f"tcp://127.0.0.1:{port}", "loopback": f"ipc://{workdir}/loopback", "interrupt": f"ipc://{workdir}/interrupt"}
    )
    path = workdir / "valhalla-service.json"
    path.write_text(json.dumps(config))
    return [str(valhalla_service()), str(path), str(CORES)]


def measure_engine(family: str, record: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The family's scenarios at one size: the engine's server and roadkit alternated, round by round."""
    edges = record["edges"]
    scenarios = [s for s in args.scenarios if SCENARIOS.get(s, ("",))[0] == family]
    if not scenarios:
        return []
    engine = "osrm-routed" if family == "osrm" else "valhalla_service"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        engine_port, port, admin = free_port(), free_port(), free_port()
        # Ready once a route answers (a matrix on a large network takes seconds: no readiness probe).
        probe = f"{family}-route"
        first = requests_of(probe, edges, 1)[0]
        ready = f"http://127.0.0.1:{engine_port}" + SCENARIOS[probe][1](first)
        server = engine_files(family, record, workdir, port, admin, args.workers, args.valhalla_limit)
        with (
            running(engine_server(family, record, workdir, engine_port), pinned=False, ready=ready) as their,
            running(roadkit_command(server), pinned=False, ready=f"http://127.0.0.1:{port}" + SCENARIOS[probe][2](first)) as our,
        ):
            for scenario in scenarios:
                _, engine_path, roadkit_path = SCENARIOS[scenario]
                wanted = requests_of(scenario, edges, args.requests)
                urls = {
                    "engine": [f"http://127.0.0.1:{engine_port}" + engine_path(r) for r in wanted],
                    "roadkit": [f"http://127.0.0.1:{port}" + roadkit_path(r) for r in wanted],
                }
                for who in ("engine", "roadkit"):
                    answered(urls[who][0])
                    load(who, urls[who][:20], concurrency=1, duration=0.5, check=ok, warm_up=False)
                for concurrency in concurrencies(scenario, args):
                    results: dict[str, list[Result]] = {"engine": [], "roadkit": []}
                    cpu: dict[str, list[float]] = {"engine": [], "roadkit": []}
                    for round_ in range(args.rounds):
                        order = ("engine", "roadkit") if round_ % 2 == 0 else ("roadkit", "engine")
                        for who in order:
                            pid = their.pid if who == "engine" else our.pid
                            before = session_cpu_seconds(pid)
                            result = load(who, urls[who], concurrency=concurrency, duration=args.duration, check=ok, warm_up=False)
                            results[who].append(result)
                            cpu[who].append(1000 * (session_cpu_seconds(pid) - before) / max(result.requests, 1))
                    figures = row(edges, scenario, engine, concurrency, results["engine"], results["roadkit"])
                    figures.update(
                        engine_cpu_ms=round(statistics.median(cpu["engine"]), 3), roadkit_cpu_ms=round(statistics.median(cpu["roadkit"]), 3)
                    )
                    rows.append(figures)
    return rows


def measure_pgrouting(record: dict[str, Any], cluster: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """pgRouting at one size: roadkit over HTTP against its own statements replayed with asyncpg, alternated rounds."""
    import contextlib
    import signal

    import uvloop

    from bench.common import wait_http
    from bench.pgdirect import TIMEOUT, CpuMeter, direct_load
    from bench.pgdirect import record as record_statements
    from roadkit.config.loader import read_source
    from roadkit.routing.model import Cost, IsochroneRequest, MatrixRequest, RouteRequest
    from roadkit_pgrouting.source import PgRoutingSource

    edges, dsn = record["edges"], record["dsn"]
    operations = [s.removeprefix("pgrouting-") for s in args.scenarios if s.startswith("pgrouting-")]
    if not operations:
        return []
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        port, admin = free_port(), free_port()
        server = pgrouting_files(workdir, dsn, SCHEMA, args.pool, port, admin, args.workers, TIMEOUT, resource_id=RESOURCE)

        def call(source: PgRoutingSource, op: str, r: Any) -> Any:
            if op == "route":
                return source.route(RouteRequest(r, Cost("car", "fastest"), steps=True))
            if op == "isochrone":
                return source.isochrone(IsochroneRequest(r[0], Cost("car", cost_type="time"), (float(r[1]),)))
            return source.matrix(MatrixRequest(tuple(r[0]), tuple(r[1]), Cost("car", "fastest")))

        def url(op: str, r: Any) -> str:
            if op == "route":
                path = simple("route", f"start={coords([r[0]], '')}&end={coords([r[1]], '')}&getSteps=true&getBbox=false&timeUnit=second")
            else:
                path = SCENARIOS[f"valhalla-{op}"][2](r)
            return f"http://127.0.0.1:{port}" + path

        async def recorded() -> dict[str, tuple[list[Any], list[str]]]:
            source = PgRoutingSource.from_config(read_source(workdir / "sources" / "pg.source"))
            assert isinstance(source, PgRoutingSource)
            await source.connect()
            found: dict[str, tuple[list[Any], list[str]]] = {}
            try:
                for op in operations:
                    statements, urls = [], []
                    for r in requests_of(f"pgrouting-{op}", edges, args.pg_requests):
                        done = await record_statements(source, call(source, op, r))
                        if done:
                            statements.append([(method, sql, values) for method, sql, values in done])
                            urls.append(url(op, r))
                    found[op] = (statements, urls)
            finally:
                await source.disconnect()
            return found

        found = asyncio.run(recorded())
        serve = subprocess.Popen(roadkit_command(server), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_http(f"http://127.0.0.1:{admin}/admin/1.0.0/health", timeout=120)
            for op in operations:
                statements, urls = found[op]
                print(f"{edges} pgrouting-{op}: {len(urls)} requests answered", flush=True)
                if not urls:
                    continue
                answered(urls[0])
                load("roadkit", urls[:20], concurrency=1, duration=0.5, check=ok, warm_up=False)
                for concurrency in concurrencies(f"pgrouting-{op}", args):
                    direct: list[Result] = []
                    ours: list[Result] = []
                    for _ in range(args.rounds):
                        result, _cpu = uvloop.run(
                            direct_load("direct", statements, dsn, args.pool, concurrency, args.duration, CpuMeter(postmaster, None))
                        )
                        direct.append(result)
                        ours.append(load("roadkit", urls, concurrency=concurrency, duration=args.duration, check=ok, warm_up=False))
                    rows.append(row(edges, f"pgrouting-{op}", "asyncpg (same SQL)", concurrency, direct, ours))
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(serve.pid, signal.SIGTERM)
            serve.wait()
    return rows


# --- results ----------------------------------------------------------------------------------------

FIELDS = [
    *("date", "edges", "scenario", "engine", "concurrency", "rounds"),
    *("engine_rps", "engine_p50_ms", "roadkit_rps", "roadkit_p50_ms", "ratio", "ratio_low", "ratio_high", "coverage"),
    *("p50_diff_ms", "engine_cpu_ms", "roadkit_cpu_ms", "errors"),
]


def save_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge ``rows`` into the CSV (a size's new rows replace its old ones); every row."""
    measured = {(r["edges"], r["scenario"]) for r in rows}
    kept = []
    if CSV_PATH.exists():
        with CSV_PATH.open() as file:
            kept = [r for r in csv.DictReader(file) if (int(r["edges"]), r["scenario"]) not in measured]
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    merged = kept + [{"date": stamp, **r} for r in rows]
    merged.sort(key=lambda r: (r["scenario"], int(r["edges"]), int(r["concurrency"])))
    CSV_PATH.parent.mkdir(parents=True, exist_ok=True)
    with CSV_PATH.open("w", newline="") as file:
        writer = csv.DictWriter(file, FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(merged)
    return merged


def read_rows() -> list[dict[str, Any]]:
    with CSV_PATH.open() as file:
        return list(csv.DictReader(file))


def number(value: Any) -> float:
    return float(value) if value not in ("", None) else math.nan


def plot(rows: list[dict[str, Any]]) -> Path:
    """p50 (1 client) and req/s (most clients) against the network's size: roadkit and the engine's server."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = sorted({r["scenario"] for r in rows})
    top = max(int(r["concurrency"]) for r in rows)
    columns = 4
    blocks = math.ceil(len(scenarios) / columns)
    # Per scenario two panels, one above the other: p50 at one client, req/s at the most clients.
    figure, axes = plt.subplots(2 * blocks, columns, figsize=(3.4 * columns, 2.9 * 2 * blocks), squeeze=False)
    for axis in axes.flat:
        axis.set_visible(False)
    for k, scenario in enumerate(scenarios):
        for line, (metric, concurrency, label) in enumerate((("p50_ms", 1, "p50 (ms), 1 client"), ("rps", top, f"req/s, {top} clients"))):
            axis = axes[2 * (k // columns) + line][k % columns]
            chosen = sorted(
                (r for r in rows if r["scenario"] == scenario and int(r["concurrency"]) == concurrency), key=lambda r: int(r["edges"])
            )
            if not chosen:
                continue
            axis.set_visible(True)
            sizes = [int(r["edges"]) for r in chosen]
            axis.plot(sizes, [number(r[f"engine_{metric}"]) for r in chosen], "o-", label=chosen[0]["engine"])
            axis.plot(sizes, [number(r[f"roadkit_{metric}"]) for r in chosen], "s-", label="roadkit")
            axis.set_xscale("log")
            axis.set_yscale("log")
            axis.set_title(f"{scenario}: {label}", fontsize=9)
            axis.set_xlabel("edges", fontsize=8)
            axis.tick_params(labelsize=7)
            axis.legend(fontsize=7)
    figure.tight_layout()
    out = RESULTS / "scale.png"
    figure.savefig(out, dpi=90)
    plt.close(figure)
    return out


def table(rows: list[dict[str, Any]]) -> str:
    """The docs' table: one line per scenario, size and concurrency."""
    lines = [
        "| scenario | edges | clients | engine's server | its req/s | roadkit req/s | ratio [interval] (coverage) "
        "| engine p50 | roadkit p50 | CPU per request, engine / roadkit |",
        "|---|---:|---:|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        interval = (
            f"**{number(r['ratio']):.2f}** [{number(r['ratio_low']):.2f}, {number(r['ratio_high']):.2f}] ({number(r['coverage']):.0%})"
            if r["ratio"]
            else "n/a"
        )
        cpu = f"{number(r['engine_cpu_ms']):,.1f} / {number(r['roadkit_cpu_ms']):,.1f} ms" if r.get("engine_cpu_ms") else "n/a"
        lines.append(
            f"| {r['scenario']} | {int(r['edges']):,} | {r['concurrency']} | {r['engine']} | {number(r['engine_rps']):,.2f} | "
            f"{number(r['roadkit_rps']):,.2f} | {interval} | {number(r['engine_p50_ms']):,.1f} ms | {number(r['roadkit_p50_ms']):,.1f} ms "
            f"| {cpu} |"
        )
    return "\n".join(lines)


def preparation_table() -> str:
    """The preparation times and counts of every prepared network (``prepare.json``)."""
    lines = [
        "| edges asked | segments generated | PBF | OSRM (MLD) | Valhalla | pgRouting import | pgRouting ways / vertices "
        "| turn restrictions in pgRouting |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for path in sorted(networks().glob("*-seed*/prepare.json"), key=lambda p: int(p.parent.name.split("-")[0])):
        r = json.loads(path.read_text())
        pg = r.get("pgrouting")

        def seconds(key: str, r: dict[str, Any] = r) -> str:
            return f"{r[key]:,.0f} s" if key in r else "not built"

        counts = f"{pg['ways']:,} / {pg['vertices']:,} | {pg['restrictions']} of {r.get('restrictions', 0)}" if pg else "| "
        lines.append(
            f"| {int(path.parent.name.split('-')[0]):,} | {r.get('segments', 0):,} | {r.get('pbf_bytes', 0) / 1e3:,.0f} kB | "
            f"{seconds('osrm_s')} | {seconds('valhalla_s')} | {seconds('pgrouting_s')} | {counts} |"
        )
    return "\n".join(lines)


def write_docs(rows: list[dict[str, Any]]) -> None:
    """The tables between the ``scale-table`` markers of docs/benchmarks.md."""
    text = DOCS.read_text()
    begin, end = "<!-- scale-table:begin -->", "<!-- scale-table:end -->"
    if begin not in text or end not in text:
        print(f"{DOCS}: no {begin} ... {end} markers: the table is not written")
        return
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    DOCS.write_text(f"{head}{begin}\n{preparation_table()}\n\n{table(rows)}\n{end}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--prepare-only", action="store_true", help="build the data of the sizes (timed) and stop")
    parser.add_argument("--plot", action="store_true", help="only the plot and the docs' tables, from the CSV")
    parser.add_argument("--scenarios", nargs="+", default=[*SCENARIOS, "pgrouting-route", "pgrouting-isochrone", "pgrouting-matrix"])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=4, help="alternated rounds of each server")
    parser.add_argument("--duration", type=float, default=3.0, help="seconds of each round")
    parser.add_argument("--requests", type=int, default=200, help="distinct routes (isochrones, matrices: fewer)")
    parser.add_argument("--pg-requests", type=int, default=60, help="distinct pgRouting requests (each recorded first)")
    parser.add_argument("--workers", default="auto")
    parser.add_argument("--valhalla-limit", action="append", default=[], help='a line of the Valhalla source\'s [limits], e.g. "batch = 1"')
    parser.add_argument("--pool", type=int, default=8)
    args = parser.parse_args()
    if not args.plot:
        rows: list[dict[str, Any]] = []
        with database_cluster() as cluster:
            for edges in args.sizes:
                record = prepare(edges, cluster, pgrouting=any(s.startswith("pgrouting-") for s in args.scenarios))
                print(f"{edges}: prepared {json.dumps({k: v for k, v in record.items() if k.endswith('_s') or k == 'pgrouting'})}")
                if args.prepare_only:
                    continue
                for family in ("osrm", "valhalla"):
                    rows += measure_engine(family, record, args)
                rows += measure_pgrouting(record, cluster, args)
        if args.prepare_only:
            return
        save_rows(rows)
    merged = read_rows()
    png = plot(merged)
    shutil.copyfile(png, DOCS.parent / "assets" / png.name)  # the docs' copy: the site holds only docs/
    print(f"plot: {png}")
    write_docs(merged)


if __name__ == "__main__":
    main()
