"""A service: sources, resources, health, and its app (through the straightline test kind)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from roadkit import hookimpl
from roadkit.config import load_service
from roadkit.plugins import Plugins
from roadkit.serving.app import create_app
from roadkit.serving.service import Service
from tests.core.conftest import SOURCE, TestPlugin, make_service, run, write


def started(path: Path, plugins: Plugins) -> Service:
    service = Service(load_service(path), plugins)
    run(service.start())
    return service


def test_a_service_may_start_with_no_source_and_no_resource(tmp_path: Path, plugins: Plugins) -> None:
    service = started(make_service(tmp_path, sources={}, resource_sources=""), plugins)
    assert service.health()["state"] == "green"
    with TestClient(create_app(service, manage_lifecycle=False)) as client:
        body = client.get("/simple/1.0.0/getcapabilities").json()
        assert body["resources"] == [] and body["operations"] == []
        response = client.get("/simple/1.0.0/route", params={"resource": "lines"})
        assert response.status_code == 400 and "not permitted on this service" in response.json()["error"]["message"]


def test_unknown_source_ids_are_left_out_of_a_resource(tmp_path: Path, plugins: Plugins, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        service = started(make_service(tmp_path, resource_sources='"a", "ghost"'), plugins)
    assert [s.id for s in service.resources["lines"].sources] == ["a"]
    assert "'ghost' is unknown or unavailable" in caplog.text


def test_a_resource_with_no_available_source_is_skipped(tmp_path: Path, plugins: Plugins, caplog: pytest.LogCaptureFixture) -> None:
    sources = {"a": 'id = "a"\ntype = "straightline"\nfail = true\n'}
    with caplog.at_level(logging.WARNING):
        service = started(make_service(tmp_path, sources=sources), plugins)
    assert service.resources == {}
    assert "has no available source; skipped" in caplog.text
    health = service.health()
    assert health["state"] == "red"
    (entry,) = health["sources"]
    connection = entry.pop("connection")  # retried in the background (tests/core/test_reconnect.py)
    assert entry == {"id": "a", "type": "straightline", "state": "red", "reason": "the test engine refused to load"}
    assert connection["attempts"] == 1 and connection["lastError"] == "the test engine refused to load"


def test_health_is_orange_when_less_than_half_the_sources_are_red(tmp_path: Path, plugins: Plugins) -> None:
    sources = {"a": SOURCE.format(id="a"), "b": SOURCE.format(id="b"), "c": 'id = "c"\ntype = "straightline"\nfail = true\n'}
    service = started(make_service(tmp_path, sources=sources, resource_sources='"a", "b", "c"'), plugins)
    assert service.health()["state"] == "orange"
    assert [s.id for s in service.resources["lines"].sources] == ["a", "b"]


def test_a_source_of_an_uninstalled_kind_is_unavailable_not_fatal(tmp_path: Path, plugins: Plugins) -> None:
    sources = {"a": SOURCE.format(id="a"), "z": 'id = "z"\ntype = "nosuchengine"\n'}
    service = started(make_service(tmp_path, sources=sources, resource_sources='"a", "z"'), plugins)
    assert list(service.sources) == ["a"]


def test_route_through_a_third_party_source_kind(tmp_path: Path, plugins: Plugins) -> None:
    service = started(make_service(tmp_path), plugins)
    with TestClient(create_app(service, manage_lifecycle=False)) as client:
        body = client.get(
            "/simple/1.0.0/route", params={"resource": "lines", "start": "0,0", "end": "0.01,0", "intermediates": "-1.5,-2.25"}
        ).json()
        assert body["start"] == "0,0" and body["end"] == "0.01,0"
        assert len(body["portions"]) == 2
        assert body["portions"][0]["end"] == "-1.5,-2.25"  # negative coordinates pass the bbox check
        assert body["distance"] == pytest.approx(sum(p["distance"] for p in body["portions"]))


def test_hook_roadkit_capabilities(tmp_path: Path) -> None:
    class Inspire:
        @hookimpl
        def roadkit_capabilities(self, service: Service, capabilities: dict[str, Any]) -> None:
            capabilities["info"]["inspire"] = {"serviceType": "routing", "service": service.id}

    plugins = Plugins.create(load_entry_points=False, extra_plugins=[TestPlugin(), Inspire()])
    service = started(make_service(tmp_path), plugins)
    with TestClient(create_app(service, manage_lifecycle=False)) as client:
        info = client.get("/simple/1.0.0/getcapabilities").json()["info"]
        assert info["inspire"] == {"serviceType": "routing", "service": "main"}


def test_the_app_lifespan_starts_and_stops_the_service(tmp_path: Path, plugins: Plugins) -> None:
    app = create_app(load_service(make_service(tmp_path)), plugins)
    service = app.state.service
    with TestClient(app) as client:
        assert service.state == "ready"
        assert client.get("/simple/1.0.0/nearest", params={"resource": "lines", "coordinates": "1,1"}).status_code == 200
    assert service.state == "stopped"


def test_projection_lookup(tmp_path: Path, plugins: Plugins) -> None:
    write(
        tmp_path / "projections" / "france.json",
        '{"projectionsList": [{"id": "EPSG:2154", "parameters": '
        '"+proj=lcc +lat_0=46.5 +lon_0=3 +lat_1=49 +lat_2=44 +x_0=700000 +y_0=6600000 +ellps=GRS80 +units=m +no_defs"}]}',
    )
    service = started(make_service(tmp_path), plugins)
    assert service.projection("EPSG:2154")["parameters"].startswith("+proj=lcc")
    assert set(service.projections.ids()) == {"EPSG:4326", "EPSG:2154"}


def test_a_slow_engine_call_times_out_with_a_504_and_the_source_stays_usable(tmp_path: Path, plugins: Plugins) -> None:
    sources = {"a": 'id = "a"\ntype = "straightline"\ntimeout = 0.2\ndelay = 1.0\n'}
    service = started(make_service(tmp_path, sources=sources), plugins)
    with TestClient(create_app(service, manage_lifecycle=False)) as client:
        response = client.get("/simple/1.0.0/route", params={"resource": "lines", "start": "0,0", "end": "1,1"})
        assert response.status_code == 504
        assert response.json()["error"]["message"] == "The engine of source a did not answer within 0.2 s"
        assert client.get("/simple/1.0.0/nearest", params={"resource": "lines", "coordinates": "1,1"}).status_code == 200


NASTY = [
    "",
    " ",
    "null",
    "[]",
    "{}",
    "\u0000",
    "💥",
    "-",
    ",",
    "1,",
    ",1",
    "nan,nan",
    "inf,1",
    "1e309,1",
    "9" * 400,
    "a|b|c",
    "|||",
    '{"a":',
    "%",
    "\\",
    "true",
    "-0,-0",
]


@pytest.mark.parametrize(
    "name",
    [
        "resource",
        "start",
        "end",
        "intermediates",
        "profile",
        "optimization",
        "getSteps",
        "waysAttributes",
        "geometryFormat",
        "getBbox",
        "crs",
        "timeUnit",
        "distanceUnit",
        "constraints",
        "date_time",
    ],
)
def test_no_route_input_gives_a_500(tmp_path: Path, plugins: Plugins, name: str) -> None:
    service = started(make_service(tmp_path), plugins)
    base = {"resource": "lines", "start": "0,0", "end": "1,1"}
    with TestClient(create_app(service, manage_lifecycle=False)) as client:
        for value in NASTY:
            get = client.get("/simple/1.0.0/route", params={**base, name: value})
            assert get.status_code in (200, 400), (name, value, get.text)
            for json_value in (value, 1e308, -1, True, None, [value], {"x": value}, [[1, 2]]):
                post = client.post("/simple/1.0.0/route", json={**base, name: json_value})
                assert post.status_code in (200, 400), (name, json_value, post.text)
