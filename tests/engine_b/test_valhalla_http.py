"""Source kind ``valhalla-http`` against real valhalla_service servers on the cached Monaco tiles.

Its answers must equal the in-process ``valhalla`` source's on the same tiles (one translation for
both): routes of every cost, isochrones, nearest points and errors, through the source and through
the simple API of a gateway service that holds no tiles.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from roadkit.config.loader import read_source
from roadkit.errors import ConfigurationError, NoPathFound, ParameterInvalid, RoadkitError, SourceUnavailable
from roadkit.plugins import Plugins
from roadkit.routing.model import Constraint, Cost, IsochroneRequest, NearestRequest, RouteRequest
from roadkit.routing.source import SourceState
from roadkit.testing import SourceContract, service_client
from roadkit_valhalla import ValhallaHttpSource, ValhallaSource
from tests.engine_b.conftest import END, START, VIA
from tests.engine_servers import (
    EngineServer,
    LoopbackProxy,
    TlsProxy,
    free_port,
    kill_under_load,
    running,
    same,
    self_signed_certificate,
    valhalla_service,
    wait_for,
    without_proxies,
)

FAR = ((7.4167, 43.7284), (7.4350, 43.7480))  # Fontvieille → Larvotto, along bus line 1 of the demo feed
MORNING = datetime(2026, 6, 15, 8, 0)


@pytest.fixture(scope="module")
def service_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("valhalla-service")


@pytest.fixture(scope="module")
def served(valhalla_config: Path, service_dir: Path) -> Iterator[EngineServer]:
    """valhalla_service on the Monaco tiles the in-process source loads."""
    with running(valhalla_service(valhalla_config, service_dir)) as (server,):
        yield server


def write_source(example: Path, folder: Path, servers: list[str], **changes: Any) -> Path:
    """The example's Valhalla source file as a ``valhalla-http`` source on ``servers`` (same id, costs and limits)."""
    data = tomllib.loads((example / "sources" / "monaco-valhalla.source").read_text())
    for key in ("storage", "preparation"):
        data.pop(key)
    data["type"] = "valhalla-http"
    data["http"] = {"servers": servers, **changes.pop("http", {})}
    data.update(changes)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "monaco-valhalla.source"
    path.write_text(json.dumps(data))
    return path


async def remote(example: Path, folder: Path, servers: list[str], **changes: Any) -> ValhallaHttpSource:
    source = ValhallaHttpSource.from_config(read_source(write_source(example, folder, servers, **changes)))
    assert isinstance(source, ValhallaHttpSource)
    await source.connect()
    return source


@pytest.fixture
async def pair(valhalla_example: Path, tmp_path: Path, served: EngineServer) -> AsyncIterator[tuple[ValhallaHttpSource, ValhallaSource]]:
    """The same source file served over HTTP and in process."""
    over_http = await remote(valhalla_example, tmp_path, [served.url])
    in_process = ValhallaSource.from_config(read_source(valhalla_example / "sources" / "monaco-valhalla.source"))
    assert isinstance(in_process, ValhallaSource)
    await in_process.connect()
    yield over_http, in_process
    await over_http.disconnect()
    await in_process.disconnect()


def test_the_kind_is_discovered_through_the_plugin_entry_point() -> None:
    assert Plugins.create().source_kinds()["valhalla-http"] is ValhallaHttpSource
    assert ValhallaHttpSource.resource_type == "valhalla"


async def test_routes_of_every_cost_equal_the_in_process_source(pair: tuple[ValhallaHttpSource, ValhallaSource]) -> None:
    over_http, in_process = pair
    assert over_http.costs() == in_process.costs()
    requests = [
        RouteRequest((START, VIA, END), Cost("car", "fastest"), steps=True),
        RouteRequest((START, END), Cost("car", "shortest"), steps=False),
        RouteRequest((END, START), Cost("pedestrian", "fastest"), steps=True),
        RouteRequest((START, VIA), Cost("pedestrian", "shortest"), steps=True),
        RouteRequest(FAR, Cost("multimodal", "fastest"), steps=True, date_time=MORNING),
        RouteRequest(
            (START, VIA), Cost("car", "fastest"), constraints=(Constraint("banned", "wayType", "=", "tunnel", field="exclude_tunnels"),)
        ),
    ]
    for request in requests:
        same(await over_http.route(request), await in_process.route(request), str(request.cost))


async def test_isochrones_and_nearest_equal_the_in_process_source(pair: tuple[ValhallaHttpSource, ValhallaSource]) -> None:
    over_http, in_process = pair
    isochrones = [
        IsochroneRequest(START, Cost("car", cost_type="time"), (120.0, 300.0)),
        IsochroneRequest(START, Cost("car", cost_type="distance"), (1500.0,), direction="arrival"),
        IsochroneRequest(VIA, Cost("pedestrian", cost_type="time"), (600.0,)),
        IsochroneRequest(FAR[0], Cost("multimodal", cost_type="time"), (900.0,), date_time=MORNING),
    ]
    for request in isochrones:
        same(await over_http.isochrone(request), await in_process.isochrone(request), str(request.cost))
    for number in (1, 5):
        same(await over_http.nearest(NearestRequest(START, number)), await in_process.nearest(NearestRequest(START, number)))


async def test_errors_equal_the_in_process_source(pair: tuple[ValhallaHttpSource, ValhallaSource]) -> None:
    over_http, in_process = pair
    cases: list[tuple[str, Any, type[RoadkitError]]] = [
        ("route", RouteRequest(((0.1, 0.1), START), Cost("car", "fastest")), NoPathFound),  # far from any tile
        # Fontvieille → Larvotto without the tunnels: no way through.
        (
            "route",
            RouteRequest(
                FAR, Cost("car", "fastest"), constraints=(Constraint("banned", "wayType", "=", "tunnel", field="exclude_tunnels"),)
            ),
            NoPathFound,
        ),
        (
            "isochrone",
            IsochroneRequest(START, Cost("car", cost_type="time"), (60.0 * 60 * 24,)),
            ParameterInvalid,
        ),  # over the contour limit
        ("route", RouteRequest((START, END), Cost("bicycle", "fastest")), ParameterInvalid),  # a cost the source lacks
    ]
    for operation, request, kind in cases:
        errors = []
        for source in (over_http, in_process):
            with pytest.raises(kind) as caught:
                await getattr(source, operation)(request)
            errors.append((caught.value.status, caught.value.code, caught.value.message))
        assert errors[0] == errors[1], operation
    assert over_http.state is SourceState.GREEN  # an engine's error answer is not a server failure


async def test_the_response_size_limit_applies_as_in_process(valhalla_example: Path, tmp_path: Path, served: EngineServer) -> None:
    source = await remote(valhalla_example, tmp_path, [served.url], limits={"max_response_bytes": 4000})
    try:
        with pytest.raises(RoadkitError) as caught:
            await source.route(RouteRequest((START, VIA, END), Cost("car", "fastest"), steps=True))
        assert (caught.value.status, caught.value.code) == (400, "response_too_large")
        assert "4000 bytes" in caught.value.message
        assert (await source.nearest(NearestRequest(START))).points  # a small answer still fits
    finally:
        await source.disconnect()


def test_configuration_problems_name_the_file_and_key(valhalla_example: Path, tmp_path: Path) -> None:
    path = write_source(valhalla_example, tmp_path, ["valhalla:8002"], limits={"threads": 2}, projection="EPSG:2154")
    with pytest.raises(ConfigurationError, match="projection: Valhalla works in EPSG:4326"):
        ValhallaHttpSource.from_config(read_source(path))
    limits = {"threads": 2, "engine_calls": "inline", "batch": 4}
    path = write_source(valhalla_example, tmp_path, ["valhalla:8002"], limits=limits, http={"health_interval": -1})
    with pytest.raises(ConfigurationError) as caught:
        ValhallaHttpSource.from_config(read_source(path))
    problems = "\n".join(caught.value.problems)
    assert f"{path}: http.servers[0]: expected an http:// or https:// base URL, got 'valhalla:8002'" in problems
    assert "http.health_interval: expected seconds > 0, got -1" in problems
    assert "limits.threads: not used by valhalla-http sources" in problems
    assert "limits.engine_calls: not used by valhalla-http sources (the servers make the calls); remove it" in problems
    assert "limits.batch: not used by valhalla-http sources (the servers make the calls); remove it" in problems
    path = write_source(valhalla_example, tmp_path, ["http://127.0.0.1:1"], limits={"max_locations": 1})
    with pytest.raises(ConfigurationError, match=r"limits.max_locations: expected an integer >= 2 .*, got 1"):
        ValhallaHttpSource.from_config(read_source(path))


def test_max_locations_is_read_from_valhalla_json_by_the_in_process_kind(valhalla_example: Path, tmp_path: Path) -> None:
    folder = tmp_path / "example"
    shutil.copytree(valhalla_example, folder, symlinks=True)
    path = folder / "sources" / "monaco-valhalla.source"
    path.write_text(path.read_text().replace("nearest_radius = 200", "nearest_radius = 200\nmax_locations = 20"))
    expected = r"limits.max_locations: only for valhalla-http sources; this kind reads it from valhalla.json"
    with pytest.raises(ConfigurationError, match=expected):
        ValhallaSource.from_config(read_source(path))


def test_a_gateway_states_and_applies_its_servers_max_locations(valhalla_example: Path, tmp_path: Path, served: EngineServer) -> None:
    """limits.max_locations of a valhalla-http source (its servers' service_limits): the document's count and osrm-routed's TooBig."""
    gateway = tmp_path / "gateway"
    shutil.copytree(valhalla_example, gateway, symlinks=True, ignore=shutil.ignore_patterns("data", "*.pbf", "gtfs"))
    (gateway / "sources" / "monaco-valhalla.source").unlink()
    write_source(valhalla_example, gateway / "sources", [served.url], limits={"max_locations": 5})
    points = ";".join(f"{START[0] + i * 1e-4:.5f},{START[1]}" for i in range(6))
    with service_client(gateway / "service.toml") as through:
        document = through.get("/osrm/1.0.0/openapi.json").json()
        body = document["paths"]["/monaco-valhalla/route/v1/{profile}"]["post"]["requestBody"]["content"]["application/json"]
        assert body["schema"]["properties"]["coordinates"]["anyOf"][0]["maxItems"] == 5
        answer = through.get(f"/osrm/1.0.0/monaco-valhalla/route/v1/car/{points}")
        too_big = {"code": "TooBig", "message": "Number of entries 6 is higher than current maximum (5)"}
        assert (answer.status_code, answer.json()) == (400, too_big)
        assert through.get(f"/osrm/1.0.0/monaco-valhalla/route/v1/car/{points.rsplit(';', 1)[0]}").status_code == 200


URLS = [
    "/simple/1.0.0/getcapabilities",
    "/simple/1.0.0/route?resource=monaco-valhalla&start=7.41337,43.72956&end=7.41983,43.73115&intermediates=7.4246,43.7383",
    "/simple/1.0.0/route?resource=monaco-valhalla&start=7.4167,43.7284&end=7.4350,43.7480&profile=multimodal"
    "&date_time=2026-06-15T08:00&timeUnit=second",
    "/simple/1.0.0/route?resource=monaco-valhalla&start=7.41337,43.72956&end=7.41983,43.73115&profile=pedestrian&geometryFormat=polyline",
    "/simple/1.0.0/isochrone?resource=monaco-valhalla&point=7.41337,43.72956&costType=time&costValue=300",
    "/simple/1.0.0/isochrone?resource=monaco-valhalla&point=7.41337,43.72956&costType=distance&costValue=2000&direction=arrival",
    "/simple/1.0.0/nearest?resource=monaco-valhalla&coordinates=7.41337,43.72956&nbPoints=3",
    "/simple/1.0.0/route?resource=monaco-valhalla&start=7.35,43.711&end=7.41983,43.73115",
]


def test_a_gateway_without_tiles_answers_the_simple_api_like_the_in_process_service(
    valhalla_example: Path, tmp_path: Path, served: EngineServer
) -> None:
    gateway = tmp_path / "gateway"
    shutil.copytree(valhalla_example, gateway, symlinks=True, ignore=shutil.ignore_patterns("data", "*.pbf", "gtfs"))
    (gateway / "sources" / "monaco-valhalla.source").unlink()
    write_source(valhalla_example, gateway / "sources", [served.url])
    with service_client(valhalla_example / "service.toml") as direct, service_client(gateway / "service.toml") as through:
        statuses = []
        for url in URLS:
            expected, got = direct.get(url), through.get(url)
            assert got.status_code == expected.status_code, url
            same(got.json(), expected.json(), url)
            statuses.append(got.status_code)
    assert statuses.count(200) >= 7


class TestValhallaHttpContract(SourceContract):
    """The core's source contract, on a valhalla-http source fronting valhalla_service."""

    @pytest.fixture
    async def contract_source(self, valhalla_example: Path, tmp_path: Path, served: EngineServer) -> AsyncIterator[ValhallaHttpSource]:
        source = await remote(valhalla_example, tmp_path, [served.url])
        yield source
        await source.disconnect()

    @pytest.fixture
    def contract_points(self) -> list[tuple[float, float]]:
        return [START, END]


ROUTE = RouteRequest((START, END), Cost("car", "fastest"), steps=True)


async def test_a_server_killed_under_load_costs_no_request(valhalla_example: Path, valhalla_config: Path, tmp_path: Path) -> None:
    with running(valhalla_service(valhalla_config, tmp_path), valhalla_service(valhalla_config, tmp_path)) as (a, b):
        source = await remote(valhalla_example, tmp_path / "source", [a.url, b.url], http={"health_interval": 0.2})
        try:
            expected = await source.route(ROUTE)
            load = await kill_under_load(lambda: source.route(ROUTE), a, calls=25)
            assert load.failures == [], load.failures[:3]
            assert len(load.results) == 200 and load.killed_after < 180
            assert all(result == expected for result in load.results)
            assert {s["url"]: s["state"] for s in source.health()["servers"]} == {a.url: "down", b.url: "up"}
            assert source.state is SourceState.GREEN
        finally:
            await source.disconnect()


async def test_red_with_503s_when_no_server_answers_then_green_again(valhalla_example: Path, valhalla_config: Path, tmp_path: Path) -> None:
    server = valhalla_service(valhalla_config, tmp_path)
    with running(server):
        source = await remote(valhalla_example, tmp_path / "source", [server.url], http={"health_interval": 0.2})
        try:
            server.kill()
            for call in (source.route(ROUTE), source.isochrone(IsochroneRequest(START, Cost("car", cost_type="time"), (60.0,)))):
                with pytest.raises(SourceUnavailable) as caught:
                    await call
                assert caught.value.status == 503
            assert source.state is SourceState.RED
            server.start()
            await wait_for(lambda: source.state is SourceState.GREEN, timeout=30)
            assert (await source.route(ROUTE)).distance > 0
        finally:
            await source.disconnect()
    nowhere = f"http://127.0.0.1:{free_port()}"
    unreachable = ValhallaHttpSource.from_config(read_source(write_source(valhalla_example, tmp_path / "nowhere", [nowhere])))
    with pytest.raises(SourceUnavailable):
        await unreachable.connect()
    assert unreachable.state is SourceState.RED and nowhere in unreachable.health()["reason"]


async def test_an_https_server_answers_the_posts_with_the_sources_ca_file(
    valhalla_example: Path,
    tmp_path: Path,
    served: EngineServer,
    pair: tuple[ValhallaHttpSource, ValhallaSource],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    without_proxies(monkeypatch)
    certfile, keyfile = self_signed_certificate(tmp_path / "tls")
    proxy = await TlsProxy(served.url, certfile, keyfile).start()
    try:
        with pytest.raises(SourceUnavailable, match="certificate verify failed"):
            await remote(valhalla_example, tmp_path / "untrusted", [proxy.url])
        source = await remote(valhalla_example, tmp_path / "trusted", [proxy.url], http={"ca_file": str(certfile)})
        try:
            isochrone = IsochroneRequest(START, Cost("car", cost_type="time"), (300.0,))
            same(await source.isochrone(isochrone), await pair[1].isochrone(isochrone))
            assert "/status" in proxy.seen and "/isochrone" in proxy.seen
        finally:
            await source.disconnect()
    finally:
        await proxy.stop()


async def test_http_proxy_carries_the_posts_and_no_proxy_hosts_bypass_it(
    valhalla_example: Path, tmp_path: Path, served: EngineServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_proxies(monkeypatch)
    isochrone = IsochroneRequest(START, Cost("car", cost_type="time"), (300.0,))
    direct = await remote(valhalla_example, tmp_path / "direct", [served.url])
    expected = await direct.isochrone(isochrone)
    await direct.disconnect()
    proxy = await LoopbackProxy().start()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        through = await remote(valhalla_example, tmp_path / "through", [served.url])
        same(await through.isochrone(isochrone), expected)
        await through.disconnect()
        assert served.url + "/status" in proxy.seen and served.url + "/isochrone" in proxy.seen
        proxy.seen.clear()
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        bypass = await remote(valhalla_example, tmp_path / "bypass", [served.url])
        same(await bypass.isochrone(isochrone), expected)
        await bypass.disconnect()
        assert proxy.seen == []
    finally:
        await proxy.stop()
