"""Shared pieces of the benchmarks: free ports, waiting for servers, the load generator, the report."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import statistics
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

MONACO_BBOX = (7.4090, 43.7240, 7.4390, 43.7500)  # the principality itself, where every point snaps to a road


# The cores this benchmark may use, read once at import: after pin_client() the benchmark's own
# affinity no longer includes the server core, and servers started from it must not inherit that.
CPUS = sorted(os.sched_getaffinity(0))


def pin_server() -> None:
    """Servers run on the last core (same core for the engine's server and roadkit)."""
    os.sched_setaffinity(0, {CPUS[-1]})


def pin_client() -> None:
    """The load generator runs on the other cores, so it never competes with the server."""
    if len(CPUS) > 1:
        os.sched_setaffinity(0, set(CPUS[:-1]))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, timeout: float = 60.0, ok: tuple[int, ...] = (200,)) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status in ok:
                    return
        except Exception:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer in {timeout} s")


def random_pairs(n: int, seed: int = 42) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    rng = random.Random(seed)
    xmin, ymin, xmax, ymax = MONACO_BBOX

    def point() -> tuple[float, float]:
        return (round(rng.uniform(xmin, xmax), 5), round(rng.uniform(ymin, ymax), 5))

    return [(point(), point()) for _ in range(n)]


@dataclass
class Result:
    name: str
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p))]

    def line(self) -> str:
        return (
            f"{self.name:<22} {self.rps:9.1f} req/s  p50 {self.percentile(0.5):7.2f} ms  "
            f"p99 {self.percentile(0.99):7.2f} ms  mean {statistics.fmean(self.latencies_ms):6.2f} ms  errors {self.errors}"
        )


async def _load(name: str, urls: list[str], concurrency: int, duration: float, check: Callable[[int, bytes], bool]) -> Result:
    latencies: list[float] = []
    errors = 0
    stop_at = time.perf_counter() + duration
    index = 0
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal index, errors
            while time.perf_counter() < stop_at:
                url = urls[index % len(urls)]
                index += 1
                started = time.perf_counter()
                async with session.get(url) as response:
                    body = await response.read()
                latencies.append((time.perf_counter() - started) * 1000)
                if not check(response.status, body):
                    errors += 1

        begin = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - begin
    return Result(name, len(latencies), errors, elapsed, latencies)


def load(name: str, urls: list[str], *, concurrency: int, duration: float, check: Callable[[int, bytes], bool]) -> Result:
    """Send ``urls`` round-robin with ``concurrency`` connections for ``duration`` seconds."""
    asyncio.run(_load(name, urls[:50], concurrency, 1.0, check))  # warm-up
    return asyncio.run(_load(name, urls, concurrency, duration, check))


def report(title: str, engine: Result, roadkit: Result, *, min_ratio: float, max_extra_p50_ms: float | None) -> None:
    ratio = roadkit.rps / engine.rps
    extra = roadkit.percentile(0.5) - engine.percentile(0.5)
    print(f"\n{title}")
    print(engine.line())
    print(roadkit.line())
    print(f"throughput ratio roadkit/engine: {ratio:.2f} (target >= {min_ratio})")
    print(f"p50 difference: {extra:+.2f} ms" + (f" (target <= +{max_extra_p50_ms} ms)" if max_extra_p50_ms is not None else ""))
