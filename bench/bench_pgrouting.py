"""roadkit's pgRouting source against the same SQL run directly with asyncpg, then route time against graph size.

Run with ``./dev bench`` (or ``python bench/bench_pgrouting.py [--duration S] [--concurrency N...] [--pool P]
[--sizes ...]``). A private PostgreSQL cluster (``roadkit.pgcluster``) holds the Monaco graph (the
cached dump of the tests, imported when missing).

1. Overhead: roadkit serves the monaco graph over HTTP (one process pinned on the server core,
   pool of P connections); the direct client replays, with asyncpg and a pool of P connections,
   the very statements roadkit sent for each request (recorded through the source once). Same random
   Monaco pairs and points, car routes with steps and 5-minute car isochrones, 1 and 8 clients.
   Same cores: the direct client runs pinned on the server core, where roadkit runs (the HTTP load
   generator gets the other core); PostgreSQL is not pinned, so it has both cores on either side.
   Rounds alternate direct and roadkit (``--rounds``); the best round of each is reported.
2. Scale: synthetic grid graphs of about 10 k, 100 k and 1 M edges written in the same schema
   (100 m blocks, every tenth street a main road); p50 of ~10 km car routes through the source.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
from common import MONACO_BBOX, Result, free_port, load, pin_client, pin_server, random_pairs, report, wait_http

from roadkit.config.loader import read_source
from roadkit.model import Cost, IsochroneRequest, RouteRequest
from roadkit.pgcluster import private_cluster
from roadkit_pgrouting.importer import import_osm
from roadkit_pgrouting.options import DatabaseFile
from roadkit_pgrouting.source import PgRoutingSource

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "monaco"
sys.path.insert(0, str(ROOT))
COSTS = """
[[costs]]
profile = "car"
optimization = "fastest"
cost_type = "time"
cost_column = "cost_s_car"
reverse_cost_column = "reverse_cost_s_car"
"""


def monaco_graph(dsn: str, bindir: Path) -> None:
    """The Monaco graph in schema ``monaco``: the tests' cached dump, or a fresh import."""
    from tests.engine_c.conftest import cache_root, import_key

    dump = cache_root() / f"pgrouting-monaco-{import_key()}.dump"
    if dump.exists():
        subprocess.run([str(bindir / "pg_restore"), "--no-owner", "-d", dsn, str(dump)], check=True)
    else:
        import_osm(EXAMPLE / "monaco.osm.pbf", DatabaseFile(dsn=dsn), "monaco")


def write_config(workdir: Path, dsn: str, schema: str, pool: int, service_port: int, admin_port: int) -> Path:
    """A server file serving one pgrouting source and resource on free ports."""
    (workdir / "sources").mkdir(exist_ok=True)
    (workdir / "resources").mkdir(exist_ok=True)
    (workdir / "db.toml").write_text(f'dsn = "{dsn}"\npool_size = {pool}\n')
    (workdir / "sources" / "pg.source").write_text(
        f'id = "pg"\ntype = "pgrouting"\nprojection = "EPSG:4326"\n[storage]\ndatabase = "../db.toml"\nschema = "{schema}"\n'
        f'importance_column = "importance"\n{COSTS}'
    )
    (workdir / "resources" / "pg.resource").write_text(
        'id = "monaco"\ntype = "pgrouting"\nsources = '
        '["pg"]\n[operations.route]\n[operations.isochrone]\ncostValue = { min = 1, max = 3600 }\n'
    )
    (workdir / "service.toml").write_text(
        f'[application]\nname = "bench"\ntitle = "bench"\ndescription = "bench"\n[[listeners]]\nport = {service_port}\n'
        '[folders]\nsources = ["sources"]\nresources = ["resources"]\n'
    )
    server = workdir / "server.toml"
    server.write_text(
        f'[administrator]\n[administrator.listener]\nport = {admin_port}\n[administrator.logging]\nlevel = "warning"\n'
        '[[services]]\nid = "main"\nconfiguration = "service.toml"\nmode = "same-process"\n'
    )
    return server


class Recorder:
    """A connection stand-in that runs every statement and keeps it, so the direct client replays them."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self.statements: list[tuple[str, str, tuple[Any, ...]]] = []

    async def execute(self, sql: str, *args: Any) -> Any:
        self.statements.append(("execute", sql, args))
        return await self.conn.execute(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> Any:
        self.statements.append(("fetch", sql, args))
        return await self.conn.fetch(sql, *args)


class RecordingPool:
    """The source's pool, handing out recording connections: whatever roadkit sends is recorded."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.recorders: list[Recorder] = []

    @contextlib.asynccontextmanager
    async def acquire(self, timeout: float | None = None) -> AsyncIterator[Recorder]:
        async with self.pool.acquire(timeout=timeout) as conn:
            recorder = Recorder(conn)
            self.recorders.append(recorder)
            yield recorder


async def record(source: PgRoutingSource, call: Any) -> list[tuple[str, str, tuple[Any, ...]]] | None:
    """The statements of one request (None when it fails, e.g. no path)."""
    database = source._database
    assert database is not None
    original = database.pool
    recording = RecordingPool(original)
    database.pool = recording  # type: ignore[assignment]
    try:
        await call
    except Exception:
        return None
    finally:
        database.pool = original
    return [s for r in recording.recorders for s in r.statements]


async def direct_load(
    name: str, requests: list[list[tuple[str, tuple[Any, ...]]]], dsn: str, pool_size: int, concurrency: int, duration: float
) -> Result:
    """The recorded statements replayed with asyncpg on one pooled connection per request, as roadkit runs them."""
    pool = await asyncpg.create_pool(dsn, min_size=pool_size, max_size=pool_size)
    latencies: list[float] = []
    index = 0

    async def worker(stop_at: float) -> None:
        nonlocal index
        while time.perf_counter() < stop_at:
            statements = requests[index % len(requests)]
            index += 1
            started = time.perf_counter()
            async with pool.acquire() as conn:  # as roadkit: no transaction, settings cleared by the pool's reset
                for method, sql, args in statements:
                    await (conn.execute(sql, *args) if method == "execute" else conn.fetch(sql, *args))
            latencies.append((time.perf_counter() - started) * 1000)

    try:
        await asyncio.gather(*(worker(time.perf_counter() + 1.0) for _ in range(concurrency)))  # warm-up
        latencies.clear()
        begin = time.perf_counter()
        await asyncio.gather(*(worker(begin + duration) for _ in range(concurrency)))
        elapsed = time.perf_counter() - begin
    finally:
        await pool.close()
    return Result(name, len(latencies), 0, elapsed, latencies)


async def recorded_requests(workdir: Path, pairs: list[Any], points: list[Any]) -> tuple[dict[str, list[Any]], dict[str, list[str]]]:
    """Per operation, the statements of each request that succeeded, and roadkit's URL for the same request."""
    source = PgRoutingSource.from_config(read_source(workdir / "sources" / "pg.source"))
    assert isinstance(source, PgRoutingSource)
    await source.connect()
    statements: dict[str, list[Any]] = {"route": [], "isochrone": []}
    kept: dict[str, list[Any]] = {"route": [], "isochrone": []}
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
    }


GRID_SQL = """
DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};
CREATE TABLE {schema}.ways_vertices_pgr AS
  SELECT i * {n} + j + 1 AS id, ST_SetSRID(ST_MakePoint(7.0 + j * {step}, 44.0 + i * {step}), 4326) AS the_geom
  FROM generate_series(0, {n} - 1) i, generate_series(0, {n} - 1) j;
CREATE TABLE {schema}.ways AS
  WITH e AS (
    SELECT i * {n} + j + 1 AS source, i * {n} + j + 2 AS target, i AS line FROM generate_series(0, {n} - 1) i, generate_series(0, {n} - 2) j
    UNION ALL
    SELECT i * {n} + j + 1, (i + 1) * {n} + j + 1, j FROM generate_series(0, {n} - 2) i, generate_series(0, {n} - 1) j
  )
  SELECT row_number() OVER () AS id, e.source, e.target, 'street ' || e.line AS name,
         CASE WHEN e.line % 10 = 0 THEN 1 ELSE 5 END AS importance,
         ST_MakeLine(s.the_geom, t.the_geom) AS the_geom
  FROM e JOIN {schema}.ways_vertices_pgr s ON s.id = e.source JOIN {schema}.ways_vertices_pgr t ON t.id = e.target;
ALTER TABLE {schema}.ways ADD COLUMN length_m float8, ADD COLUMN cost_s_car float8, ADD COLUMN reverse_cost_s_car float8,
  ADD COLUMN cost_m_car float8, ADD COLUMN reverse_cost_m_car float8;
UPDATE {schema}.ways SET length_m = ST_Length(the_geom::geography);
UPDATE {schema}.ways SET cost_m_car = length_m, reverse_cost_m_car = length_m,
  cost_s_car = length_m * 3.6 / (CASE WHEN importance = 1 THEN 70 ELSE 30 + (id % 5) * 5 END),
  reverse_cost_s_car = length_m * 3.6 / (CASE WHEN importance = 1 THEN 70 ELSE 30 + (id % 5) * 5 END);
ALTER TABLE {schema}.ways ADD PRIMARY KEY (id);
ALTER TABLE {schema}.ways_vertices_pgr ADD PRIMARY KEY (id);
CREATE INDEX ON {schema}.ways USING gist (the_geom);
CREATE INDEX ON {schema}.ways (importance);
CREATE INDEX ON {schema}.ways_vertices_pgr USING gist (the_geom);
ANALYZE {schema}.ways; ANALYZE {schema}.ways_vertices_pgr;
"""


async def scale(dsn: str, workdir: Path, edges: int, routes: int) -> tuple[int, float, float]:
    """(edges, p50 ms, mean route km) of ~10 km routes on a synthetic grid of about ``edges`` edges."""
    n = max(10, round(math.sqrt(edges / 2)))
    step = 0.0009  # about 100 m north-south, 65 m east-west at 44° N
    schema = f"grid_{edges}"
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(GRID_SQL.format(schema=schema, n=n, step=step))
        count = int(await conn.fetchval(f"SELECT count(*) FROM {schema}.ways"))
    finally:
        await conn.close()
    source_file = workdir / "sources" / f"{schema}.source"
    source_file.write_text(
        f'id = "{schema}"\ntype = "pgrouting"\nprojection = "EPSG:4326"\ntimeout = 60.0\n[storage]\n'
        f'database = "../db.toml"\nschema = "{schema}"\nimportance_column = "importance"\n{COSTS}'
    )
    source = PgRoutingSource.from_config(read_source(source_file))
    assert isinstance(source, PgRoutingSource)
    await source.connect()
    rng = random.Random(3)
    span = (n - 1) * step
    latencies, lengths = [], []
    try:
        for _ in range(routes):
            # ~10 km by road: 5.5 km north (61 blocks) and 4.5 km east (69 blocks) when the grid is large enough.
            dy, dx = min(span * 0.9, 0.05), min(span * 0.9, 0.062)
            x0 = 7.0 + rng.uniform(0, span - dx)
            y0 = 44.0 + rng.uniform(0, span - dy)
            started = time.perf_counter()
            result = await source.route(RouteRequest(((x0, y0), (x0 + dx, y0 + dy)), Cost("car", "fastest"), steps=True))
            latencies.append((time.perf_counter() - started) * 1000)
            lengths.append(result.distance / 1000)
    finally:
        await source.disconnect()
    return count, statistics.median(latencies), statistics.fmean(lengths)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--pool", type=int, default=8, help="connections of both clients' pools")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--scale-routes", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds; the best round of each side is reported")
    parser.add_argument("--ops", nargs="+", default=["route", "isochrone"], choices=["route", "isochrone"])
    args = parser.parse_args()

    with private_cluster() as cluster, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        dsn = cluster.create_database("bench", ("postgis", "pgrouting", "hstore"))
        monaco_graph(dsn, cluster.bindir)
        service_port, admin_port = free_port(), free_port()
        server = write_config(workdir, dsn, "monaco", args.pool, service_port, admin_port)
        pairs = random_pairs(args.requests)
        rng = random.Random(11)
        xmin, ymin, xmax, ymax = MONACO_BBOX
        points = [(round(rng.uniform(xmin, xmax), 5), round(rng.uniform(ymin, ymax), 5)) for _ in range(args.requests)]
        statements, kept = asyncio.run(recorded_requests(workdir, pairs, points))
        urls = roadkit_urls(service_port, kept)
        pin_client()
        serve = subprocess.Popen(
            [sys.executable, "-m", "roadkit.cli", "serve", str(server)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pin_server,
        )
        results: dict[tuple[str, int], tuple[Result, Result]] = {}
        ratios: dict[tuple[str, int], list[float]] = {}
        try:
            wait_http(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health")
            for op in args.ops:
                for c in args.concurrency:
                    for round_ in range(args.rounds):
                        # The direct client issues the SQL from the server core, as roadkit does.
                        pin_server()
                        direct = asyncio.run(direct_load(f"asyncpg direct {op} c={c}", statements[op], dsn, args.pool, c, args.duration))
                        pin_client()
                        ours = load(
                            f"roadkit {op} c={c}", urls[op], concurrency=c, duration=args.duration, check=lambda status, body: status == 200
                        )
                        print(
                            f"round {round_ + 1}: {op} c={c}: direct {direct.rps:.1f} req/s p50 {direct.percentile(0.5):.2f} ms, "
                            f"roadkit {ours.rps:.1f} req/s p50 {ours.percentile(0.5):.2f} ms, ratio {ours.rps / direct.rps:.2f}",
                            flush=True,
                        )
                        ratios.setdefault((op, c), []).append(ours.rps / direct.rps)
                        best = results.get((op, c))
                        results[(op, c)] = (
                            direct if best is None or direct.rps > best[0].rps else best[0],
                            ours if best is None or ours.rps > best[1].rps else best[1],
                        )
        finally:
            serve.terminate()
            serve.wait()
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
        print(f"\n{len(kept['route'])} Monaco routes and {len(kept['isochrone'])} isochrone points; pool of {args.pool} on both sides")
        for (op, c), (direct, ours) in results.items():
            what = "car routes with steps" if op == "route" else "5-minute car isochrones"
            report(f"Monaco {what}, {c} client(s)", direct, ours, min_ratio=0.8, max_extra_p50_ms=2.0)
            rounds = ratios[(op, c)]
            print(
                f"per-round ratios {' '.join(f'{r:.2f}' for r in rounds)}, median {statistics.median(rounds):.2f}"
                " (a loaded machine: trust the median more than the best rounds)"
            )
        print("\nScale: ~10 km car routes on synthetic grids (same schema), through the source")
        for size in args.sizes:
            count, p50, km = asyncio.run(scale(dsn, workdir, size, args.scale_routes))
            print(
                f"{count:>9} edges: route p50 {p50:8.1f} ms (mean route {km:.1f} km)"
                + ("  (target <= 200 ms)" if size >= 1_000_000 else "")
            )


if __name__ == "__main__":
    main()
