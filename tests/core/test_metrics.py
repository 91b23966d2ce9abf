"""Prometheus metrics of a real service in two worker processes (the straight source): exact counts over both
workers, consistent histograms, bounded labels, totals kept across a worker's crash, sources' state."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from roadkit.config import load_server
from roadkit.process.administrator import Administrator
from roadkit.server import administrator
from roadkit.testing.services import straight_plugins, write_service
from tests.core.conftest import free_port
from tests.core.test_children import wait_for

ROOT = Path(__file__).resolve().parents[2]
# A worker that knows the straight kind (no installed plugin), whose source turns red while a file
# ``<source file>.red`` exists, as an engine that lost its data would.
WORKER = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from roadkit.plugins import Plugins
from roadkit.testing import straight

create = Plugins.create.__func__
Plugins.create = classmethod(lambda cls, **kw: create(cls, **{{**kw, "extra_plugins": (*kw.get("extra_plugins", ()), straight)}}))
health = straight.StraightSource.health

def marked(self):
    if self.config.path.with_suffix(".red").exists():
        self.fail("marked red by the test")
    return health(self)

straight.StraightSource.health = marked
from roadkit.process.worker import main
sys.exit(main())
"""
ROUTE = {"resource": "straight", "start": "2.35,48.85", "end": "2.36,48.86"}


class Running:
    def __init__(self, root: Path, admin: Administrator, service_port: int, admin_port: int, metrics_port: int) -> None:
        self.root = root
        self.admin = admin
        self.service = f"http://127.0.0.1:{service_port}"
        self.metrics_url = f"http://127.0.0.1:{admin_port}/admin/1.0.0/metrics"
        self.own_listener = f"http://127.0.0.1:{metrics_port}"

    async def scrape(self) -> dict[str, list[Sample]]:
        """Every sample of the scrape by metric family name (the text must parse)."""
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.get(self.metrics_url)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
        families = list(text_string_to_metric_families(answer.text))
        names = [family.name for family in families]
        assert len(names) == len(set(names)), names  # one family per name, whatever the number of workers
        return {family.name: family.samples for family in families}


def value(samples: dict[str, list[Sample]], family: str, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` of ``family`` whose labels include ``labels``."""
    return sum(s.value for s in samples.get(family, []) if s.name == name and labels.items() <= s.labels.items())


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[Running]:
    service_port, admin_port, metrics_port = free_port(), free_port(), free_port()
    service_file = write_service(tmp_path)
    service_file.write_text(service_file.read_text().replace("port = 8080", f"port = {service_port}"))
    (tmp_path / "server.toml").write_text(
        f"[administrator.listener]\nport = {admin_port}\n[administrator.metrics_listener]\nport = {metrics_port}\n"
        '[[services]]\nid = "main"\nconfiguration = "service.toml"\nmode = "child-process"\nworkers = 2\n'
        "[services.backoff]\ninitial = 0.2\nmax = 1.0\n"
    )
    admin = administrator(load_server(tmp_path / "server.toml"), straight_plugins())
    admin.handles["main"].command = [sys.executable, "-c", WORKER]  # type: ignore[attr-defined]
    await admin.start()
    try:
        yield Running(tmp_path, admin, service_port, admin_port, metrics_port)
    finally:
        await admin.stop()


async def send(url: str, requests: int, params: dict[str, str], *, parallel: int = 4) -> list[int]:
    """``requests`` GETs, each on a new connection (so that both workers answer some); their statuses."""
    statuses: list[int] = []
    left = list(range(requests))

    async def client() -> None:
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_keepalive_connections=0)) as http:
            while left:
                left.pop()
                statuses.append((await http.get(url, params=params)).status_code)

    await asyncio.gather(*(client() for _ in range(parallel)))
    return statuses


def check_histogram(samples: list[Sample], name: str, count: float, **labels: str) -> None:
    """The histogram's buckets never decrease, its +Inf bucket and its count are ``count``, its sum positive."""
    buckets = sorted(
        ((float(s.labels["le"]), s.value) for s in samples if s.name == f"{name}_bucket" and labels.items() <= s.labels.items()),
    )
    assert buckets and buckets[-1][0] == float("inf")
    values = [v for _, v in buckets]
    assert values == sorted(values), buckets
    assert values[-1] == count
    assert sum(s.value for s in samples if s.name == f"{name}_count" and labels.items() <= s.labels.items()) == count
    assert sum(s.value for s in samples if s.name == f"{name}_sum" and labels.items() <= s.labels.items()) > 0


async def test_counts_are_exact_over_two_workers_and_survive_a_worker_crash(running: Running) -> None:
    route = f"{running.service}/simple/1.0.0/route"
    assert await send(route, 40, ROUTE) == [200] * 40
    unknown = await send(route, 6, {**ROUTE, "resource": "no-such-resource"}) + await send(route, 4, {**ROUTE, "resource": "x" * 300})
    assert all(status >= 400 for status in unknown) and len(unknown) == 10
    async with httpx.AsyncClient(timeout=30) as http:
        posted = [
            (await http.post(route, json={"resource": "straight", "start": "2.35,48.85", "end": "2.36,48.86"})).status_code
            for _ in range(5)
        ]
        assert posted == [200] * 5
        assert (await http.get(f"{running.service}/simple/1.0.0/getcapabilities")).status_code == 200
        assert (await http.get(f"{running.service}/nowhere/{'y' * 50}")).status_code == 404
        workers = (await http.get(running.metrics_url.replace("/metrics", "/health?verbose=true"))).json()["services"][0]["workers"]
    assert len(workers) == 2 and all(w["connections"]["accepted"] > 0 for w in workers), workers  # both workers answered

    samples = await running.scrape()
    requests = samples["roadkit_requests"]
    labels = {"service": "main", "api": "simple", "operation": "route"}
    assert value(samples, "roadkit_requests", "roadkit_requests_total", **labels, resource="straight", status="200") == 45
    assert value(samples, "roadkit_requests", "roadkit_requests_total", **labels, resource="unknown") == 10
    assert value(samples, "roadkit_requests", "roadkit_requests_total", operation="getcapabilities", resource="none") == 1
    assert value(samples, "roadkit_requests", "roadkit_requests_total", api="unknown", operation="unknown", status="404") == 1
    # No label value comes from the request: only configured names and fixed words.
    assert {s.labels["resource"] for s in requests} <= {"straight", "unknown", "none"}
    assert {s.labels["operation"] for s in requests} <= {"route", "getcapabilities", "unknown"}
    check_histogram(samples["roadkit_request_duration_seconds"], "roadkit_request_duration_seconds", 45, **labels, resource="straight")
    check_histogram(samples["roadkit_request_duration_seconds"], "roadkit_request_duration_seconds", 10, **labels, resource="unknown")
    engine = {"service": "main", "source": "straight", "operation": "route"}
    check_histogram(samples["roadkit_engine_duration_seconds"], "roadkit_engine_duration_seconds", 45, **engine)
    assert value(samples, "roadkit_requests_in_flight", "roadkit_requests_in_flight", service="main") == 0
    assert value(samples, "roadkit_source_up", "roadkit_source_up", service="main", source="straight") == 1
    assert value(samples, "roadkit_dataset_info", "roadkit_dataset_info", service="main", source="straight") == 1
    pids = {w["pid"] for w in workers}
    assert {s.labels["pid"] for s in samples["roadkit_worker_cpu_seconds"]} == {str(pid) for pid in pids}
    assert all(s.value > 0 for s in samples["roadkit_worker_resident_memory_bytes"])
    assert value(samples, "roadkit_worker_restarts", "roadkit_worker_restarts_total", service="main") == 0

    # A worker killed: its counts stay in the totals, its restart is counted, the new one counts on.
    handle: Any = running.admin.handles["main"]
    victim = handle.workers[0].pid
    os.kill(victim, signal.SIGKILL)

    async def replaced() -> bool:
        return handle.lifecycle == "ready" and len(handle.workers) == 2 and victim not in {w.pid for w in handle.workers}

    await wait_for(replaced)
    assert await send(route, 20, ROUTE) == [200] * 20
    samples = await running.scrape()
    assert value(samples, "roadkit_requests", "roadkit_requests_total", **labels, resource="straight", status="200") == 65
    check_histogram(samples["roadkit_request_duration_seconds"], "roadkit_request_duration_seconds", 65, **labels, resource="straight")
    check_histogram(samples["roadkit_engine_duration_seconds"], "roadkit_engine_duration_seconds", 65, **engine)
    assert value(samples, "roadkit_worker_restarts", "roadkit_worker_restarts_total", service="main") == 1
    assert value(samples, "roadkit_requests_in_flight", "roadkit_requests_in_flight", service="main") == 0
    assert str(victim) not in {s.labels["pid"] for s in samples["roadkit_worker_cpu_seconds"]}
    # The folder holds the live workers' files and one archive of the exited ones' counts.
    folder = handle.metrics_folder.path
    live = {w.pid for w in handle.workers}
    assert {p.name for p in folder.iterdir()} == {
        "counter_archive.db",
        "histogram_archive.db",
        *(f"{kind}_{pid}.db" for kind in ("counter", "histogram", "gauge_livesum") for pid in live),
    }

    # A restart through the admin API (a new generation of workers): the totals go on.
    async with httpx.AsyncClient(timeout=60) as http:
        assert (await http.get(running.metrics_url.replace("/metrics", "/services/main/restart"))).status_code == 200
    assert not live & {w.pid for w in handle.workers}
    assert await send(route, 5, ROUTE) == [200] * 5
    samples = await running.scrape()
    assert value(samples, "roadkit_requests", "roadkit_requests_total", **labels, resource="straight", status="200") == 70
    check_histogram(samples["roadkit_engine_duration_seconds"], "roadkit_engine_duration_seconds", 70, **engine)
    assert value(samples, "roadkit_worker_restarts", "roadkit_worker_restarts_total", service="main") == 1


async def test_source_up_follows_a_source_turned_red(running: Running) -> None:
    samples = await running.scrape()
    assert value(samples, "roadkit_source_up", "roadkit_source_up", service="main", source="straight") == 1
    (running.root / "sources" / "straight.red").touch()
    samples = await running.scrape()
    assert value(samples, "roadkit_source_up", "roadkit_source_up", service="main", source="straight") == 0
    assert [s.labels["source"] for s in samples["roadkit_source_up"]] == ["straight"]


async def _held_body(release: asyncio.Event, sent: asyncio.Event) -> AsyncIterator[bytes]:
    yield b'{"resource": "straight", '
    sent.set()  # asked for the next chunk: the head and the first chunk are written
    await release.wait()
    yield b'"start": "2.35,48.85", "end": "2.36,48.86"}'


async def test_requests_in_flight_are_summed_over_the_workers(running: Running) -> None:
    release, sent = asyncio.Event(), [asyncio.Event(), asyncio.Event(), asyncio.Event()]
    url = f"{running.service}/simple/1.0.0/route"
    async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_keepalive_connections=0)) as http:
        held = [
            asyncio.create_task(http.post(url, content=_held_body(release, s), headers={"content-type": "application/json"})) for s in sent
        ]
        await asyncio.gather(*(s.wait() for s in sent))

        async def three() -> bool:
            samples = await running.scrape()
            return value(samples, "roadkit_requests_in_flight", "roadkit_requests_in_flight", service="main") == 3

        await wait_for(three)
        release.set()
        assert [(await answer).status_code for answer in held] == [200] * 3
    samples = await running.scrape()
    assert value(samples, "roadkit_requests_in_flight", "roadkit_requests_in_flight", service="main") == 0
    assert value(samples, "roadkit_requests", "roadkit_requests_total", operation="route", resource="straight", status="200") == 3


async def test_the_metrics_listener_serves_the_same_scrape_and_nothing_else(running: Running) -> None:
    assert await send(f"{running.service}/simple/1.0.0/route", 3, ROUTE) == [200] * 3
    async with httpx.AsyncClient(timeout=30) as http:
        own = await http.get(f"{running.own_listener}/metrics")
        assert own.status_code == 200 and own.headers["content-type"].startswith("text/plain; version=0.0.4")
        samples = {family.name: family.samples for family in text_string_to_metric_families(own.text)}
        assert value(samples, "roadkit_requests", "roadkit_requests_total", resource="straight", status="200") == 3
        for path in ("/", "/admin/1.0.0/health", "/metrics/x"):
            answer = await http.get(f"{running.own_listener}{path}")
            assert answer.status_code == 404 and "error" in answer.json(), path
        assert (await http.post(f"{running.own_listener}/metrics")).status_code == 405


def test_the_metrics_listener_setting_is_checked(tmp_path: Path) -> None:
    from roadkit.errors import ConfigurationError

    write_service(tmp_path)
    for listener, problem in (
        ("port = 8079", "administrator.metrics_listener.port: expected a port other than the admin listener's, got 8079"),
        ("port = 70000", "administrator.metrics_listener.port: expected a port between 1 and 65535, got 70000"),
        ('host = "not a host"', "administrator.metrics_listener.host: expected an IP address or a host name"),
    ):
        (tmp_path / "server.toml").write_text(
            f'[administrator.metrics_listener]\n{listener}\n[[services]]\nid = "main"\nconfiguration = "service.toml"\n'
        )
        with pytest.raises(ConfigurationError) as info:
            load_server(tmp_path / "server.toml")
        assert any(problem in p and "server.toml" in p for p in info.value.problems), info.value.problems


async def test_a_same_process_service_is_counted_in_the_administrators_own_values(tmp_path: Path) -> None:
    service_port, admin_port = free_port(), free_port()
    service_file = write_service(tmp_path)
    service_file.write_text(service_file.read_text().replace("port = 8080", f"port = {service_port}"))
    sid = f"inproc{os.getpid()}x{service_port}"  # this process's values outlive the test: a service id of its own
    (tmp_path / "server.toml").write_text(
        f'[administrator.listener]\nport = {admin_port}\n[[services]]\nid = "{sid}"\nconfiguration = "service.toml"\n'
        'mode = "same-process"\n'
    )
    admin = administrator(load_server(tmp_path / "server.toml"), straight_plugins())
    await admin.start()
    try:
        running = Running(tmp_path, admin, service_port, admin_port, 0)
        assert await send(f"{running.service}/simple/1.0.0/route", 7, ROUTE) == [200] * 7
        samples = await running.scrape()
        labels = {"service": sid, "api": "simple", "operation": "route", "resource": "straight"}
        assert value(samples, "roadkit_requests", "roadkit_requests_total", **labels, status="200") == 7
        check_histogram(samples["roadkit_request_duration_seconds"], "roadkit_request_duration_seconds", 7, **labels)
        engine = {"service": sid, "source": "straight", "operation": "route"}
        check_histogram(samples["roadkit_engine_duration_seconds"], "roadkit_engine_duration_seconds", 7, **engine)
        assert value(samples, "roadkit_requests_in_flight", "roadkit_requests_in_flight", service=sid) == 0
        assert value(samples, "roadkit_source_up", "roadkit_source_up", service=sid, source="straight") == 1
        assert [s.labels["worker"] for s in samples["roadkit_worker_cpu_seconds"] if s.labels["service"] == sid] == ["administrator"]
    finally:
        await admin.stop()


async def test_native_osrm_requests_are_labelled_by_resource_and_service(tmp_path: Path, osrm_example: Path) -> None:
    from tests.core.test_children import Example

    example = Example(tmp_path / "monaco", osrm_example)
    admin = example.administrator()
    await admin.start()
    try:
        base = f"{example.service}/osrm/1.0.0"
        points = "7.41337,43.72956;7.41983,43.73115"
        async with httpx.AsyncClient(timeout=30) as http:
            for path in (
                f"/monaco-osrm/route/v1/driving/{points}?overview=false",
                f"/monaco-osrm/car/shortest/route/v1/_/{points}",
                f"/monaco-osrm/table/v1/car/{points}",
                f"/no-such-resource/route/v1/driving/{points}",
                f"/monaco-osrm/{'z' * 40}/v1/driving/{points}",
            ):
                await http.get(base + path)
            scraped = await http.get(f"{example.admin}/metrics")
        samples = {family.name: family.samples for family in text_string_to_metric_families(scraped.text)}
        osrm = {"service": "main", "api": "osrm"}
        assert value(samples, "roadkit_requests", "roadkit_requests_total", **osrm, resource="monaco-osrm", operation="route") == 2
        assert value(samples, "roadkit_requests", "roadkit_requests_total", **osrm, resource="monaco-osrm", operation="table") == 1
        assert value(samples, "roadkit_requests", "roadkit_requests_total", **osrm, resource="unknown", operation="route") == 1
        assert value(samples, "roadkit_requests", "roadkit_requests_total", **osrm, resource="monaco-osrm", operation="unknown") == 1
        assert value(samples, "roadkit_engine_duration_seconds", "roadkit_engine_duration_seconds_count", service="main") >= 3
    finally:
        await admin.stop()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (b"resource=straight&start=1,2", "straight"),
        (b"start=1,2&resource=a%20b", "a b"),
        (b"resource=a+b", "a b"),
        (b"xresource=no&start=1,2", None),
        (b"", None),
        (b"resource=", ""),
    ],
)
def test_the_resource_label_is_read_from_the_query_string(query: bytes, expected: str | None) -> None:
    from roadkit.serving.metrics import query_resource

    assert query_resource(query) == expected
