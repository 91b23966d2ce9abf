"""Several machines on this one: a gateway and two osrm-routed hosts on their own loopback addresses.

The gateway is ``roadkit serve`` (two worker processes) whose ``osrm-http`` source lists an
osrm-routed on 127.0.0.2 and one on 127.0.0.3, as a gateway Deployment lists engine servers on
other nodes (Linux routes all of 127.0.0.0/8 to the loopback, so each address stands for a host).
Under a loop of route requests one host is killed: no request fails; the host comes back and
requests reach it again, so much that the other host can be killed in turn without a failure.
Then the Kubernetes set-up of deploy/kubernetes: the source names one address, a balancer standing
for a Service in front of both hosts (its pods), and a pod dies under load or holding requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from roadkit.routing.source import SourceState
from tests.core.conftest import free_port
from tests.engine_a.test_osrm_http import remote
from tests.engine_servers import EngineServer, kill_under_load, osrm_routed, running

ROUTE = {"resource": "monaco-osrm", "start": "7.41337,43.72956", "end": "7.41983,43.73115", "getSteps": "false"}
SOURCE_ID = "monaco-osrm-car-fastest"


def _write_gateway(folder: Path, example: Path, servers: list[str]) -> tuple[Path, str, str]:
    """A gateway's server, service and source files in ``folder``: (server file, service URL, admin URL)."""
    admin_port, service_port = free_port(), free_port()
    (folder / "sources").mkdir(parents=True)
    source = {
        "id": SOURCE_ID,
        "type": "osrm-http",
        "projection": "EPSG:4326",
        "timeout": 10.0,
        "http": {"servers": servers, "health_interval": 0.2, "health_timeout": 1.0, "connect_timeout": 1.0},
        "cost": {"profile": "car", "optimization": "fastest"},
    }
    (folder / "sources" / "monaco-car-fastest.source").write_text(json.dumps(source))
    (folder / "service.toml").write_text(
        '[application]\nname = "gateway"\ntitle = "gateway"\ndescription = "A gateway on two hosts"\n\n'
        f'[[listeners]]\nid = "main"\nhost = "127.0.0.1"\nport = {service_port}\n\n'
        '[[apis]]\nname = "simple"\nversion = "1.0.0"\n\n'
        f'[folders]\nsources = ["sources"]\nresources = ["{example / "resources"}"]\nprojections = "{example / "projections"}"\n'
    )
    server = folder / "server.toml"
    server.write_text(
        f'[administrator.listener]\nhost = "127.0.0.1"\nport = {admin_port}\n\n'
        '[[services]]\nid = "gateway"\nconfiguration = "service.toml"\nmode = "child-process"\nworkers = 2\n'
    )
    return server, f"http://127.0.0.1:{service_port}", f"http://127.0.0.1:{admin_port}"


@pytest.fixture
def hosts(tmp_path: Path, osrm_datasets: dict[str, Path]) -> Iterator[tuple[EngineServer, EngineServer]]:
    """osrm-routed on the car dataset on 127.0.0.2 and on 127.0.0.3, each logging the requests it answers."""
    dataset = osrm_datasets["car-fastest"]
    a = osrm_routed(dataset, host="127.0.0.2", log=tmp_path / "host-a.log")
    b = osrm_routed(dataset, host="127.0.0.3", log=tmp_path / "host-b.log")
    with running(a, b):
        yield a, b


@contextmanager
def serving_gateway(folder: Path, example: Path, servers: list[str]) -> Iterator[tuple[str, str]]:
    """``roadkit serve`` of a gateway on ``servers``: (service URL, admin URL), once its source is green."""
    server, service_url, admin_url = _write_gateway(folder, example, servers)
    log_path = folder / "gateway.log"
    log = log_path.open("w")
    process = subprocess.Popen([sys.executable, "-m", "roadkit.cli", "serve", str(server)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            output = log_path.read_text()
            assert process.poll() is None and "failed to start" not in output, output
            try:
                if httpx.get(admin_url + "/admin/1.0.0/health", trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, output
            time.sleep(0.1)
        yield service_url, admin_url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture
def gateway(tmp_path: Path, osrm_example: Path, hosts: tuple[EngineServer, EngineServer]) -> Iterator[tuple[str, str]]:
    """The gateway on both hosts."""
    with serving_gateway(tmp_path / "gateway", osrm_example, [h.url for h in hosts]) as urls:
        yield urls


def client(service_url: str) -> httpx.AsyncClient:
    """Eight connections to the gateway, as eight users' browsers or a load balancer's pool."""
    limits = httpx.Limits(max_connections=8, max_keepalive_connections=8)
    return httpx.AsyncClient(base_url=service_url, trust_env=False, limits=limits, timeout=30)


async def route(gateway: httpx.AsyncClient) -> Any:
    """The route's distance; any other answer than a 200 raises (a failed request)."""
    answer = await gateway.get("/simple/1.0.0/route", params=ROUTE)
    if answer.status_code != 200:
        raise AssertionError(f"HTTP {answer.status_code}: {answer.text}")
    return answer.json()["distance"]


def answered(server: EngineServer) -> int:
    """How many route requests the host answered: osrm-routed logs one line per request at INFO level."""
    assert server.log is not None
    return sum(" /route/v1/" in line for line in server.log.read_text(errors="replace").splitlines())


def server_states(admin_url: str) -> dict[str, str]:
    """The gateway's view of its engine servers, from the admin API's health: {url: "up" | "down"}."""
    health = httpx.get(admin_url + "/admin/1.0.0/health?verbose=true", trust_env=False).json()
    for service in health["services"]:
        for source in service["sources"]:
            if source["id"] == SOURCE_ID:
                return {server["url"]: server["state"] for server in source.get("servers", [])}
    raise AssertionError(f"no source {SOURCE_ID} in the admin health: {health}")


async def test_a_host_killed_under_load_costs_no_request_and_its_return_is_picked_up(
    gateway: tuple[str, str], hosts: tuple[EngineServer, EngineServer]
) -> None:
    service_url, admin_url = gateway
    a, b = hosts
    async with client(service_url) as gateway_client:
        call = functools.partial(route, gateway_client)
        expected = await call()
        first = await kill_under_load(call, a, clients=8, calls=40)
        assert first.failures == [], first.failures[:3]
        assert len(first.results) == 320 and first.killed_after < 300, "the host died while requests were still coming"
        assert set(first.results) == {expected}
        # One host left is enough: the gateway stays ready for its load balancer.
        assert httpx.get(service_url + "/readyz", trust_env=False).status_code == 200

        a.start()  # the same address and port, as a restarted machine
        deadline = time.monotonic() + 20
        while server_states(admin_url) != {a.url: "up", b.url: "up"}:
            assert time.monotonic() < deadline, server_states(admin_url)
            time.sleep(0.1)
        # The workers that did not answer the health call see it too within a few probes.
        time.sleep(1.0)
        before = answered(a)
        for _ in range(40):
            assert await call() == expected
        assert answered(a) - before >= 10, "requests do not reach the host that came back"

        # Only the returned host is left: the gateway must send everything there, and again loses nothing.
        second = await kill_under_load(call, b, clients=8, calls=40)
        assert second.failures == [], second.failures[:3]
        assert set(second.results) == {expected}
        assert server_states(admin_url)[b.url] == "down"


class ServiceBalancer:
    """A TCP balancer on its own loopback address standing for a Kubernetes Service (kube-proxy).

    Each new connection goes to the next backend in turn; a backend that refuses the connection
    is skipped, as a Service leaves out a pod that is gone. Bytes are copied both ways, so when a
    backend dies its connections are reset: the gateway sees what it sees behind a real Service.
    """

    def __init__(self, host: str, backends: list[EngineServer]) -> None:
        self.host = host
        self.backends = backends
        self.connections = dict.fromkeys((b.url for b in backends), 0)
        self.port = 0
        self._turn = 0
        # Its own thread and event loop: it keeps serving while the test waits or blocks.
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ServiceBalancer:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._serve, self.host, 0), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close(server: asyncio.Server) -> None:
            server.close()
            for writer in self._writers:
                writer.transport.abort()
            await server.wait_closed()

        if self._server is not None:
            asyncio.run_coroutine_threadsafe(close(self._server), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in self.backends:
            backend = self.backends[self._turn % len(self.backends)]
            self._turn += 1
            try:
                up_reader, up_writer = await asyncio.open_connection(backend.host, backend.port)
            except OSError:
                continue
            self.connections[backend.url] += 1
            self._writers |= {writer, up_writer}
            try:
                await asyncio.gather(self._copy(reader, up_writer), self._copy(up_reader, writer))
            finally:
                self._writers -= {writer, up_writer}
                for end in (writer, up_writer):
                    end.transport.abort()
            return
        writer.transport.abort()

    @staticmethod
    async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            # A reset on one side is a reset on the other: the peer must not wait for an answer.
            transport = writer.transport
            if reader.at_eof() and reader.exception() is None:
                with contextlib.suppress(OSError):
                    writer.write_eof()
            else:
                transport.abort()


async def test_a_pod_killed_behind_a_service_costs_no_request(
    tmp_path: Path, osrm_example: Path, hosts: tuple[EngineServer, EngineServer]
) -> None:
    """The manifests' set-up: the source names one engine Service, in front of two engine pods; one pod dies."""
    a, b = hosts
    service = ServiceBalancer("127.0.0.4", [a, b]).start()
    try:
        with serving_gateway(tmp_path / "gateway", osrm_example, [service.url]) as (service_url, admin_url):
            async with client(service_url) as gateway_client:
                call = functools.partial(route, gateway_client)
                expected = await call()
                # The pod hangs, then dies with the requests it held: the gateway sends them again.
                load = await kill_under_load(call, a, clients=8, calls=40, freeze=0.5)
                assert load.failures == [], load.failures[:3]
                assert set(load.results) == {expected}
                assert service.connections[a.url] > 0 and service.connections[b.url] > 0
                assert server_states(admin_url) == {service.url: "up"}
    finally:
        service.stop()


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_requests_in_flight_on_a_pod_that_dies_behind_a_service_are_sent_again(
    tmp_path: Path, hosts: tuple[EngineServer, EngineServer], method: str
) -> None:
    """A pod dies holding requests: they fail on their connections, and the Service's other pod answers them.

    GET is how osrm-http asks, POST how valhalla-http does (a JSON body): both are engine
    computations, sent again whatever the method.
    """
    a, b = hosts
    assert a.process is not None
    service = ServiceBalancer("127.0.0.4", [a, b]).start()
    try:
        # No probe during the test: only the requests themselves may find the pod gone.
        source = await remote(tmp_path, "car-fastest", [service.url], health_interval=60.0)
        assert source.servers is not None
        servers = source.servers
        body = b"{}" if method == "POST" else None

        async def call() -> tuple[int, bytes]:
            answer = await servers.request(method, "/route/v1/driving/7.41337,43.72956;7.41983,43.73115", json_body=body)
            return answer.status, answer.body

        try:
            expected = await call()
            # Sixteen at once: the source's pool holds connections to both pods (the Service spreads them).
            await asyncio.gather(*(call() for _ in range(16)))
            assert service.connections[a.url] >= 4 and service.connections[b.url] >= 4, service.connections
            os.killpg(a.process.pid, signal.SIGSTOP)
            # More than the pool holds: new connections as well, half of which the Service sends to the frozen pod.
            calls = [asyncio.create_task(call()) for _ in range(32)]
            await asyncio.sleep(0.5)
            assert not all(task.done() for task in calls), "no request waits on the frozen pod"
            a.kill()
            results = await asyncio.gather(*calls, return_exceptions=True)
            assert [r for r in results if isinstance(r, BaseException)] == []
            assert all(r == expected for r in results)
            assert source.state is SourceState.GREEN
            assert servers.health() == [{"url": service.url, "state": "up"}]
        finally:
            await source.disconnect()
    finally:
        service.stop()
