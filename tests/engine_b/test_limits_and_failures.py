"""The Actor pool, the time-out and response-size limits, load failures and configuration errors."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest

from roadkit.config import load_service
from roadkit.config.loader import read_source
from roadkit.errors import ConfigurationError, SourceUnavailable
from roadkit.plugins import Plugins
from roadkit.routing.model import Cost, RouteRequest
from roadkit.routing.source import SourceState
from roadkit.serving.app import create_app
from roadkit.serving.service import Service
from roadkit.web.api import error_response
from roadkit_valhalla import ValhallaSource
from tests.engine_b.conftest import END, START, connected, edit_source

ROUTE = "/simple/1.0.0/route"
ISOCHRONE = "/simple/1.0.0/isochrone"
NEAREST = "/simple/1.0.0/nearest"
ROUTE_PARAMS = {"resource": "monaco-valhalla", "start": "7.41337,43.72956", "end": "7.41983,43.73115"}
ISO_PARAMS = {"resource": "monaco-valhalla", "point": "7.41337,43.72956", "costType": "time", "costValue": "600"}


def service_of(example: Path) -> Service:
    return Service(load_service(example / "service.toml"), Plugins.create())


def test_actors_are_created_once_per_engine_thread_and_reused(variant: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import valhalla
    from starlette.testclient import TestClient

    created: list[Any] = []

    class CountingActor(valhalla.Actor):  # type: ignore[misc]
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            created.append(self)

    monkeypatch.setattr(valhalla, "Actor", CountingActor)
    edit_source(variant, limits={"threads": 2})
    service = service_of(variant)
    with TestClient(create_app(service)) as client:
        assert len(created) == 2
        for i in range(10):
            assert client.get(ROUTE, params={**ROUTE_PARAMS, "profile": ["car", "pedestrian"][i % 2]}).status_code == 200
            assert client.get(ISOCHRONE, params={**ISO_PARAMS, "costValue": str(60 + i)}).status_code == 200
            assert client.get(NEAREST, params={"resource": "monaco-valhalla", "coordinates": "7.41337,43.72956"}).status_code == 200
        assert len(created) == 2
    assert service.sources["monaco-valhalla"].threads() == 2


@pytest.mark.parametrize(("workers", "threads", "expected"), [(1, None, 4), (2, None, 2), (3, None, 1), (8, None, 1), (2, 3, 3)])
async def test_a_workers_engine_threads_default_to_its_share_of_the_cores(
    variant: Path, monkeypatch: pytest.MonkeyPatch, workers: int, threads: int | None, expected: int
) -> None:
    """A worker of ``workers`` processes on a 4-core machine: as many engine threads in all as cores."""
    import socket

    from roadkit.config import models
    from roadkit.process.worker import Worker

    monkeypatch.setattr(models, "usable_cores", lambda: 4)
    if threads is not None:
        edit_source(variant, limits={"threads": threads})
    listener = socket.create_server(("127.0.0.1", 0))
    spec = {"service": "main", "worker": 0, "workers": workers, "configuration": str(variant / "service.toml")}
    worker = Worker({**spec, "listeners": {"127.0.0.1:8080": listener.fileno()}})
    try:
        await worker._start()
        source = worker.service.sources["monaco-valhalla"]
        assert source.threads() == expected and source._engine.alive() == expected
        assert source.context.cores == max(1, 4 // workers)
    finally:
        await worker._stop()
        listener.close()


async def test_concurrent_requests_on_the_pool_answer_like_sequential_ones(valhalla_example: Path) -> None:
    source = ValhallaSource.from_config(read_source(valhalla_example / "sources" / "monaco-valhalla.source"))
    await source.connect()
    rng = random.Random(7)
    requests = [
        RouteRequest(
            ((rng.uniform(7.41, 7.438), rng.uniform(43.725, 43.748)), (rng.uniform(7.41, 7.438), rng.uniform(43.725, 43.748))),
            Cost("car", "fastest"),
        )
        for _ in range(40)
    ]
    sequential = [(await source.route(r)).distance for r in requests]
    concurrent = [r.distance for r in await asyncio.gather(*(source.route(r) for r in requests))]
    await source.disconnect()
    assert concurrent == sequential


def test_a_request_over_the_time_out_is_a_504_and_the_source_stays_usable(variant: Path) -> None:
    from starlette.testclient import TestClient

    edit_source(variant, timeout=0.001)  # the smallest time-out a source file may set
    service = service_of(variant)
    with TestClient(create_app(service)) as client:
        response = client.get(ISOCHRONE, params={**ISO_PARAMS, "profile": "pedestrian", "costValue": "3600"})
        assert response.status_code == 504, response.text
        assert response.json()["error"] == {
            "errorType": "engine_timeout",
            "message": "The engine of source monaco-valhalla did not answer within 0.001 s",
        }
        source = service.sources["monaco-valhalla"]
        assert source.state is SourceState.GREEN and service.health()["state"] == "green"
        source.timeout = 10.0
        assert client.get(ISOCHRONE, params={**ISO_PARAMS, "profile": "pedestrian", "costValue": "3600"}).status_code == 200


def test_an_answer_over_the_size_limit_is_refused_and_the_source_stays_usable(variant: Path) -> None:
    from starlette.testclient import TestClient

    edit_source(variant, limits={"max_response_bytes": 4000})
    with TestClient(create_app(service_of(variant))) as client:
        response = client.get(ROUTE, params={**ROUTE_PARAMS, "getSteps": "true"})
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["errorType"] == "response_too_large"
        assert "larger than the 4000 bytes source monaco-valhalla accepts" in error["message"] and "getSteps=false" in error["message"]
        assert client.get(ROUTE, params={**ROUTE_PARAMS, "getSteps": "false"}).status_code == 200
        assert client.get(NEAREST, params={"resource": "monaco-valhalla", "coordinates": "7.41337,43.72956"}).status_code == 200


@pytest.mark.parametrize(
    ("storage", "reason"),
    [
        ({"config": "../data/valhalla/missing.json"}, "cannot read the Valhalla configuration"),
        ({"config": "empty.json"}, "points to no tiles"),
    ],
)
async def test_an_actor_that_cannot_load_leaves_the_source_red_and_the_service_up(
    variant: Path, storage: dict[str, str], reason: str
) -> None:
    (variant / "sources" / "empty.json").write_text(json.dumps({"mjolnir": {"tile_dir": str(variant / "no-tiles")}}))
    edit_source(variant, storage=storage)
    service = service_of(variant)
    await service.start()
    health = service.health()
    assert service.state == "ready" and service.resources == {}
    (entry,) = health["sources"]
    assert entry["state"] == "red" and reason in entry["reason"] and "monaco-valhalla" not in service.resources
    await service.stop()


async def test_an_actor_constructor_failure_is_caught(variant: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import valhalla

    def broken(config: Any) -> Any:
        raise RuntimeError("Failed to load tiles: corrupt tile header")

    monkeypatch.setattr(valhalla, "Actor", broken)
    service = service_of(variant)
    await service.start()
    (entry,) = service.health()["sources"]
    assert entry["state"] == "red" and "corrupt tile header" in entry["reason"]
    await service.stop()


async def test_requests_before_connecting_are_a_503(valhalla_example: Path) -> None:
    source = ValhallaSource.from_config(read_source(valhalla_example / "sources" / "monaco-valhalla.source"))
    from roadkit.errors import SourceUnavailable

    with pytest.raises(SourceUnavailable):
        await source.route(RouteRequest((START, END), Cost("car", "fastest")))


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"costs": [{"profile": "car", "optimization": "fastest", "costing": "hovercraft"}]}, "costs[0].costing: expected one of"),
        (
            {"costs": [{"profile": "car", "costing": "auto"}]},
            "costs[0]: expected an optimization (routes) or a cost_type (isochrones), got neither",
        ),
        (
            {"costs": [{"profile": "car", "optimization": "fastest", "costing": "auto"}] * 2},
            "costs[1]: profile 'car' with optimization 'fastest' is already costs[0]",
        ),
        (
            {"costs": [{"profile": "p", "cost_type": "time", "costing": "pedestrian", "walking_speed": 90}]},
            "costs[0].walking_speed: expected km/h between 0.5 and 25, got 90",
        ),
        ({"costs": [{"profile": "car", "cost_type": "money", "costing": "auto"}]}, "costs[0].cost_type"),
        ({"costs": []}, "costs: expected at least one cost"),
        ({"storage": {"config": 3}}, "storage.config: expected a string, got 3"),
        ({"costs": [{"optimization": "fastest", "costing": "auto"}]}, "costs[0].profile: required key is missing"),
        ({"limits": {"threads": 0}}, "limits.threads: expected a positive integer, got 0"),
        ({"limits": {"engine_calls": "fast"}}, "limits.engine_calls: expected one of 'threads', 'inline', got 'fast'"),
        (
            {"limits": {"engine_calls": "inline", "threads": 2}},
            'limits.engine_calls: "inline" calls one Actor on the event loop\'s thread and needs limits.threads = 1, got 2',
        ),
        ({"limits": {"engine_calls": "inline"}}, "needs limits.threads = 1, got no limits.threads (a share of the cores)"),
        ({"limits": {"max_response_bytes": "big"}}, "limits.max_response_bytes: expected an integer, got 'big'"),
        ({"limits": {"batch": 0}}, "limits.batch: expected a positive integer (1: no batches), got 0"),
        ({"limits": {"batch": "many"}}, "limits.batch: expected an integer, got 'many'"),
        ({"limits": {"batch_delay_ms": -5}}, "limits.batch_delay_ms: expected milliseconds from 0 to 60000, got -5"),
        ({"limits": {"speed": 3}}, "limits: unknown key(s) speed"),
        ({"projection": "EPSG:2154"}, "projection: Valhalla works in EPSG:4326"),
    ],
)
def test_configuration_errors_name_file_key_and_expectation(variant: Path, changes: dict[str, Any], problem: str) -> None:
    path = edit_source(variant, **changes)
    with pytest.raises(ConfigurationError) as raised:
        ValhallaSource.from_config(read_source(path))
    assert any(p.startswith(f"{path}: ") and problem in p for p in raised.value.problems), raised.value.problems


def test_road2_source_files_are_accepted(variant: Path) -> None:
    road2 = {
        "source": {
            "id": "bdtopo-valhalla",
            "type": "valhalla",
            "projection": "EPSG:4326",
            "bbox": "7.349,43.71,7.491,43.77",
            "storage": {"tar": "../data/valhalla/tiles.tar", "dir": "../data/valhalla/tiles", "config": "../data/valhalla/valhalla.json"},
            "costs": [
                {"profile": "car", "optimization": "fastest", "costType": "time", "costing": "auto"},
                {"profile": "car", "optimization": "shortest", "costType": "distance", "costing": "auto_shorter"},
                {"profile": "pedestrian", "optimization": "shortest", "costType": "distance", "costing": "pedestrian"},
            ],
        }
    }
    path = variant / "sources" / "road2.source"
    path.write_text(json.dumps(road2))
    source = ValhallaSource.from_config(read_source(path))
    assert source.resolve_cost(Cost("car", "shortest")).options == {"auto": {"shortest": True}}
    assert source.resolve_cost(Cost("pedestrian", cost_type="distance")).costing == "pedestrian"
    assert source.options.storage.tar == (variant / "data" / "valhalla" / "tiles.tar").resolve()


async def test_disconnecting_stops_the_engine_threads_and_refuses_new_calls(valhalla_example: Path) -> None:
    import time

    source = ValhallaSource.from_config(read_source(valhalla_example / "sources" / "monaco-valhalla.source"))
    for _ in range(3):
        await source.connect()
        under_way = asyncio.ensure_future(source.route(RouteRequest((START, END), Cost("car", "fastest"))))
        await asyncio.sleep(0)
        engine = source._engine
        assert engine is not None and engine.alive() == source.threads()
        await source.disconnect()
        assert (await under_way).distance > 0  # a call handed over before the disconnect is answered
        deadline = time.monotonic() + 5
        while engine.alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert engine.alive() == 0
    with pytest.raises(SourceUnavailable):
        await source.route(RouteRequest((START, END), Cost("car", "fastest")))


async def test_inline_engine_calls_answer_as_the_engine_threads_in_arrival_order_on_the_loop_thread(variant: Path) -> None:
    """``limits.engine_calls = "inline"``: the one Actor called on the event loop's thread, in arrival order;
    a call whose request gave up while waiting is skipped; the answers are the threads' own."""
    import threading

    from roadkit.routing.model import IsochroneRequest
    from roadkit_valhalla.engine_threads import InlineEngine

    rng = random.Random(11)
    requests = [
        IsochroneRequest((rng.uniform(7.41, 7.438), rng.uniform(43.725, 43.748)), Cost("car", cost_type="time"), (rng.choice([120, 300]),))
        for _ in range(12)
    ]
    threaded = await connected(variant)
    expected = [await threaded.isochrone(r) for r in requests]
    await threaded.disconnect()

    edit_source(variant, limits={"engine_calls": "inline", "threads": 1})
    source = ValhallaSource.from_config(read_source(variant / "sources" / "monaco-valhalla.source"))
    await source.connect()
    engine = source._engine
    assert isinstance(engine, InlineEngine) and engine.alive() == 1
    called: list[tuple[int, float]] = []
    call = source._call

    def recording(action: str, body: dict[str, Any]) -> str:
        called.append((threading.get_ident(), body["locations"][0]["lon"]))
        return call(action, body)

    source._call = recording  # type: ignore[method-assign]
    tasks = [asyncio.ensure_future(source.isochrone(r)) for r in requests]
    await asyncio.sleep(0)  # every request has handed its call over
    tasks[3].cancel()  # gave up while waiting: its call is skipped
    answers = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(answers[3], asyncio.CancelledError)
    kept = [i for i in range(len(requests)) if i != 3]
    assert [lon for _, lon in called] == [requests[i].point[0] for i in kept]  # arrival order, the cancelled one skipped
    assert {thread for thread, _ in called} == {threading.get_ident()}  # the event loop's own thread
    for i in kept:
        assert answers[i].geometries == expected[i].geometries  # type: ignore[union-attr]

    # A call under way is not cut by a disconnect; no new call is taken after it.
    under_way = asyncio.ensure_future(source.isochrone(requests[0]))
    await asyncio.sleep(0)
    await source.disconnect()
    assert (await under_way).geometries == expected[0].geometries
    assert engine.alive() == 0
    with pytest.raises(RuntimeError):
        await engine.run(len, ())
    with pytest.raises(SourceUnavailable):
        await source.isochrone(requests[0])


@pytest.mark.parametrize("batch", [1, 8])
async def test_inline_engine_calls_let_a_waiting_connection_be_accepted_before_the_next_call(batch: int) -> None:
    """A connection that arrives during a call is accepted before the calls queued after it (not after them all):
    it ends a batch."""
    import socket
    import time

    from roadkit.config.models import Listener
    from roadkit.process.accept import Acceptor, connection_waiting
    from roadkit.process.listen import bind_listener
    from roadkit_valhalla.engine_threads import Batching, InlineEngine

    sock = bind_listener(Listener(host="127.0.0.1", port=0))
    made: list[asyncio.BaseTransport] = []

    class Recorder(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            made.append(transport)

    acceptor = Acceptor(sock, Recorder)
    acceptor.start()
    seen: list[int] = []
    clients: list[socket.socket] = []

    def call(i: int) -> int:
        seen.append(len(made))  # the connections this process had made when the call ran
        if i == 0:
            clients.append(socket.create_connection(sock.getsockname()[:2]))  # arrives during the first call
        time.sleep(0.01)
        return i

    # A worker gives its sources the process's connection_waiting in their SourceContext.
    engine = InlineEngine(object(), Batching(batch, 10.0), connection_waiting)
    try:
        assert await asyncio.gather(*(engine.run(call, i) for i in range(4))) == [0, 1, 2, 3]
        assert seen[0] == 0 and seen[1] == 1  # accepted (and its transport made) before the second call
    finally:
        acceptor.close()
        for client in clients:
            client.close()
        for transport in made:
            transport.close()


@pytest.mark.parametrize(
    ("text", "code"),
    [("No path could be found for input", "no_path"), ("Exceeded max locations: 20", "parameter_invalid"), ("Bad tile", "engine_error")],
)
def test_valhallas_identified_errors_are_logged_at_debug(text: str, code: str, caplog: pytest.LogCaptureFixture) -> None:
    from roadkit_valhalla.base import engine_error

    with caplog.at_level(logging.DEBUG):
        error = engine_error(text, "route")
        assert error.code == code
        response = error_response(error)
    assert response.status_code >= 400
    records = [r for r in caplog.records if r.name.startswith(("roadkit", "roadkit_valhalla"))]
    assert all(r.levelno == logging.DEBUG for r in records), [(r.levelname, r.getMessage()) for r in records]
