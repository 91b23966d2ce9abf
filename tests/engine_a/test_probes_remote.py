"""The probes and request ids of a gateway on osrm-http sources, against real osrm-routed servers."""

from __future__ import annotations

import http.server
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from roadkit.testing import service_client
from tests.engine_a.test_osrm_http import ROUTES, _gateway, routed  # noqa: F401 (routed: a fixture)
from tests.engine_servers import EngineServer, osrm_routed, running

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class RecordingProxy(http.server.ThreadingHTTPServer):
    """A reverse proxy on the loopback to ``target`` that records the path and X-Request-ID of every request."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.seen: list[tuple[str, str | None]] = []
        super().__init__(("127.0.0.1", 0), _Forward)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(http.server.BaseHTTPRequestHandler):
    server: RecordingProxy

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("X-Request-ID")))
        try:
            with _DIRECT.open(self.server.target + self.path, timeout=10) as answer:
                body, status = answer.read(), answer.status
        except urllib.error.HTTPError as error:  # the engine's own errors (a 400) pass through as they are
            body, status = error.read(), error.code
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def proxy(routed: dict[str, EngineServer]) -> Iterator[RecordingProxy]:  # noqa: F811
    server = RecordingProxy(routed["car-fastest"].url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_the_request_id_is_sent_to_the_engine_server(
    tmp_path: Path,
    osrm_example: Path,
    routed: dict[str, EngineServer],  # noqa: F811
    proxy: RecordingProxy,
) -> None:
    gateway = _gateway(osrm_example, tmp_path / "gateway", {**routed, "car-fastest": proxy})  # type: ignore[dict-item]
    with service_client(gateway) as through:
        proxy.seen.clear()  # the source's own probes at its start carry no request id
        answer = through.get(ROUTES[1], headers={"X-Request-ID": "from-the-client"})
        assert answer.status_code == 200
        generated = through.get(ROUTES[1]).headers["x-request-id"]
    routes = [(path, rid) for path, rid in proxy.seen if path.startswith("/route/")]
    assert [rid for _, rid in routes] == ["from-the-client", generated]


def test_readiness_names_a_source_whose_servers_are_gone_and_follows_its_return(
    tmp_path: Path,
    osrm_example: Path,
    routed: dict[str, EngineServer],  # noqa: F811
) -> None:
    car = osrm_routed(Path(routed["car-fastest"].command[-1]))
    with running(car):
        gateway = _gateway(osrm_example, tmp_path / "gateway", {**routed, "car-fastest": car})
        source_file = tmp_path / "gateway" / "sources" / "monaco-car-fastest.source"
        source = json.loads(source_file.read_text())
        source["http"]["health_interval"] = 0.2
        source_file.write_text(json.dumps(source))
        with service_client(gateway) as through:
            assert through.get("/readyz").status_code == 200
            car.kill()
            deadline = time.monotonic() + 15
            while (ready := through.get("/readyz")).status_code == 200:
                assert time.monotonic() < deadline, "still ready with a source whose only server is gone"
                time.sleep(0.1)
            assert ready.status_code == 503
            assert ready.json()["sources"] == {"monaco-osrm-car-fastest": "red"}
            assert "monaco-osrm-car-fastest" in ready.json()["message"]
            assert through.get("/healthz").status_code == 200  # alive all the same
            car.start()
            while through.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline + 15, "not ready again after the server's return"
                time.sleep(0.1)
