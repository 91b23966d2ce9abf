"""Source kind ``osrm-http`` against real osrm-routed servers on the Monaco datasets.

Its answers must equal the in-process ``osrm`` source's on the same dataset (one mapping for both),
through the source and through the simple API of a gateway service that holds no engine data.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roadkit.config.loader import read_source
from roadkit.errors import ConfigurationError, EngineTimeout, NoPathFound, ParameterInvalid, SourceUnavailable
from roadkit.plugins import Plugins
from roadkit.routing.model import Constraint, Cost, NearestRequest, RouteRequest
from roadkit.routing.source import SourceState
from roadkit.testing import SourceContract, service_client
from roadkit_osrm import OsrmHttpSource, OsrmSource
from tests.engine_a.native_support import compare, encode, generate, write_native_service
from tests.engine_a.test_native_route_nearest import native_get
from tests.engine_servers import (
    EngineServer,
    LoopbackProxy,
    TlsProxy,
    free_port,
    kill_under_load,
    osrm_routed,
    running,
    same,
    self_signed_certificate,
    silent_listener,
    wait_for,
    without_proxies,
)

START = (7.41337, 43.72956)
END = (7.41983, 43.73115)
VIA = (7.4246, 43.7383)
ALGORITHMS = {"car-fastest": "CH", "car-shortest": "CH", "pedestrian-fastest": "MLD"}
MOTORWAY = Constraint("banned", "waytype", "=", "autoroute", field="motorway")


@pytest.fixture(scope="module")
def routed(osrm_datasets: dict[str, Path]) -> Iterator[dict[str, EngineServer]]:
    """One osrm-routed per Monaco dataset, on free ports."""
    servers = {name: osrm_routed(osrm_datasets[name], algorithm) for name, algorithm in ALGORITHMS.items()}
    with running(*servers.values()):
        yield servers


def write_source(folder: Path, name: str, servers: list[str], source_id: str | None = None, **http: Any) -> Path:
    """An ``osrm-http`` source file for the cost ``name`` (car-fastest...) on ``servers``."""
    profile, optimization = name.split("-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"monaco-{name}.source"
    data = {
        "id": source_id or f"remote-{name}",
        "type": "osrm-http",
        "projection": "EPSG:4326",
        "timeout": http.pop("timeout", 10.0),
        "http": {"servers": servers, **http},
        "cost": {"profile": profile, "optimization": optimization},
    }
    path.write_text(json.dumps(data))  # a file starting with '{' is read as JSON
    return path


async def remote(folder: Path, name: str, servers: list[str], **http: Any) -> OsrmHttpSource:
    source = OsrmHttpSource.from_config(read_source(write_source(folder, name, servers, **http)))
    assert isinstance(source, OsrmHttpSource)
    await source.connect()
    return source


async def local(example: Path, name: str) -> OsrmSource:
    source = OsrmSource.from_config(read_source(example / "sources" / f"monaco-{name}.source"))
    assert isinstance(source, OsrmSource)
    await source.connect()
    return source


def test_the_kind_is_discovered_through_the_plugin_entry_point() -> None:
    kinds = Plugins.create().source_kinds()
    assert kinds["osrm-http"] is OsrmHttpSource
    assert OsrmHttpSource.resource_type == "osrm"


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
async def test_routes_equal_the_in_process_source(tmp_path: Path, osrm_example: Path, routed: dict[str, EngineServer], name: str) -> None:
    over_http = await remote(tmp_path, name, [routed[name].url])
    in_process = await local(osrm_example, name)
    try:
        profile, optimization = name.split("-")
        for points, steps in (((START, VIA, END), True), ((START, END), False), ((END, START), True)):
            request = RouteRequest(points, Cost(profile, optimization), steps=steps)
            same(await over_http.route(request), await in_process.route(request))
    finally:
        await over_http.disconnect()
        await in_process.disconnect()


async def test_nearest_and_constraints_equal_the_in_process_source(
    tmp_path: Path, osrm_example: Path, routed: dict[str, EngineServer]
) -> None:
    over_http = await remote(tmp_path, "car-fastest", [routed["car-fastest"].url])
    in_process = await local(osrm_example, "car-fastest")
    try:
        for number in (1, 3, 10):
            request = NearestRequest(START, number)
            same(await over_http.nearest(request), await in_process.nearest(request))
        # From above Eze to Monaco: the fastest way takes the A8 motorway, which the ban removes.
        banned = RouteRequest(((7.37612, 43.75813), (7.45165, 43.73148)), Cost("car", "fastest"), constraints=(MOTORWAY,))
        same(await over_http.route(banned), await in_process.route(banned))
        # The end is reachable through the motorway only: the same 404 from both.
        cut = RouteRequest(((7.38076, 43.74470), (7.44436, 43.75035)), Cost("car", "fastest"), constraints=(MOTORWAY,))
        for source in (over_http, in_process):
            with pytest.raises(NoPathFound):
                await source.route(cut)
        # A class the dataset cannot exclude: OSRM's InvalidValue, the same 400 naming constraints from both.
        bogus = RouteRequest((START, END), Cost("car", "fastest"), constraints=(Constraint("banned", "k", "=", "v", field="bogus"),))
        messages = []
        for source in (over_http, in_process):
            with pytest.raises(ParameterInvalid) as caught:
                await source.route(bogus)
            assert caught.value.status == 400 and caught.value.parameter == "constraints"
            messages.append(caught.value.message)
        assert messages[0] == messages[1] and "Exclude flag combination is not supported" in messages[0]
        # The combinations each dataset bans together are learnt the same way (over HTTP, asked beforehand).
        fields = ["motorway", "toll", "ferry", "bogus"]
        await over_http.learn_bans(fields, 3)
        assert over_http.supported_bans(fields, 3) == in_process.supported_bans(fields, 3)
        assert over_http.supported_bans(fields, 2) == [frozenset({"ferry"}), frozenset({"motorway"}), frozenset({"toll"})]
        assert over_http.state is SourceState.GREEN  # an engine's answer is not a server failure
    finally:
        await over_http.disconnect()
        await in_process.disconnect()


def _gateway(example: Path, target: Path, routed: dict[str, EngineServer]) -> Path:
    """A copy of the example whose sources are osrm-http sources (same ids) on the servers: no engine data."""
    shutil.copytree(example, target, symlinks=True, ignore=shutil.ignore_patterns("data", "*.pbf"))
    for path in (target / "sources").glob("*.source"):
        path.unlink()
    for name in ALGORITHMS:
        write_source(target / "sources", name, [routed[name].url], source_id=f"monaco-osrm-{name}")
    return target / "service.toml"


ROUTES = [
    "/simple/1.0.0/getcapabilities",
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.41337,43.72956&end=7.41983,43.73115&intermediates=7.4246,43.7383",
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.41337,43.72956&end=7.41983,43.73115&profile=pedestrian&getSteps=false",
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.41337,43.72956&end=7.41983,43.73115&optimization=shortest&geometryFormat=polyline",
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.37612,43.75813&end=7.45165,43.73148&constraints="
    '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}',
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.38076,43.74470&end=7.44436,43.75035&constraints="
    '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}',
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.37612,43.75813&end=7.45165,43.73148&constraints="
    '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}|'
    '{"constraintType":"banned","key":"wayType","operator":"=","value":"peage"}|'
    '{"constraintType":"banned","key":"wayType","operator":"=","value":"bac"}',
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.41337,43.72956&end=7.41983,43.73115&timeUnit=second&distanceUnit=kilometer&waysAttributes=name",
    "/simple/1.0.0/nearest?resource=monaco-osrm&coordinates=7.41337,43.72956&nbPoints=5",
    "/simple/1.0.0/nearest?resource=monaco-osrm&coordinates=7.4246,43.7383",
]


def test_a_gateway_without_engine_data_answers_the_simple_api_like_the_in_process_service(
    tmp_path: Path, osrm_example: Path, routed: dict[str, EngineServer]
) -> None:
    gateway = _gateway(osrm_example, tmp_path / "gateway", routed)
    assert not (gateway.parent / "data").exists()
    with service_client(osrm_example / "service.toml") as direct, service_client(gateway) as through:
        for url in ROUTES:
            expected, got = direct.get(url), through.get(url)
            assert got.status_code == expected.status_code, url
            same(got.json(), expected.json(), url)
        statuses = {direct.get(url).status_code for url in ROUTES}
    # The three bans together are a 400 (the dataset bans one class at a time), the cut motorway route a 404.
    assert statuses == {200, 400, 404}


class TestOsrmHttpContract(SourceContract):
    """The core's source contract, on an osrm-http source fronting the car/fastest osrm-routed."""

    @pytest.fixture
    async def contract_source(self, tmp_path: Path, routed: dict[str, EngineServer]) -> Any:
        source = await remote(tmp_path, "car-fastest", [routed["car-fastest"].url])
        yield source
        await source.disconnect()

    @pytest.fixture
    def contract_points(self) -> list[tuple[float, float]]:
        return [START, END]


def test_configuration_problems_name_the_file_and_key(tmp_path: Path) -> None:
    path = write_source(tmp_path, "car-fastest", ["ftp://x", "http://"], connect_timeout=0, max_connections=0)
    with pytest.raises(ConfigurationError) as caught:
        OsrmHttpSource.from_config(read_source(path))
    problems = "\n".join(caught.value.problems)
    assert f"{path}: http.servers[0]: expected an http:// or https:// base URL, got 'ftp://x'" in problems
    assert "http.servers[1]" in problems
    assert "http.connect_timeout: expected seconds > 0, got 0" in problems
    assert "http.max_connections: expected a positive integer, got 0" in problems
    empty = write_source(tmp_path / "empty", "car-fastest", [])
    with pytest.raises(ConfigurationError, match=r"http\.servers: expected at least one base URL"):
        OsrmHttpSource.from_config(read_source(empty))


ROUTE = RouteRequest((START, END), Cost("car", "fastest"), steps=True)


async def test_requests_take_the_servers_in_turn(tmp_path: Path, osrm_datasets: dict[str, Path]) -> None:
    with running(osrm_routed(osrm_datasets["car-fastest"]), osrm_routed(osrm_datasets["car-fastest"])) as (a, b):
        source = await remote(tmp_path, "car-fastest", [a.url, b.url])
        try:
            assert source.servers is not None
            served = [(await source.servers.request("GET", "/nearest/v1/driving/7.41,43.73")).server for _ in range(6)]
            assert sorted(served) == sorted([a.url, b.url] * 3)
            assert all(x != y for x, y in itertools.pairwise(served))
        finally:
            await source.disconnect()


async def test_a_server_killed_under_load_costs_no_request(tmp_path: Path, osrm_datasets: dict[str, Path]) -> None:
    with running(osrm_routed(osrm_datasets["car-fastest"]), osrm_routed(osrm_datasets["car-fastest"])) as (a, b):
        source = await remote(tmp_path, "car-fastest", [a.url, b.url], health_interval=0.2)
        try:
            expected = await source.route(ROUTE)
            load = await kill_under_load(lambda: source.route(ROUTE), a, calls=40)
            assert load.failures == [], load.failures[:3]
            assert len(load.results) == 320 and load.killed_after < 300, "the server died while requests were still coming"
            for result in load.results:
                assert result == expected
            states = {s["url"]: s["state"] for s in source.health()["servers"]}
            assert states == {a.url: "down", b.url: "up"}
            assert source.state is SourceState.GREEN
        finally:
            await source.disconnect()


async def test_red_when_no_server_answers_and_green_again_when_one_comes_back(tmp_path: Path, osrm_datasets: dict[str, Path]) -> None:
    server = osrm_routed(osrm_datasets["car-fastest"])
    with running(server):
        source = await remote(tmp_path, "car-fastest", [server.url], health_interval=0.2)
        try:
            server.kill()
            started = time.monotonic()
            for _ in range(3):
                with pytest.raises(SourceUnavailable) as caught:
                    await source.route(ROUTE)
                assert caught.value.status == 503
            assert time.monotonic() - started < 5
            assert source.state is SourceState.RED
            assert server.url in source.health()["reason"]
            server.start()  # the same port
            await wait_for(lambda: source.state is SourceState.GREEN)
            assert (await source.route(ROUTE)).distance > 0
            assert source.health()["servers"] == [{"url": server.url, "state": "up"}]
        finally:
            await source.disconnect()


async def test_an_unreachable_server_gives_a_red_source_and_503s_at_once(tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    source = OsrmHttpSource.from_config(read_source(write_source(tmp_path, "car-fastest", [nowhere, nowhere + "/osrm"])))
    started = time.monotonic()
    with pytest.raises(SourceUnavailable) as caught:
        await source.connect()
    assert caught.value.status == 503
    assert source.state is SourceState.RED
    assert nowhere in source.health()["reason"]
    assert "health probe failed: ClientConnectorError" in caught.value.message  # why, not just "not connected"
    for call in (source.route(ROUTE), source.nearest(NearestRequest(START))):
        with pytest.raises(SourceUnavailable):
            await call
    assert time.monotonic() - started < 5
    await source.disconnect()


def test_a_gateway_whose_servers_are_gone_answers_503_not_500_and_recovers(
    tmp_path: Path, osrm_example: Path, routed: dict[str, EngineServer]
) -> None:
    servers = dict(routed)
    car = servers["car-fastest"] = osrm_routed(Path(routed["car-fastest"].command[-1]))
    with running(car):
        gateway = _gateway(osrm_example, tmp_path / "gateway", servers)
        source = json.loads((tmp_path / "gateway" / "sources" / "monaco-car-fastest.source").read_text())
        source["http"]["health_interval"] = 0.2
        (tmp_path / "gateway" / "sources" / "monaco-car-fastest.source").write_text(json.dumps(source))
        with service_client(gateway) as through:
            assert through.get(ROUTES[1]).status_code == 200
            car.kill()
            gone = through.get(ROUTES[1])
            assert gone.status_code == 503
            assert gone.json()["error"]["errorType"] == "source_unavailable"
            assert car.url in gone.json()["error"]["message"]
            # The other sources of the resource still answer.
            assert through.get(ROUTES[2]).status_code == 200
            car.start()
            deadline = time.monotonic() + 15
            while (status := through.get(ROUTES[1]).status_code) != 200 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert status == 200


async def test_a_hung_server_is_a_504_within_the_time_out_then_left_out_until_it_answers(
    tmp_path: Path, osrm_datasets: dict[str, Path]
) -> None:
    with running(osrm_routed(osrm_datasets["car-fastest"]), osrm_routed(osrm_datasets["car-fastest"])) as (a, b):
        source = await remote(tmp_path, "car-fastest", [a.url, b.url], timeout=1.0, health_timeout=0.5, health_interval=0.2)
        assert a.process is not None
        try:
            os.killpg(a.process.pid, signal.SIGSTOP)  # takes connections (kernel backlog), answers nothing
            outcomes = []
            started = time.monotonic()
            for _ in range(4):
                try:
                    outcomes.append((await source.route(ROUTE)).distance > 0)
                except EngineTimeout as exc:
                    assert exc.status == 504
                    outcomes.append("504")
            assert time.monotonic() - started < 4  # at most one time-out: then the probes leave it out
            assert outcomes.count("504") <= 1 and outcomes[-1] is True
            await wait_for(lambda: {s["url"]: s["state"] for s in source.health()["servers"]}[a.url] == "down")
            assert source.state is SourceState.GREEN
            os.killpg(a.process.pid, signal.SIGCONT)
            await wait_for(lambda: all(s["state"] == "up" for s in source.health()["servers"]))
        finally:
            if a.process.poll() is None:
                os.killpg(a.process.pid, signal.SIGCONT)
            await source.disconnect()
    # A server that never answered is never taken: the source is red at connection.
    with silent_listener() as hung, pytest.raises(SourceUnavailable):
        await remote(tmp_path / "hung", "car-fastest", [hung], health_timeout=0.3)


async def test_https_servers_are_verified_against_the_system_or_the_sources_ca_file(
    tmp_path: Path, routed: dict[str, EngineServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    without_proxies(monkeypatch)
    server = routed["car-fastest"]
    direct = await remote(tmp_path / "direct", "car-fastest", [server.url])
    expected, expected_nearest = await direct.route(ROUTE), await direct.nearest(NearestRequest(START))
    await direct.disconnect()
    self_signed_certificate(tmp_path / "trusted")  # server.crt beside the source file: ca_file = "server.crt"
    proxy = await TlsProxy(server.url, tmp_path / "trusted" / "server.crt", tmp_path / "trusted" / "server.key").start()
    try:
        # The system's certificates do not vouch for a self-signed one: no server answers, and the reason says why.
        with pytest.raises(SourceUnavailable) as untrusted:
            await remote(tmp_path / "untrusted", "car-fastest", [proxy.url])
        assert "certificate verify failed" in untrusted.value.message
        assert proxy.seen == []
        # Another certificate than the one the source trusts: refused as well.
        self_signed_certificate(tmp_path / "other")
        with pytest.raises(SourceUnavailable):
            await remote(tmp_path / "other", "car-fastest", [proxy.url], ca_file="server.crt")
        assert proxy.seen == []

        source = await remote(tmp_path / "trusted", "car-fastest", [proxy.url], ca_file="server.crt")
        try:
            same(await source.route(ROUTE), expected)
            same(await source.nearest(NearestRequest(START)), expected_nearest)
            assert any(path.startswith("/route/v1/driving/") for path in proxy.seen)
            # The ban combinations are asked over the same pool, with the same TLS settings.
            await source.learn_bans(["motorway", "toll"], 2)
            assert source.supported_bans(["motorway", "toll"], 2) == [frozenset({"motorway"}), frozenset({"toll"})]
            assert any("exclude=" in path for path in proxy.seen)
        finally:
            await source.disconnect()
        insecure = await remote(tmp_path / "insecure", "car-fastest", [proxy.url], verify=False)
        same(await insecure.route(ROUTE), expected)
        await insecure.disconnect()
    finally:
        await proxy.stop()


def test_a_ca_file_must_be_readable_and_is_not_mixed_with_verify_false(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as missing:
        OsrmHttpSource.from_config(read_source(write_source(tmp_path, "car-fastest", ["https://127.0.0.1:1"], ca_file="nowhere.pem")))
    assert "http.ca_file: expected a readable file of PEM certificates, got 'nowhere.pem'" in missing.value.message
    (tmp_path / "garbage.pem").write_text("not a certificate\n")
    with pytest.raises(ConfigurationError) as garbage:
        OsrmHttpSource.from_config(read_source(write_source(tmp_path, "car-fastest", ["https://127.0.0.1:1"], ca_file="garbage.pem")))
    assert "http.ca_file: expected a readable file of PEM certificates" in garbage.value.message
    self_signed_certificate(tmp_path)
    with pytest.raises(ConfigurationError) as both:
        OsrmHttpSource.from_config(
            read_source(write_source(tmp_path, "car-fastest", ["https://127.0.0.1:1"], ca_file="server.crt", verify=False))
        )
    assert "http.ca_file: not used with verify = false" in both.value.message
    source = OsrmHttpSource.from_config(read_source(write_source(tmp_path, "car-fastest", ["https://127.0.0.1:1"], ca_file="server.crt")))
    assert isinstance(source, OsrmHttpSource) and source.options.http.relative_to(source.config.path).ca_file == tmp_path / "server.crt"


async def test_http_proxy_is_used_and_no_proxy_hosts_bypass_it(
    tmp_path: Path, routed: dict[str, EngineServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    without_proxies(monkeypatch)
    server = routed["car-fastest"]
    direct = await remote(tmp_path / "direct", "car-fastest", [server.url])
    expected = await direct.route(ROUTE)
    await direct.disconnect()
    proxy = await LoopbackProxy().start()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        through = await remote(tmp_path / "through", "car-fastest", [server.url])
        same(await through.route(ROUTE), expected)
        await through.disconnect()
        assert any(url.startswith(server.url + "/nearest/v1/driving/0,0") for url in proxy.seen), "the probe went through the proxy"
        assert any(url.startswith(server.url + "/route/v1/driving/") for url in proxy.seen), "the route went through the proxy"

        proxy.seen.clear()
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        bypass = await remote(tmp_path / "bypass", "car-fastest", [server.url])
        same(await bypass.route(ROUTE), expected)
        await bypass.disconnect()
        assert proxy.seen == []

        # A proxy that is not there: without NO_PROXY nothing reaches the server.
        monkeypatch.delenv("NO_PROXY")
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")
        with pytest.raises(SourceUnavailable):
            await remote(tmp_path / "dead-proxy", "car-fastest", [server.url])
    finally:
        await proxy.stop()


def test_a_gateway_started_before_its_server_serves_once_the_server_answers(
    tmp_path: Path, osrm_example: Path, routed: dict[str, EngineServer]
) -> None:
    servers = dict(routed)
    car = servers["car-fastest"] = osrm_routed(Path(routed["car-fastest"].command[-1]))
    gateway = _gateway(osrm_example, tmp_path / "gateway", servers)
    service = gateway.read_text().replace("[limits]", "[limits]\nconnect_retry_initial = 0.2\nconnect_retry_max = 0.5")
    gateway.write_text(service)
    with service_client(gateway) as through:
        before = through.get(ROUTES[1])
        assert before.status_code == 400  # the source is red: its cost is not served yet (never a 500)
        assert through.get(ROUTES[2]).status_code == 200  # the resource's other sources are
        with running(car):
            deadline = time.monotonic() + 15
            while (status := through.get(ROUTES[1]).status_code) != 200 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert status == 200


@pytest.fixture(scope="module")
def gateway_native(tmp_path_factory: pytest.TempPathFactory, osrm_example: Path, routed: dict[str, EngineServer]) -> Iterator[Any]:
    """The native API's differential service (resource ``diff``, small limits) on osrm-http sources.

    Its servers run with osrm-routed's default limits: the resource's smaller ones must apply anyway.
    """
    root = tmp_path_factory.mktemp("gateway-native")
    service = write_native_service(Path(_gateway(osrm_example, root / "gateway", routed)).parent, root / "native")
    with service_client(service) as client:
        yield client


@pytest.mark.parametrize("service", ["route", "nearest", "table", "trip", "match", "tile"])
def test_the_native_api_through_osrm_http_equals_the_in_process_answers(service: str, gateway_native: Any, native: Any) -> None:
    rng = random.Random(f"roadkit-remote-native-{service}")
    failures: list[str] = []
    statuses: dict[int, int] = {}
    count = 40 if service == "tile" else 80
    for _ in range(count):
        url = encode(generate(service, rng))
        expected = native_get(native, url)
        statuses[expected[0]] = statuses.get(expected[0], 0) + 1
        try:
            compare(url, expected, native_get(gateway_native, url))
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, f"{len(failures)} of {count} answers differ:\n" + "\n".join(failures[:5])
    assert statuses.get(200, 0) >= count // 6, statuses
    if service != "tile":
        assert statuses.get(400, 0) >= count // 12, statuses


# Encoded characters: one level is decoded before the query is parsed and one more while it is.
ENCODED_URLS = [
    "/nearest/v1/driving/7.41337,43.72956?number=%2533",
    "/nearest/v1/driving/7.41337,43.72956?number=%252533",
    "/nearest/v1/driving/7.41337%2C43.72956?number=2",
    "/route/v1/driving/polyline(%7Bv%7CiGwtll%40kCiF)?overview=false",
    "/route/v1/driving/7.41337,43.72956;7.41983,43.73115?exclude=motorway%25",
    "/route/v1/driving/7.41337,43.72956;7.41983,43.73115?annotations=true&geometries=polyline6&steps=true",
    "/table/v1/driving/7.41337,43.72956;7.41983,43.73115;7.4246,43.7383?sources=0&annotations=duration,distance",
]


def test_the_native_api_forwards_encoded_characters_as_osrm_routed_reads_them(gateway_native: Any, native: Any) -> None:
    statuses = []
    for url in ENCODED_URLS:
        expected = native_get(native, url)
        compare(url, expected, native_get(gateway_native, url))
        statuses.append(expected[0])
    assert statuses.count(200) >= 4 and statuses.count(400) >= 1, statuses


async def test_a_server_whose_front_answers_503_is_failed_over(tmp_path: Path, routed: dict[str, EngineServer]) -> None:
    """A load balancer or proxy in front of a dead server says 502/503/504: that server is left out."""
    from aiohttp import ClientSession, web

    server = routed["car-fastest"]
    gone = False

    async def front(request: web.Request) -> web.Response:
        if gone:
            return web.Response(status=503, text="no healthy upstream")
        async with ClientSession(trust_env=False) as session, session.get(server.url + request.path_qs) as answer:
            return web.Response(status=answer.status, body=await answer.read(), content_type="application/json")

    runner = web.AppRunner(_front_app(front))
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    front_url = f"http://127.0.0.1:{port}"
    source = await remote(tmp_path, "car-fastest", [front_url, server.url], health_interval=30)
    try:
        assert {s["url"]: s["state"] for s in source.health()["servers"]} == {front_url: "up", server.url: "up"}
        gone = True
        results = [await source.route(ROUTE) for _ in range(6)]
        assert all(r == results[0] for r in results)
        states = {s["url"]: s for s in source.health()["servers"]}
        assert states[front_url]["state"] == "down" and "HTTP 503" in states[front_url]["reason"]
        assert source.state is SourceState.GREEN
    finally:
        await source.disconnect()
        await runner.cleanup()


def _front_app(handler: Any) -> Any:
    from aiohttp import web

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handler)
    return app


class GatedOsrm:
    """A front of an osrm-routed server that holds every ban probe (a route with ``exclude``) until released.

    The release comes from a coroutine of the test's event loop: a probe made by a blocking call on
    that loop could never be released (the front gives up after a while and says so in ``held``).
    """

    def __init__(self, target: str) -> None:
        import http.server
        import threading
        import urllib.request

        self.released = threading.Event()
        self.probed = threading.Event()
        self.held: list[bool] = []  # per probe: released by the loop (True) or given up (False)
        gate = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if "exclude=" in self.path:
                    gate.probed.set()
                    gate.held.append(gate.released.wait(5))
                try:
                    with urllib.request.urlopen(target + self.path, timeout=10) as answer:
                        status, body = answer.status, answer.read()
                except urllib.error.HTTPError as error:
                    status, body = error.code, error.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


async def test_ban_combinations_are_learnt_without_blocking_the_event_loop(
    tmp_path: Path, osrm_example: Path, routed: dict[str, EngineServer]
) -> None:
    # Before: learnt by a blocking HTTP call while the resources were built, so the service's event loop (the
    # administrator's, for a service in its process) stood still for each probe, up to the health time-out.
    from roadkit.config import load_service
    from roadkit.routing.resources import capabilities_of
    from roadkit.serving.service import Service

    gate = GatedOsrm(routed["car-fastest"].url)
    service_file = _gateway(osrm_example, tmp_path / "gateway", routed)
    write_source(service_file.parent / "sources", "car-fastest", [gate.url], source_id="monaco-osrm-car-fastest", health_timeout=30)
    service = Service(load_service(service_file), Plugins.create())
    starting = asyncio.create_task(service.start())
    try:
        while not gate.probed.is_set():  # the loop runs while a probe is held...
            assert not starting.done(), "the service started without asking which bans the dataset applies"
            await asyncio.sleep(0.01)
        gate.released.set()  # ...and releases it: the probes wait on the loop, they do not block it
        await starting
        assert gate.held and all(gate.held), gate.held
        route = next(op for op in capabilities_of(service.resources["monaco-osrm"])["availableOperations"] if op["id"] == "route")
        constraints = next(p for p in route["availableParameters"] if p["id"] == "constraints")
        combinations = next(c["combinations"] for c in constraints["values"]["bannedCombinations"] if c["optimization"] == "fastest")
        # The combinations the Monaco car profile declares (as the in-process source learns them).
        assert [[c["value"] for c in combination] for combination in combinations] == [
            ["autoroute"],
            ["peage"],
            ["bac"],
            ["pont"],
            ["autoroute", "tunnel"],
            ["autoroute", "tunnel", "pont"],
        ]
    finally:
        gate.close()
        await service.stop()
