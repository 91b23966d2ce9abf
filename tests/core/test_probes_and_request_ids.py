"""Probes, request ids and the JSON access log of a service's app (the straight source, in process)."""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from roadkit.config import load_service
from roadkit.errors import ConfigurationError
from roadkit.requestid import RequestIdFilter, ids_in_formats
from roadkit.serving.app import ServiceApp, create_app
from roadkit.testing.services import SERVICE, straight_plugins, write_service
from tests.core.test_connections import ROUTE as CONNECTION_ROUTE
from tests.core.test_connections import SERVERS, Runner, assert_error, exchange, run, serving  # noqa: F401 (run: a fixture)

ROUTE = "/simple/1.0.0/route?resource=straight&start=2.35,48.85&end=2.36,48.86"
HEX32 = r"[0-9a-f]{32}"


@pytest.fixture
def app(tmp_path: Path) -> ServiceApp:
    return create_app(load_service(write_service(tmp_path)), straight_plugins())


@pytest.fixture
def client(app: ServiceApp) -> Iterator[TestClient]:
    with TestClient(app) as client:
        yield client


def client_of(tmp_path: Path, extra: str) -> TestClient:
    return TestClient(create_app(load_service(write_service(tmp_path, service=SERVICE + extra)), straight_plugins()))


def test_probes_answer_on_every_listener_outside_the_apis(client: TestClient) -> None:
    health = client.get("/healthz")
    assert (health.status_code, health.json()) == (200, {"status": "alive", "service": "main"})
    ready = client.get("/readyz")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready", "service": "main"})
    assert ready.headers["cache-control"] == "no-store"
    assert client.head("/readyz").status_code == 200
    assert client.post("/readyz").status_code in (404, 405)  # only GET and HEAD are probes


def test_readiness_turns_503_when_the_worker_stops_while_requests_are_still_served(app: ServiceApp, client: TestClient) -> None:
    app.stopping = True  # what the worker does on SIGTERM
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["status"] == "stopping"
    assert client.get("/healthz").status_code == 200
    assert client.get(ROUTE).status_code == 200


def test_probe_paths_and_stop_delay_come_from_the_service_file(tmp_path: Path) -> None:
    with client_of(tmp_path, '[probes]\nhealth = "/-/live"\nready = "/-/ready"\nstop_delay = 2.5\n') as client:
        assert client.get("/-/live").json()["status"] == "alive"
        assert client.get("/-/ready").json()["status"] == "ready"
        assert client.get("/readyz").status_code == 404
        service = client.app.state.service  # type: ignore[attr-defined]
        assert service.config.probes.stop_delay == 2.5


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ('[probes]\nhealth = "healthz"\n', "probes.health: expected a path such as '/healthz'"),
        ('[probes]\nready = "/ready z"\n', "probes.ready: expected a path"),
        ('[probes]\nready = "/r?x=1"\n', "probes.ready: expected a path"),
        ('[probes]\nhealth = "/p"\nready = "/p"\n', "probes.ready: expected a path other than probes.health"),
        ("[probes]\nstop_delay = -1\n", "probes.stop_delay: expected a number of seconds from 0 to 300, got -1"),
        ("[probes]\nstop_delay = 301\n", "probes.stop_delay: expected a number of seconds from 0 to 300"),
        ('[access_log]\nenabled = "yes"\n', "access_log.enabled"),
        ('[access_log]\nenabled = true\nfile = "no/such/folder/access.log"\n', "access_log.file: expected a file in an existing folder"),
        ("[probes]\nhealthz = 1\n", "probes"),
    ],
)
def test_bad_probe_or_access_log_settings_name_the_file_and_key(tmp_path: Path, setting: str, expected: str) -> None:
    with pytest.raises(ConfigurationError) as error:
        load_service(write_service(tmp_path, service=SERVICE + setting))
    assert str(tmp_path / "service.toml") in str(error.value)
    assert expected in str(error.value)


def test_probes_need_no_credentials_when_access_control_is_on(tmp_path: Path) -> None:
    with client_of(tmp_path, '[access]\n[access.jwt]\nissuer = "http://127.0.0.1:9/realms/roadkit"\n') as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code == 200
        refused = client.get(ROUTE, headers={"X-Request-ID": "refused-1"})
        assert refused.status_code == 401
        assert refused.headers["x-request-id"] == "refused-1"  # the access layer's own answers carry it too


@pytest.mark.parametrize(
    "url",
    [
        ROUTE,  # the direct GET path
        "/simple/1.0.0/route?resource=straight&start=2.35,48.85",  # a 400 on the direct path
        "/simple/1.0.0/",  # through Starlette
        "/nowhere",  # Starlette's 404
        "/healthz",
    ],
)
def test_a_client_request_id_is_returned_on_every_answer(client: TestClient, url: str) -> None:
    answer = client.get(url, headers={"X-Request-ID": "order-42/7:retry=1"})
    assert answer.headers["x-request-id"] == "order-42/7:retry=1"
    without = client.get(url)
    assert without.headers["x-request-id"] != client.get(url).headers["x-request-id"]  # a new one each time
    assert len(without.headers["x-request-id"]) == 32


@pytest.mark.parametrize("bad", [b"", b"x" * 129, b"two words", b"caf\xe9", b"tab\there", b"{\x7f}"])
def test_an_unusable_request_id_is_replaced_by_a_new_one(client: TestClient, bad: bytes) -> None:
    answer = client.get(ROUTE, headers=[(b"X-Request-ID", bad)])
    assert answer.status_code == 200
    assert answer.headers["x-request-id"] != bad.decode("latin-1")
    assert len(answer.headers["x-request-id"]) == 32
    assert all(c in "0123456789abcdef" for c in answer.headers["x-request-id"])


def test_the_longest_accepted_request_id_is_kept(client: TestClient) -> None:
    longest = "~" * 128
    assert client.get(ROUTE, headers={"X-Request-ID": longest}).headers["x-request-id"] == longest


def test_log_lines_written_while_serving_a_request_carry_its_id(
    app: ServiceApp, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("roadkit.requestid._in_formats", False)
    ids_in_formats()  # as a worker says, its handlers having the filter and a format with %(request)s
    logger = logging.getLogger("roadkit.test.requests")

    async def noisy(request: Request) -> PlainTextResponse:
        logger.warning("something about this request")
        return PlainTextResponse("ok")

    app.router.routes.insert(0, Route("/noisy", noisy))
    caplog.handler.addFilter(RequestIdFilter())  # as a worker's handlers have
    caplog.handler.setFormatter(logging.Formatter("%(name)s%(request)s: %(message)s"))  # a worker's format, shortened
    with TestClient(app) as client, caplog.at_level(logging.INFO):
        client.get("/noisy", headers={"X-Request-ID": "trace-me"})
        logger.warning("not about a request", extra={"request_id": "a library's own"})  # no clash with the filter
    about = [line for line in caplog.text.splitlines() if line.startswith("roadkit.test.requests")]
    assert about == [
        "roadkit.test.requests request=trace-me: something about this request",
        "roadkit.test.requests: not about a request",
    ]


def test_an_embedded_service_writes_the_request_id_in_its_log_lines_without_help(app: ServiceApp) -> None:
    import io

    from starlette.applications import Starlette
    from starlette.routing import Mount

    import roadkit.asgi

    async def broken(request: Request) -> PlainTextResponse:
        raise RuntimeError("a bug")  # roadkit.web.api logs it as an unexpected error

    async def noisy(request: Request) -> PlainTextResponse:
        logging.getLogger("roadkit.test.requests").warning("%d results for %s", 3, "this request")
        logging.getLogger("host.code").warning("the host's own line")
        return PlainTextResponse("ok")

    app.router.routes[0:0] = [Route("/broken", broken), Route("/noisy", noisy)]

    @contextlib.asynccontextmanager
    async def lifespan(host: Starlette) -> AsyncIterator[None]:
        async with roadkit.asgi.lifespan(app):
            yield

    host = Starlette(routes=[Mount("/routing", app=app)], lifespan=lifespan)
    # The host's own logging: a plain format, no roadkit filter.
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    try:
        with TestClient(host, raise_server_exceptions=False) as client:
            assert client.get("/routing/broken", headers={"X-Request-ID": "order-42"}).status_code == 500
            assert client.get("/routing/noisy", headers={"X-Request-ID": "100%s"}).status_code == 200
            logging.getLogger("roadkit.test.requests").warning("not about a request")
    finally:
        logging.getLogger().removeHandler(handler)
    lines = [line for line in written.getvalue().splitlines() if line.startswith(("roadkit.", "host."))]
    assert lines == [
        "roadkit.web.api: request=order-42: unexpected error while handling a request",
        "roadkit.test.requests: request=100%s: 3 results for this request",
        "host.code: the host's own line",
        "roadkit.test.requests: not about a request",
    ]


def test_the_access_log_writes_one_json_line_per_request(tmp_path: Path) -> None:
    log_file = tmp_path / "access.jsonl"
    with client_of(tmp_path, f'[access_log]\nenabled = true\nfile = "{log_file.name}"\n') as client:
        client.get(ROUTE, headers={"X-Request-ID": "line-1"})
        client.get("/simple/1.0.0/route?resource=nope&start=1,1&end=2,2", headers={"X-Request-ID": "line-2"})
        client.get("/readyz")  # probes are not logged
        client.post("/nowhere", content=b"x")
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert len(lines) == 3
    first, second, third = lines
    assert set(first) == {"time", "id", "method", "path", "status", "resource", "duration", "bytes", "client"}
    assert (first["id"], first["method"], first["path"], first["status"], first["resource"]) == (
        "line-1",
        "GET",
        "/simple/1.0.0/route",
        200,
        "straight",
    )
    assert first["bytes"] > 100 and 0 < first["duration"] < 10
    assert first["time"].endswith("Z") and first["client"] == "testclient"
    assert (second["status"], second["resource"]) == (400, "nope")
    assert (third["method"], third["status"], third["resource"], len(third["id"])) == ("POST", 404, None, 32)


def test_the_access_log_is_off_by_default(app: ServiceApp) -> None:
    assert app.access_log is None


@pytest.mark.parametrize("http_server", SERVERS)
def test_the_connection_layer_refusals_carry_a_new_request_id(tmp_path: Path, http_server: str, run: Runner) -> None:  # noqa: F811
    async def main() -> None:
        async with serving(tmp_path, http_server) as (_, port):
            ids = []
            for _ in range(2):
                too_long = f"GET {CONNECTION_ROUTE}&x={'a' * 20_000} HTTP/1.1\r\nHost: t\r\nX-Request-ID: mine\r\n\r\n".encode()
                ids.append(assert_error(await exchange(port, too_long), 414, "url_too_long")["x-request-id"])
            assert len(set(ids)) == 2 and all(re.fullmatch(HEX32, rid) for rid in ids)  # the request was not read: a new id each time

    run(main())


def test_the_administrators_access_log_setting_writes_json_lines_to_stderr(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # [administrator.logging] access_log = true: the same JSON lines, for a service whose file names no log file.
    app = create_app(load_service(write_service(tmp_path)), straight_plugins(), access_log=True)
    with TestClient(app) as client:
        client.get(ROUTE, headers={"X-Request-ID": "to-stderr"})
    lines = [json.loads(line) for line in capfd.readouterr().err.splitlines() if line.startswith("{")]
    assert [(line["id"], line["status"], line["resource"]) for line in lines] == [("to-stderr", 200, "straight")]
