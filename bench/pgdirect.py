"""The direct asyncpg replay of roadkit's pgRouting statements, and the CPU time of each party.

roadkit's pgRouting source runs once with a recording pool (:func:`record`): the statements it sends for
a request, the pool's reset query too when its pool runs one. :func:`direct_load` replays them with
asyncpg, pooled as roadkit's source pools its connections, and :class:`CpuMeter` gives the CPU time
per request of PostgreSQL, of roadkit's process tree and of this process. ``bench.bench_pgrouting``
(Monaco) and ``bench.scale`` (generated networks) compare roadkit with this replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg

from bench.common import Result
from roadkit_pgrouting import isochrones
from roadkit_pgrouting.database import SESSION_SETTINGS
from roadkit_pgrouting.source import PgRoutingSource

#: The source's time-out and the direct pool's statement time-out, seconds: a 100 x 100 matrix takes seconds
#: of PostgreSQL's CPU, several at once on a small machine longer than the source's default 10 s.
TIMEOUT = 60.0


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system) of a process and its descendants, those that exited included.

    A process's exited children count in its ``cutime``/``cstime`` once waited for (PostgreSQL's backends
    of a closed pool, for instance).
    """
    ticks = os.sysconf("SC_CLK_TCK")
    stats: dict[int, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        stats[int(stat.parent.name)] = text[text.rindex(")") + 2 :].split()
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        fields = stats.get(pid)
        if fields is None:
            continue
        # utime, stime, cutime, cstime: fields 14 to 17 of stat
        total += sum(int(f) for f in fields[11:15])
        todo.extend(children.get(pid, []))
    return total / ticks


def own_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process: the load generator or the direct client."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CpuMeter:
    """CPU time of PostgreSQL, of a server process tree (roadkit) and of this process (load generator or direct client)."""

    def __init__(self, postgres: int, server: int | None) -> None:
        self.roots = {"postgres": postgres, **({"roadkit": server} if server else {})}
        self.started: dict[str, float] = {}

    def start(self) -> None:
        self.started = {name: tree_cpu_seconds(pid) for name, pid in self.roots.items()}
        self.started["client"] = own_cpu_seconds()

    def per_request_ms(self, requests: int) -> dict[str, float]:
        now = {name: tree_cpu_seconds(pid) for name, pid in self.roots.items()}
        now["client"] = own_cpu_seconds()
        return {name: 1000 * (now[name] - self.started[name]) / max(requests, 1) for name in now}


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

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        self.statements.append(("fetchrow", sql, args))
        return await self.conn.fetchrow(sql, *args)

    async def use_statement_timeout(self, milliseconds: int) -> None:
        # Once per connection (the connection remembers it): the direct pool sets it once per connection too.
        await self.conn.use_statement_timeout(milliseconds)


class RecordingPool:
    """The source's pool, handing out recording connections: whatever roadkit sends is recorded, the
    pool's reset query too when its pool runs one as a connection goes back."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.recorders: list[Recorder] = []

    @contextlib.asynccontextmanager
    async def acquire(self, timeout: float | None = None) -> AsyncIterator[Recorder]:
        async with self.pool.acquire(timeout=timeout) as conn:
            recorder = Recorder(conn)
            self.recorders.append(recorder)
            yield recorder
            if self.pool._reset is None:  # asyncpg's default: Connection.reset() runs the reset query
                recorder.statements.append(("execute", conn._con.get_reset_query(), ()))


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
    name: str,
    requests: list[list[tuple[str, tuple[Any, ...]]]],
    dsn: str,
    pool_size: int,
    concurrency: int,
    duration: float,
    meter: CpuMeter,
) -> tuple[Result, dict[str, float]]:
    """The recorded statements replayed with asyncpg on one pooled connection per request, as roadkit runs them.

    The pool is set up as roadkit's (``roadkit_pgrouting.database``): its session settings (no JIT, a plan
    per statement), the statement time-out set once per connection, no reset query when a connection goes
    back (requests leave nothing on the session).
    """

    async def keep_session(connection: asyncpg.Connection) -> None:
        pass

    pool = await asyncpg.create_pool(
        dsn,
        min_size=pool_size,
        max_size=pool_size,
        reset=keep_session,
        server_settings={**SESSION_SETTINGS, "application_name": "direct", "statement_timeout": str(int(TIMEOUT * 1000))},
    )
    latencies: list[float] = []
    index = 0
    loop = asyncio.get_running_loop()

    def hulls(reached: list[bytes | None]) -> None:
        for points in reached:
            isochrones.hull(points)

    async def worker(stop_at: float) -> None:
        nonlocal index
        while time.perf_counter() < stop_at:
            statements = requests[index % len(requests)]
            index += 1
            started = time.perf_counter()
            async with pool.acquire() as conn:  # as roadkit: no transaction
                for method, sql, args in statements:
                    row = await getattr(conn, method)(sql, *args)
                    if isinstance(row, asyncpg.Record) and row.get("points") is not None:
                        # an isochrone: the hulls of the reached points, as roadkit's source computes them (a thread)
                        await loop.run_in_executor(None, hulls, row["points"])
            latencies.append((time.perf_counter() - started) * 1000)

    try:
        await asyncio.gather(*(worker(time.perf_counter() + 1.0) for _ in range(concurrency)))  # warm-up
        latencies.clear()
        index = 0  # from the first request, as the load generator's rounds: a slow matrix is one request a round
        meter.start()
        begin = time.perf_counter()
        await asyncio.gather(*(worker(begin + duration) for _ in range(concurrency)))
        elapsed = time.perf_counter() - begin
        cpu = meter.per_request_ms(len(latencies))
    finally:
        await pool.close()
    return Result(name, len(latencies), 0, elapsed, latencies), cpu
