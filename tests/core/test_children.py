"""Services in child processes on the real OSRM Monaco data: health over the channel, crashes, restarts."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from roadkit.config import load_server
from roadkit.config.allocator import preload
from roadkit.process.administrator import Administrator
from roadkit.process.children import ChildProcessService
from roadkit.server import administrator
from tests.core.conftest import free_port

ROUTE = {"resource": "monaco-osrm", "start": "7.41337,43.72956", "end": "7.41983,43.73115"}


class Example:
    """A copy of the OSRM Monaco example on free ports, with the managed-service settings given."""

    def __init__(self, root: Path, osrm_example: Path, **managed: Any) -> None:
        shutil.copytree(osrm_example, root, symlinks=True)
        self.root = root
        self.admin_port, self.service_port = free_port(), free_port()
        service = root / "service.toml"
        service.write_text(re.sub(r"port = 8080", f"port = {self.service_port}", service.read_text()))
        settings = {"mode": '"child-process"', "workers": "2", **{k: _toml(v) for k, v in managed.items()}}
        lines = "\n".join(f"{key} = {value}" for key, value in settings.items())
        (root / "server.toml").write_text(
            f'[administrator]\ncors = "cors.toml"\n[administrator.listener]\nport = {self.admin_port}\n'
            '[administrator.logging]\nfile = "roadkit.log"\n'
            f'[[services]]\nid = "main"\nconfiguration = "service.toml"\n{lines}\n'
            "[services.backoff]\ninitial = 0.2\nmax = 1.0\n"
        )
        self.admin = f"http://127.0.0.1:{self.admin_port}/admin/1.0.0"
        self.service = f"http://127.0.0.1:{self.service_port}"

    def administrator(self) -> Administrator:
        return administrator(load_server(self.root / "server.toml"))


def _toml(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


async def wait_for(predicate: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = await predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout} s")
        await asyncio.sleep(0.05)


async def health(client: httpx.AsyncClient, example: Example) -> dict[str, Any]:
    response = await client.get(f"{example.admin}/health?verbose=true")
    body: dict[str, Any] = response.json()
    assert response.status_code == (200 if body["state"] == "green" else 503)
    return body


async def green(client: httpx.AsyncClient, example: Example) -> bool:
    return (await health(client, example))["state"] == "green"


@pytest.fixture
async def running(
    request: pytest.FixtureRequest, tmp_path: Path, osrm_example: Path
) -> AsyncIterator[tuple[Example, Administrator, httpx.AsyncClient]]:
    example = Example(tmp_path / "monaco", osrm_example)
    http_server = getattr(request, "param", None)  # the default server unless a test names one
    if http_server is not None:
        service = example.root / "service.toml"
        service.write_text(service.read_text() + f'\n[http]\nserver = "{http_server}"\n')
    admin = example.administrator()
    await admin.start()
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            yield example, admin, client
    finally:
        await admin.stop()


def pids(admin: Administrator) -> list[int]:
    return [p["pid"] for p in admin.handle("main").describe()["processes"]]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie is gone too (its parent has not reaped it yet).
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z" if Path(f"/proc/{pid}/stat").exists() else True


class Load:
    """Clients sending routes, each on a new connection, counting answers and failures."""

    def __init__(self, url: str, clients: int = 4, *, keepalive: bool = False) -> None:
        self.url = url
        self.keepalive = keepalive
        self.ok = 0
        self.failures: list[str] = []
        self._stop = asyncio.Event()
        self._tasks = [asyncio.create_task(self._client()) for _ in range(clients)]

    async def _client(self) -> None:
        # Without keep-alive every request opens a connection (a listener closed too early shows);
        # with it, requests go on connections a stopping worker must not close under them. No retries.
        limits = httpx.Limits() if self.keepalive else httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=10, limits=limits) as client:
            while not self._stop.is_set():
                try:
                    response = await client.get(f"{self.url}/simple/1.0.0/route", params=ROUTE)
                    if response.status_code == 200:
                        self.ok += 1
                    else:
                        self.failures.append(f"{response.status_code} {response.text[:200]}")
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)


async def test_a_child_process_service_answers_like_an_in_process_one(running: tuple[Example, Administrator, httpx.AsyncClient]) -> None:
    example, admin, client = running
    body = await health(client, example)
    assert body["state"] == "green"
    service = body["services"][0]
    assert service["lifecycle"] == "ready"
    assert [s["state"] for s in service["sources"]] == ["green"] * 3
    described = (await client.get(f"{example.admin}/services/main")).json()
    assert described["mode"] == "child-process" and described["workers"] == 2 and described["lifecycle"] == "ready"
    workers = [p["pid"] for p in described["processes"]]
    assert len(set(workers)) == 2 and os.getpid() not in workers
    for worker in admin.handle("main").workers:  # type: ignore[attr-defined]  # each knows it is one of 2 (its engines' share of the cores)
        assert worker.spec["workers"] == 2 and worker.spec["worker"] in (0, 1)
    assert described["starts"] == 1 and described["processStarts"] == 2 and described["lastExit"] is None
    listed = (await client.get(f"{example.admin}/services")).json()[0]["processes"]
    assert [{**p, "memory": None} for p in listed] == [{**p, "memory": None} for p in described["processes"]]  # memory changes
    projection = await client.get(f"{example.admin}/services/main/projections/EPSG:4326")
    assert projection.json() == {"id": "EPSG:4326", "parameters": "+proj=longlat +datum=WGS84 +no_defs"}
    missing = await client.get(f"{example.admin}/services/main/projections/EPSG:9999")
    assert missing.status_code == 404 and missing.json()["error"]["message"] == "Can't find projection EPSG:9999"
    route = await client.get(f"{example.service}/simple/1.0.0/route", params=ROUTE)
    assert route.status_code == 200 and route.json()["distance"] > 0


@pytest.mark.parametrize(
    ("setting", "expected"),
    [("auto", "tcmalloc"), ("system", "system"), ("jemalloc", "jemalloc"), ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "jemalloc")],
)
async def test_workers_run_with_the_allocator_of_their_setting(tmp_path: Path, osrm_example: Path, setting: str, expected: str) -> None:
    from roadkit.config import allocator

    if setting.startswith("/") and not Path(setting).is_file():  # another architecture's folder: the named setting covers it
        setting = str(allocator.find("jemalloc"))
    example = Example(tmp_path / "monaco", osrm_example, allocator=setting)
    admin = example.administrator()
    await admin.start()
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            assert (await health(client, example))["state"] == "green"
            described = (await client.get(f"{example.admin}/services/main")).json()
            assert described["allocator"] == setting
            assert [p["allocator"] for p in described["processes"]] == [expected, expected]
            for process in described["processes"]:  # what the processes really map, not what was asked
                maps = Path(f"/proc/{process['pid']}/maps").read_text()
                assert ("libtcmalloc" in maps) == (expected == "tcmalloc") and ("libjemalloc" in maps) == (expected == "jemalloc")
            route = await client.get(f"{example.service}/simple/1.0.0/route", params=ROUTE)
            assert route.status_code == 200 and route.json()["distance"] > 0
    finally:
        await admin.stop()


async def test_kill_9_of_a_worker_under_load_turns_health_red_then_green(
    running: tuple[Example, Administrator, httpx.AsyncClient], caplog: pytest.LogCaptureFixture
) -> None:
    example, admin, client = running
    load = Load(example.service)
    try:
        await wait_for(lambda: asyncio.sleep(0, load.ok > 5))
        victim = pids(admin)[0]
        with caplog.at_level(logging.INFO, logger="roadkit.process.children"):
            os.kill(victim, signal.SIGKILL)
            killed = time.monotonic()
            await wait_for(lambda: _red(client, example), timeout=1.0)
            assert time.monotonic() - killed < 1.0
            await wait_for(lambda: green(client, example), timeout=30)
        served = load.ok
        await wait_for(lambda: asyncio.sleep(0, load.ok > served + 5))
    finally:
        await load.stop()
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert any(f"pid {victim}) exited unexpectedly with signal SIGKILL" in r.getMessage() for r in errors), caplog.text
    described = admin.handle("main").describe()
    assert victim not in pids(admin) and len(pids(admin)) == 2
    assert (
        described["lastExit"]["pid"] == victim
        and described["lastExit"]["signal"] == "SIGKILL"
        and described["lastExit"]["expected"] is False
    )
    assert described["processStarts"] == 3


async def _red(client: httpx.AsyncClient, example: Example) -> bool:
    body = await health(client, example)
    return body["state"] == "red" and body["services"][0]["lifecycle"] == "recovering" and "SIGKILL" in body["services"][0]["reason"]


async def test_concurrent_restart_requests_are_merged(running: tuple[Example, Administrator, httpx.AsyncClient]) -> None:
    example, admin, client = running
    before = pids(admin)
    answers = await asyncio.gather(*(client.get(f"{example.admin}/services/main/restart") for _ in range(50)))
    assert [a.status_code for a in answers] == [200] * 50
    described = admin.handle("main").describe()
    # The first request restarts at once; the 49 others arrive while it runs and share ONE next restart.
    assert described["starts"] in (2, 3), described["starts"]
    assert described["processStarts"] == 2 * described["starts"]
    assert not set(before) & set(pids(admin))
    assert all(gone(pid) for pid in before)
    assert await green(client, example)
    # The old workers disconnected their sources when they stopped (workers log to the administrator's file too).
    logged = (example.root / "roadkit.log").read_text()
    assert all(f"pid {pid}]: worker stopped: HTTP server drained, sources disconnected" in logged for pid in before), logged[-2000:]


async def test_a_worker_that_does_not_answer_is_unknown_and_counts_as_red(
    running: tuple[Example, Administrator, httpx.AsyncClient],
) -> None:
    example, admin, client = running
    frozen = pids(admin)[1]
    os.kill(frozen, signal.SIGSTOP)
    try:
        body = await health(client, example)
        assert body["state"] == "red"
        service = body["services"][0]
        assert service["state"] == "unknown" and service["reason"] == f"worker 1 (pid {frozen}): no answer within 1 s"
    finally:
        os.kill(frozen, signal.SIGCONT)
    await wait_for(lambda: green(client, example), timeout=10)


@pytest.mark.parametrize("running", ["uvicorn", "hypercorn"], indirect=True)
async def test_restarts_under_load_lose_no_request(running: tuple[Example, Administrator, httpx.AsyncClient]) -> None:
    example, admin, client = running
    fresh, kept = Load(example.service, clients=3), Load(example.service, clients=3, keepalive=True)
    try:
        await wait_for(lambda: asyncio.sleep(0, fresh.ok > 5 and kept.ok > 5))
        for _ in range(3):
            served = fresh.ok + kept.ok
            restart = await client.get(f"{example.admin}/services/main/restart", timeout=60)
            assert restart.status_code == 200, restart.text
            await wait_for(lambda served=served: asyncio.sleep(0, fresh.ok + kept.ok > served + 6))  # type: ignore[misc]
    finally:
        await fresh.stop()
        await kept.stop()
    assert fresh.failures == [] and kept.failures == [] and fresh.ok > 20 and kept.ok > 20
    described = admin.handle("main").describe()
    assert described["starts"] == 4 and described["lastExit"]["expected"] is True and described["lastExit"]["code"] == 0


async def _keep_alive_route(port: int) -> asyncio.StreamWriter:
    """A connection that asked one route (answered, so a worker holds it) and stays open."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    query = "&".join(f"{k}={v}" for k, v in ROUTE.items())
    writer.write(f"GET /simple/1.0.0/route?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
    assert head.startswith("http/1.1 200"), head
    length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
    await reader.readexactly(length)
    return writer


@pytest.mark.parametrize("running", ["uvicorn", "hypercorn"], indirect=True)
async def test_connections_opened_at_once_spread_over_the_workers(running: tuple[Example, Administrator, httpx.AsyncClient]) -> None:
    # One accept queue for all workers: the first to wake used to take the whole burst (0/16 seen), and
    # a kept-alive connection stays where it was accepted, leaving the other worker idle (issue 11).
    example, admin, client = running
    for _ in range(3):
        writers = await asyncio.gather(*(_keep_alive_route(example.service_port) for _ in range(16)))
        body = await health(client, example)
        shares = body["services"][0]["workers"]
        for writer in writers:
            writer.close()
        opened = [w["connections"]["open"] for w in shares]
        assert sorted(w["pid"] for w in shares) == sorted(pids(admin))
        assert sum(opened) == 16 and min(opened) >= 4, shares  # 25 % each at least
        await wait_for(lambda: _all_closed(client, example))


async def _all_closed(client: httpx.AsyncClient, example: Example) -> bool:
    body = await health(client, example)
    return all(w["connections"]["open"] == 0 for w in body["services"][0]["workers"])


async def test_a_start_that_hangs_fails_at_its_startup_timeout(tmp_path: Path, osrm_example: Path) -> None:
    example = Example(tmp_path / "monaco", osrm_example)
    admin = example.administrator()
    handle = admin.handle("main")
    assert isinstance(handle, ChildProcessService)
    # Below the 10 s a file may set (roadkit.config.loader.STARTUP_TIMEOUT): the time-out itself is under test.
    handle.managed = attrs.evolve(handle.managed, startup_timeout=0.3)
    handle.command = [sys.executable, "-c", "import time; time.sleep(60)"]
    await handle.zygote(preload(handle.managed.allocator)).ready()  # its imports done: what follows is the time-out's
    started = time.monotonic()
    await admin.start()
    try:
        assert time.monotonic() - started < 5
        async with httpx.AsyncClient() as client:
            body = await health(client, example)
        service = body["services"][0]
        assert service["state"] == "red" and service["lifecycle"] == "failed"
        assert "not ready after 0.3 s (startup_timeout)" in service["reason"]
        assert handle.describe()["processes"] == [] and handle.process_starts == 2
        assert handle.last_exit is not None and handle.last_exit["signal"] == "SIGKILL"
    finally:
        await admin.stop()


async def test_a_worker_that_dies_during_start_fails_it_at_once_and_is_retried_with_back_off(
    tmp_path: Path, osrm_example: Path, caplog: pytest.LogCaptureFixture
) -> None:
    example = Example(tmp_path / "monaco", osrm_example, workers=1, startup_timeout=60)
    admin = example.administrator()
    handle = admin.handle("main")
    assert isinstance(handle, ChildProcessService)
    handle.command = [sys.executable, "-c", "import sys; sys.exit(7)"]
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="roadkit.process.children"):
        await admin.start()
        assert time.monotonic() - started < 10  # at once, not at the 60 s time-out
        assert handle.lifecycle == "recovering" and "exit code 7" in handle.error
        await asyncio.sleep(2.5)
        # Back-off 0.2, 0.4, 0.8, 1.0 s: a crash loop is slowed down, it does not spin.
        assert 2 <= handle.process_starts <= 5, handle.process_starts
        handle.command = None  # the worker itself again
        async with httpx.AsyncClient() as client:
            await wait_for(lambda: green(client, example), timeout=30)
    await admin.stop()
    assert "exited unexpectedly with exit code 7" in caplog.text
    assert "automatic restart 2 in 0.4 s" in caplog.text


async def test_a_taken_listener_port_is_named_and_the_administrator_goes_on(tmp_path: Path, osrm_example: Path) -> None:
    example = Example(tmp_path / "monaco", osrm_example)
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", example.service_port)
    admin = example.administrator()
    try:
        await admin.start()
        async with httpx.AsyncClient() as client:
            body = await health(client, example)
            service = body["services"][0]
            assert service["state"] == "red" and f"cannot listen on 127.0.0.1:{example.service_port}" in service["reason"]
            assert admin.handle("main").describe()["processStarts"] == 0
            blocker.close()
            await blocker.wait_closed()
            restart = await client.get(f"{example.admin}/services/main/restart", timeout=60)
            assert restart.status_code == 200 and restart.json()["lifecycle"] == "ready"
            assert await green(client, example)
    finally:
        blocker.close()
        await admin.stop()


GARBAGE = textwrap.dedent("""
    import json, os, socket, sys, time
    spec = json.loads(sys.argv[1])
    channel = socket.socket(fileno=spec["channel"])
    channel.sendall(b"\\xff\\xff\\xff\\xffnot a frame")
    time.sleep(60)
""")


async def test_garbage_on_the_channel_kills_that_child_not_the_administrator(
    tmp_path: Path, osrm_example: Path, caplog: pytest.LogCaptureFixture
) -> None:
    example = Example(tmp_path / "monaco", osrm_example, workers=1, startup_timeout=60)
    admin = example.administrator()
    handle = admin.handle("main")
    assert isinstance(handle, ChildProcessService)
    handle.command = [sys.executable, "-c", GARBAGE]
    with caplog.at_level(logging.INFO, logger="roadkit.process.children"):
        await admin.start()
        try:
            assert handle.lifecycle == "recovering"
            assert "garbage on the channel: a frame of 4294967295 bytes" in caplog.text
            assert handle.last_exit is not None and handle.last_exit["signal"] == "SIGKILL"
            async with httpx.AsyncClient() as client:
                assert (await health(client, example))["services"][0]["state"] == "red"
                handle.command = None  # the worker itself again
                await wait_for(lambda: green(client, example), timeout=30)
        finally:
            await admin.stop()


async def test_the_admin_api_answers_quickly_while_a_service_loads(tmp_path: Path, osrm_example: Path) -> None:
    example = Example(tmp_path / "monaco", osrm_example)
    admin = example.administrator()
    await admin.start_admin_api()
    starting = asyncio.create_task(admin.start_services())
    timings: list[float] = []
    try:
        async with httpx.AsyncClient() as client:
            while not starting.done():
                began = time.perf_counter()
                response = await client.get(f"{example.admin}/health?verbose=true")
                timings.append(time.perf_counter() - began)
                if response.status_code == 200:  # ready: the task finishes in a moment
                    break
                assert response.status_code == 503 and response.json()["services"][0]["lifecycle"] == "starting"
                await asyncio.sleep(0.02)
            await starting
            assert await green(client, example)
    finally:
        await admin.stop()
    assert len(timings) >= 5
    # The bound of the issue, with margin for a loaded machine: the median well under it, the worst too.
    assert sorted(timings)[len(timings) // 2] < 0.05 and max(timings) < 0.25, [round(t, 3) for t in timings]


def test_children_die_when_the_administrator_is_killed(tmp_path: Path, osrm_example: Path) -> None:
    example = Example(tmp_path / "monaco", osrm_example)
    process = subprocess.Popen(
        [sys.executable, "-m", "roadkit.cli", "serve", str(example.root / "server.toml")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline:
            try:
                described = httpx.get(f"{example.admin}/services/main").json()
                if described["lifecycle"] == "ready":
                    workers = [p["pid"] for p in described["processes"]]
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        assert len(workers) == 2
        process.kill()
        process.wait()
        deadline = time.monotonic() + 5
        while not all(gone(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(gone(pid) for pid in workers)
    finally:
        process.kill()
        process.wait()


def _self_signed(folder: Path, name: str) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (folder / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / f"{name}.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


async def test_workers_serve_several_listeners_with_https_and_a_certificate_each(
    tmp_path: Path, osrm_example: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import ssl

    example = Example(tmp_path / "monaco", osrm_example)
    ports = [free_port(), free_port()]
    for i, port in enumerate(ports):
        _self_signed(example.root, f"site{i}")
        service = example.root / "service.toml"
        service.write_text(
            service.read_text() + f'\n[[listeners]]\nid = "secure{i}"\nport = {port}\ncertfile = "site{i}.pem"\nkeyfile = "site{i}.key"\n'
        )
    admin = example.administrator()
    await admin.start()
    try:
        async with httpx.AsyncClient(verify=False) as client:
            assert (await client.get(f"{example.service}/simple/1.0.0/route", params=ROUTE)).status_code == 200
            for i, port in enumerate(ports):
                response = await client.get(f"https://127.0.0.1:{port}/simple/1.0.0/route", params=ROUTE)
                assert response.status_code == 200 and response.headers["strict-transport-security"]
                presented = ssl.get_server_certificate(("127.0.0.1", port))
                assert presented.strip() == (example.root / f"site{i}.pem").read_text().strip()
            with caplog.at_level(logging.INFO, logger="roadkit.process.children"):
                assert (await client.get(f"{example.admin}/services/main/restart", timeout=60)).status_code == 200
            assert (await client.get(f"https://127.0.0.1:{ports[1]}/simple/1.0.0/route", params=ROUTE)).status_code == 200
    finally:
        await admin.stop()
    # A controlled stop is logged at info level, with the exit code.
    stops = [r for r in caplog.records if "stopped (exit code 0)" in r.getMessage()]
    assert len(stops) == 2 and all(r.levelno == logging.INFO for r in stops)


NOT_READING = textwrap.dedent("""
    import json, socket, struct, sys, time
    spec = json.loads(sys.argv[1])
    channel = socket.socket(fileno=spec["channel"])
    ready = b'{"event": "ready"}'
    channel.sendall(struct.pack(">I", len(ready)) + ready)
    time.sleep(120)  # ready, then never reads its channel again (stuck in a blocking call)
""")


async def test_a_worker_that_stops_reading_its_channel_cannot_hang_the_administrator(tmp_path: Path, osrm_example: Path) -> None:
    # Before: the send was outside the time-out; once the socket's buffer was full it waited forever, and with
    # it the health request (GET /health) or publication call that sent it.
    example = Example(tmp_path / "monaco", osrm_example, workers=1, startup_timeout=60)
    admin = example.administrator()
    handle = admin.handle("main")
    assert isinstance(handle, ChildProcessService)
    handle.command = [sys.executable, "-c", NOT_READING]
    await admin.start()
    try:
        assert handle.lifecycle == "ready"
        worker = handle.workers[0]
        # A request larger than the socket's buffer: its send can't finish while nothing reads.
        asking = asyncio.create_task(worker.request("health", {"padding": "x" * 8_000_000}, timeout=1.0))
        done, _ = await asyncio.wait({asking}, timeout=30)
        assert asking in done, "the request is still waiting for its send"
        assert isinstance(asking.exception(), TimeoutError)
        async with httpx.AsyncClient(timeout=30) as client:
            body = await health(client, example)
        service = body["services"][0]
        assert service["state"] == "unknown" and "no answer within 1 s" in service["reason"], service
    finally:
        await admin.stop()
