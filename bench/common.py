"""Shared pieces of the benchmarks: the common settings, free ports, waiting for servers, the load generator,
paired rounds' statistics, CPU accounting, the report and py-spy's summary."""

from __future__ import annotations

import asyncio
import collections
import math
import os
import random
import socket
import statistics
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The repository (the benchmarks run from it: ``python -m bench.<module>``).
ROOT = Path(__file__).resolve().parents[1]
#: The Monaco example: its OSM extract, GTFS feed and demo configuration.
EXAMPLE = ROOT / "examples" / "monaco"
#: Where the sweep writes its CSV and PNG files.
RESULTS = ROOT / "bench" / "results"

MONACO_BBOX = (7.4090, 43.7240, 7.4390, 43.7500)  # the principality itself, where every point snaps to a road


# The cores this benchmark may use, read once at import: after pin_client() the benchmark's own
# affinity no longer includes the server core, and servers started from it must not inherit that.
CPUS = sorted(os.sched_getaffinity(0))
CORES = len(CPUS)


def cache_root() -> Path:
    """Where engine data built for the benchmarks is kept (``$ROADKIT_CACHE``, as the tests')."""
    return Path(os.environ.get("ROADKIT_CACHE", ROOT / ".cache"))


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


def http_200(status: int, body: bytes) -> bool:
    """The load generator's check of an answer: any 200."""
    return status == 200


def random_pairs(n: int, seed: int = 42) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    rng = random.Random(seed)
    xmin, ymin, xmax, ymax = MONACO_BBOX

    def point() -> tuple[float, float]:
        return (round(rng.uniform(xmin, xmax), 5), round(rng.uniform(ymin, ymax), 5))

    return [(point(), point()) for _ in range(n)]


def isochrone_points(n: int, seed: int = 7) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The sweep's isochrone centres in Monaco's box, as (point, unused) pairs like :func:`random_pairs`."""
    rng = random.Random(seed)
    xmin, ymin, xmax, ymax = MONACO_BBOX
    return [((round(rng.uniform(xmin, xmax), 5), round(rng.uniform(ymin, ymax), 5)), (0.0, 0.0)) for _ in range(n)]


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


@dataclass(frozen=True)
class Ratio:
    """The median of paired figures (roadkit / engine, or roadkit - engine, one pair per alternated
    round) and a distribution-free confidence interval for it: two order statistics of the sorted
    figures, chosen by the sign test (no assumption on the noise's shape), the narrowest pair whose
    coverage is at least 95 %. Fewer than 6 pairs cannot reach 95 %: the interval is then the least
    to the greatest figure, and ``coverage`` says how much less it covers (88 % with 4, 0 with 1)."""

    median: float
    low: float
    high: float
    coverage: float
    pairs: int

    def text(self) -> str:
        return f"{self.median:.3f} [{self.low:.3f}, {self.high:.3f}] ({self.coverage:.0%}, {self.pairs} rounds)"

    def verdict(self, target: float) -> str:
        """✓ when the whole interval reaches the target, ✗ when it is all below, ≈ when it holds it."""
        if self.low >= target:
            return "✓"
        return "✗" if self.high < target else "≈"

    def verdict_at_most(self, limit: float) -> str:
        """✓ when the whole interval is at or below ``limit`` (a p50 overhead), ✗ when it is all above, ≈ when it holds it."""
        if self.high <= limit:
            return "✓"
        return "✗" if self.low > limit else "≈"


def paired_ratio(ours: list[float], theirs: list[float]) -> Ratio:
    """:class:`Ratio` of ``ours[i] / theirs[i]`` over the rounds (same length, positive values)."""
    if not ours or len(ours) != len(theirs):
        raise ValueError(f"paired_ratio: {len(ours)} against {len(theirs)} rounds")
    return median_interval([a / b for a, b in zip(ours, theirs, strict=True)])


def paired_difference(ours: list[float], theirs: list[float]) -> Ratio:
    """:class:`Ratio` of ``ours[i] - theirs[i]`` over the rounds (same length): a p50 overhead, round by round."""
    if not ours or len(ours) != len(theirs):
        raise ValueError(f"paired_difference: {len(ours)} against {len(theirs)} rounds")
    return median_interval([a - b for a, b in zip(ours, theirs, strict=True)])


def median_interval(figures: list[float]) -> Ratio:
    """The median of ``figures`` (one per round) and its sign-test interval (see :class:`Ratio`)."""
    ordered = sorted(figures)
    n = len(ordered)
    # The interval [x(k), x(n-k+1)] misses the median with probability 2 * P(Binomial(n, 1/2) <= k - 1).
    k, coverage = 1, 1.0 - 2.0 * 0.5**n
    while k + 1 <= (n + 1) // 2:
        candidate = 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k + 1)) * 0.5**n
        if candidate < 0.95:
            break
        k, coverage = k + 1, candidate
    return Ratio(statistics.median(ordered), ordered[k - 1], ordered[n - k], coverage, n)


class _Connection:
    """One keep-alive HTTP/1.1 connection of the load generator: raw requests, responses read by
    Content-Length (or chunks). Far lighter than a full client, so that on a machine shared with
    the servers the load generator takes as little CPU as possible from them."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, raw: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        lowered = head.lower()
        at = lowered.find(b"\r\ncontent-length:")
        if at >= 0:
            body = await self.reader.readexactly(int(lowered[at + 17 : lowered.index(b"\r\n", at + 2)]))
        elif b"transfer-encoding: chunked" in lowered:
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                parts.append(await self.reader.readexactly(size + 2))
                if size == 0:
                    break
            body = b"".join(p[:-2] for p in parts)
        else:
            body = await self.reader.read()
        if b"\r\nconnection: close" in lowered or (at < 0 and b"chunked" not in lowered):
            self.close()
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def _raw_requests(urls: list[str]) -> tuple[str, int, list[bytes]]:
    parsed = urllib.parse.urlsplit(urls[0])
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 80
    raws = []
    for url in urls:
        part = urllib.parse.urlsplit(url)
        target = part.path + (f"?{part.query}" if part.query else "")
        raws.append(f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    return host, port, raws


async def _load(name: str, urls: list[str], concurrency: int, duration: float, check: Callable[[int, bytes], bool]) -> Result:
    latencies: list[float] = []
    errors = 0
    host, port, raws = _raw_requests(urls)
    stop_at = time.perf_counter() + duration
    index = 0

    async def worker() -> None:
        nonlocal index, errors
        connection = _Connection(host, port)
        try:
            while time.perf_counter() < stop_at:
                raw = raws[index % len(raws)]
                index += 1
                started = time.perf_counter()
                reused = connection.writer is not None
                try:
                    status, body = await connection.request(raw)
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    connection.close()
                    if not reused:
                        errors += 1
                        continue
                    # A kept-alive connection the server closed meanwhile (osrm-routed closes them
                    # after a number of requests): what every client does, once, on a new connection.
                    try:
                        status, body = await connection.request(raw)
                    except (OSError, asyncio.IncompleteReadError, ValueError):
                        connection.close()
                        errors += 1
                        continue
                latencies.append((time.perf_counter() - started) * 1000)
                if not check(status, body):
                    errors += 1
        finally:
            connection.close()

    begin = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - begin
    return Result(name, len(latencies), errors, elapsed, latencies or [float("nan")])


def _run(coroutine: Any) -> Any:
    try:
        import uvloop

        return uvloop.run(coroutine)
    except ImportError:
        return asyncio.run(coroutine)


def load(
    name: str, urls: list[str], *, concurrency: int, duration: float, check: Callable[[int, bytes], bool], warm_up: bool = True
) -> Result:
    """Send ``urls`` round-robin with ``concurrency`` keep-alive connections for ``duration`` seconds."""
    if warm_up:
        _run(_load(name, urls[:50], concurrency, 0.5, check))
    result: Result = _run(_load(name, urls, concurrency, duration, check))
    return result


def measure(
    name: str, urls: list[str], concurrencies: list[int], duration: float, check: Callable[[int, bytes], bool] = http_200
) -> dict[int, Result]:
    """One load run per concurrency against a server that is already up."""
    return {c: load(f"{name} c={c}", urls, concurrency=c, duration=duration, check=check) for c in concurrencies}


def session_cpu_seconds(session: int) -> float:
    """CPU seconds (user + system) used so far by the live processes of a session (a server and its workers).

    CPU time per request does not depend on what else the machine runs, unlike requests/s: on a
    shared machine it is the steadier comparison of two servers' costs.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        # fields[0] is the state (field 3 of stat): session is field 6, utime 14, stime 15
        if int(fields[3]) == session:
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def report(title: str, engine: Result, roadkit: Result, *, min_ratio: float, max_extra_p50_ms: float | None) -> None:
    ratio = roadkit.rps / engine.rps
    extra = roadkit.percentile(0.5) - engine.percentile(0.5)
    print(f"\n{title}")
    print(engine.line())
    print(roadkit.line())
    print(f"throughput ratio roadkit/engine: {ratio:.2f} (target >= {min_ratio})")
    print(f"p50 difference: {extra:+.2f} ms" + (f" (target <= +{max_extra_p50_ms} ms)" if max_extra_p50_ms is not None else ""))


def py_spy() -> str:
    """py-spy beside this interpreter (a virtual environment's), else on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else "py-spy"


def summarise(raw: Path, suspects: dict[str, str], top: int = 25) -> str:
    """From py-spy's raw output (``--format raw``): the inclusive share of each of ``suspects`` (name ->
    a substring of the frames, "file:function"), then the top functions by own samples."""
    total = 0
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        own[frames[-1]] += count
        for name, needle in suspects.items():
            if any(needle in frame for frame in frames):
                inclusive[name] += count
    lines = [f"{total} samples"]
    lines += [f"  {name:<34} {100 * inclusive[name] / max(total, 1):5.1f} %" for name in suspects if inclusive[name]]
    lines.append("top functions by own samples:")
    lines += [f"  {100 * n / max(total, 1):5.1f} %  {frame}" for frame, n in own.most_common(top)]
    return "\n".join(lines)
