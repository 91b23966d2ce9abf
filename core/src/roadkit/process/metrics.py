"""The administrator's Prometheus scrape: every service's metrics summed over its workers, its sources' state,
its worker restarts and each worker process's CPU time and memory.

A child-process service has a metrics folder of its own (:class:`MetricsFolder`): its workers write
their values there (prometheus-client's multiprocess mode, one set of files per process), so a
scrape sums every worker's, a dead worker's counts included, and a worker's restart loses nothing.
The sources' state and data version come from the services' health answers at scrape time.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from roadkit.serving.metrics import REGISTRY
from roadkit.web.api import http_exception_handler, server_error_handler
from roadkit.web.security import SecurityHeaders

#: The environment variable that puts a worker's metrics in its service's folder (prometheus-client's).
FOLDER_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
#: The content type of a scrape (Prometheus's text format 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class MetricsFolder:
    """A child-process service's folder of metrics files, owned (made, cleaned, removed) by the administrator."""

    def __init__(self) -> None:
        # A new private folder (0700): nothing left from an earlier run is counted.
        self.path = Path(tempfile.mkdtemp(prefix="roadkit-metrics-"))
        #: The counts of exited workers, by kind of file: a scrape reads them as one more process's.
        self._archives: dict[str, MmapedDict] = {}

    def environment(self) -> dict[str, str]:
        """What a worker's environment needs for its values to go to this folder."""
        return {FOLDER_VARIABLE: str(self.path)}

    def process_exited(self, pid: int) -> None:
        """An exited worker's counters and histograms moved into the folder's archive, its in-flight gauge dropped.

        The sums stay the same, and the folder holds the files of the live workers and one archive,
        however many workers came and went.
        """
        mark_process_dead(pid, str(self.path))  # type: ignore[no-untyped-call]
        for kind in ("counter", "histogram"):
            exited = self.path / f"{kind}_{pid}.db"
            if not exited.exists():
                continue
            archive = self._archives.get(kind)
            if archive is None:
                archive = self._archives[kind] = MmapedDict(str(self.path / f"{kind}_archive.db"))  # type: ignore[no-untyped-call]
            for key, value, _, _ in MmapedDict.read_all_values_from_file(str(exited)):  # type: ignore[no-untyped-call]
                total, _ = archive.read_value(key)  # type: ignore[no-untyped-call]
                archive.write_value(key, total + value, 0.0)  # type: ignore[no-untyped-call]
            exited.unlink()

    def collect(self) -> Iterable[Metric]:
        families: Iterable[Metric] = MultiProcessCollector(None, path=str(self.path)).collect()  # type: ignore[no-untyped-call]
        return families

    def remove(self) -> None:
        for archive in self._archives.values():
            archive.close()  # type: ignore[no-untyped-call]
        self._archives.clear()
        shutil.rmtree(self.path, ignore_errors=True)


def process_usage(pid: int) -> tuple[float, int] | None:
    """A process's CPU time (user + system, seconds) and resident memory (bytes), from ``/proc``; None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # Fields after the command's closing parenthesis, from field 3 (state): utime is 14, stime 15, rss 24.
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS, int(fields[21]) * _PAGE_SIZE


def process_memory(pid: int) -> dict[str, int] | None:
    """A process's proportional (PSS) and unique (USS) memory in bytes, from ``/proc/<pid>/smaps_rollup``; None if unreadable.

    PSS counts each shared page divided among the processes that map it (the workers' sum is what they
    cost together); USS counts the pages no other process maps (what stopping this one would free).
    """
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            lines = rollup.read().splitlines()
    except OSError:
        return None
    kib = {}
    for line in lines:
        name, _, rest = line.partition(b":")
        fields = rest.split()
        if len(fields) == 2 and fields[1] == b"kB":
            kib[name.decode()] = int(fields[0])
    if "Pss" not in kib:
        return None
    return {"pss": kib["Pss"] * 1024, "uss": (kib.get("Private_Clean", 0) + kib.get("Private_Dirty", 0)) * 1024}


class Scraped(Protocol):
    """What a scrape reads of a managed service (a :class:`~roadkit.process.handle.ServiceHandle`)."""

    @property
    def id(self) -> str: ...
    @property
    def metrics_folder(self) -> MetricsFolder | None: ...
    @property
    def worker_restarts(self) -> int: ...
    async def health(self) -> dict[str, Any]: ...
    def processes(self) -> list[tuple[str, int]]: ...


class _Families:
    """A collector that gives metric families already collected."""

    def __init__(self, families: Sequence[Metric]) -> None:
        self.families = families

    def collect(self) -> Sequence[Metric]:
        return self.families


async def scrape(handles: Iterable[Scraped]) -> bytes:
    """The Prometheus text of every service of ``handles`` (and of this process's own values)."""
    handles = list(handles)
    healths = await asyncio.gather(*(handle.health() for handle in handles), return_exceptions=True)
    merged: dict[str, Metric] = {}

    def add(families: Iterable[Metric]) -> None:
        # One family per name: the same metric comes from this process and from each service's folder.
        for family in families:
            known = merged.get(family.name)
            if known is None:
                known = merged[family.name] = Metric(family.name, family.documentation, family.type, family.unit)
            known.samples.extend(family.samples)

    # This process's own values are its same-process services' requests (a child-process service's are in
    # its folder; an app embedded in this process, or an earlier administrator's service, is not one of them).
    same_process = {handle.id for handle in handles if handle.metrics_folder is None}
    for family in REGISTRY.collect():
        family.samples = [sample for sample in family.samples if sample.labels.get("service") in same_process]
        add([family])
    for handle in handles:
        folder = handle.metrics_folder
        if folder is not None:
            add(folder.collect())
    add(_sources(handles, healths))
    add(_processes(handles))
    restarts = CounterMetricFamily("roadkit_worker_restarts", "Worker processes started again after an unexpected exit", labels=["service"])
    for handle in handles:
        restarts.add_metric([handle.id], float(handle.worker_restarts))
    add([restarts])
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(list(merged.values())))  # type: ignore[arg-type]
    return generate_latest(registry)


def metrics_app(metrics: Callable[[], Awaitable[bytes]]) -> Starlette:
    """The app of ``[administrator.metrics_listener]``: ``GET /metrics`` only (any other path a JSON 404)."""

    async def scrape(request: Request) -> Response:
        return Response(await metrics(), headers={"content-type": CONTENT_TYPE, "cache-control": "no-store"})

    app = Starlette(
        routes=[Route("/metrics", scrape, methods=["GET"])],
        exception_handlers={HTTPException: http_exception_handler, Exception: server_error_handler},
    )
    app.add_middleware(SecurityHeaders)
    return app


def _sources(handles: Sequence[Scraped], healths: Sequence[Any]) -> list[Metric]:
    up = GaugeMetricFamily("roadkit_source_up", "1 when the source is green in every worker, 0 otherwise", labels=["service", "source"])
    info = GaugeMetricFamily("roadkit_dataset_info", "The data version of each source (value 1)", labels=["service", "source", "version"])
    for handle, health in zip(handles, healths, strict=True):
        if not isinstance(health, dict):
            continue
        for source in health.get("sources") or ():
            if not isinstance(source, dict) or "id" not in source:
                continue
            sid = str(source["id"])
            up.add_metric([handle.id, sid], 1.0 if source.get("state") == "green" else 0.0)
            info.add_metric([handle.id, sid, str(source.get("version") or "unknown")], 1.0)
    return [up, info]


def _processes(handles: Sequence[Scraped]) -> list[Metric]:
    labels = ["service", "worker", "pid"]
    cpu = CounterMetricFamily("roadkit_worker_cpu_seconds", "CPU time (user and system) of each worker process", labels=labels)
    memory = GaugeMetricFamily("roadkit_worker_resident_memory_bytes", "Resident memory of each worker process", labels=labels)
    for handle in handles:
        for worker, pid in handle.processes():
            usage = process_usage(pid)
            if usage is not None:
                cpu.add_metric([handle.id, worker, str(pid)], usage[0])
                memory.add_metric([handle.id, worker, str(pid)], float(usage[1]))
    return [cpu, memory]
