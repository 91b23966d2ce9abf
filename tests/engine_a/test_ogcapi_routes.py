"""OGC API – Routes on the Monaco OSRM resource (checks in tests/ogcapi_routes_support.py)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from roadkit.plugins import Plugins
from roadkit.testing import service_client
from tests import ogcapi_routes_support as ogc

RID = "monaco-osrm"
MODES = ["car", "pedestrian"]


class TestOgcRoutes(ogc.ResourceChecks):
    rid, modes, declares_time = RID, MODES, False  # OSRM reads no departure time

    @pytest.fixture
    def example(self, osrm_example: Path) -> Path:
        return osrm_example


def test_a_departure_time_is_refused(client: TestClient) -> None:
    when = {"value": {"timestamp": "2026-06-01T08:00:00Z"}}
    answer = client.post(f"/ogcapi-routes/1.0/{RID}/routes", json=ogc.definition(ogc.START, ogc.END, when=when))
    assert answer.status_code == 400 and "inputs.when" in answer.text


class Subscriber:
    """An HTTP server on 127.0.0.1 that records the bodies POSTed to it."""

    def __init__(self) -> None:
        self.received: list[tuple[str, bytes]] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                received.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def subscriber(monkeypatch: pytest.MonkeyPatch) -> Iterator[Subscriber]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    server = Subscriber()
    yield server
    server.close()


@pytest.fixture
def variant(osrm_example: Path, tmp_path: Path) -> Path:
    """A copy of the demo whose subscribers may be private addresses (the test's own server)."""
    target = tmp_path / "example"
    shutil.copytree(osrm_example, target, symlinks=True)
    with (target / "service.toml").open("a") as service:
        service.write("\n[ogcapi_routes]\nprivate_callbacks = true\n")
    return target


def until_done(client: TestClient, path: str) -> Any:
    for _ in range(200):
        answer = client.get(path)
        if answer.status_code != 202:
            return answer
        assert answer.json()["status"] in ("accepted", "running")
        time.sleep(0.05)
    raise AssertionError("the asynchronous route never finished")


def test_an_asynchronous_route_calls_its_subscriber(variant: Path, subscriber: Subscriber) -> None:
    routes = f"/ogcapi-routes/1.0/{RID}/routes"
    hooks = {"successUri": f"{subscriber.url}/done", "failedUri": f"{subscriber.url}/failed"}
    with service_client(variant / "service.toml", Plugins.create()) as client:
        posted = client.post(routes, json={**ogc.definition(ogc.START, ogc.END), "subscriber": hooks}, headers={"Prefer": "respond-async"})
        assert posted.status_code == 201 and posted.json()["status"] == "accepted"
        path = posted.headers["location"].removeprefix("http://testserver")
        done = until_done(client, path)
        ogc.valid_route(done)
        failed = client.post(
            routes, json={**ogc.definition(ogc.START, [7.0, 43.0]), "subscriber": hooks}, headers={"Prefer": "respond-async"}
        )
        answer = until_done(client, failed.headers["location"].removeprefix("http://testserver"))
        assert answer.status_code == 422 and answer.json()["status"] == "failed"
        for _ in range(100):
            if len(subscriber.received) == 2:
                break
            time.sleep(0.05)
    assert dict(subscriber.received)["/done"] == done.content
    assert json.loads(dict(subscriber.received)["/failed"])["error"]["errorType"] == "not_routable"


def test_a_subscriber_at_a_private_address_is_refused_by_default(client: TestClient, subscriber: Subscriber) -> None:
    body = {**ogc.definition(ogc.START, ogc.END), "subscriber": {"successUri": f"{subscriber.url}/done"}}
    posted = client.post(f"/ogcapi-routes/1.0/{RID}/routes", json=body, headers={"Prefer": "respond-async"})
    ogc.valid_route(until_done(client, posted.headers["location"].removeprefix("http://testserver")))
    time.sleep(0.5)
    assert subscriber.received == []


def test_stored_routes_survive_a_restart(variant: Path) -> None:
    with service_client(variant / "service.toml", Plugins.create()) as client:
        posted = client.post(f"/ogcapi-routes/1.0/{RID}/routes", json=ogc.definition(ogc.START, ogc.END, name="kept"))
    assert (variant / "ogcapi-routes.sqlite").is_file()
    with service_client(variant / "service.toml", Plugins.create()) as client:
        assert client.get(posted.headers["location"].removeprefix("http://testserver")).content == posted.content
