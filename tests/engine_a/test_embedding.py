"""roadkit embedded in other ASGI apps (Starlette, FastAPI) under a prefix, and run by ASGI servers from a service file."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

import roadkit.asgi
from roadkit.errors import ConfigurationError
from tests.engine_servers import free_port

ROUTE = "/simple/1.0.0/route?resource=monaco-osrm&start=7.41337,43.72956&end=7.41983,43.73115"


def _check_mounted(client: TestClient, prefix: str) -> None:
    route = client.get(prefix + ROUTE)
    assert route.status_code == 200, route.text
    assert route.json()["distance"] > 0
    capabilities = client.get(f"{prefix}/simple/1.0.0/getcapabilities").json()
    assert capabilities["info"]["url"] == f"http://testserver{prefix}/simple/1.0.0/"
    assert {op["url"] for op in capabilities["operations"]} >= {f"http://testserver{prefix}/simple/1.0.0/route?"}
    index = client.get(f"{prefix}/simple/1.0.0/").json()
    assert all(link["href"].startswith(f"http://testserver{prefix}/simple/1.0.0/") for link in index["links"])
    # The native API's OpenAPI document, and a 404 of roadkit's own shape, under the prefix too.
    assert client.get(f"{prefix}/osrm/1.0.0/openapi.json").status_code == 200
    missing = client.get(f"{prefix}/simple/1.0.0/nowhere")
    assert missing.status_code == 404 and missing.json()["error"]["errorType"]


def test_a_starlette_app_mounts_roadkit_under_a_prefix(osrm_example: Path) -> None:
    routing = roadkit.asgi.create_app(osrm_example / "service.toml")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with roadkit.asgi.lifespan(routing):
            yield

    async def home(request: Any) -> PlainTextResponse:
        return PlainTextResponse("host")

    host = Starlette(routes=[Route("/", home), Mount("/routing", app=routing)], lifespan=lifespan)
    service = routing.state.service
    with TestClient(host) as client:
        assert service.state == "ready"
        assert client.get("/").text == "host"
        _check_mounted(client, "/routing")
    assert service.state == "stopped"
    assert all(source.state.value != "green" for source in service.sources.values()) or not service.sources


def test_a_fastapi_app_mounts_roadkit_under_a_prefix(osrm_example: Path) -> None:
    fastapi = pytest.importorskip("fastapi")
    routing = roadkit.asgi.create_app(osrm_example / "service.toml")

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with roadkit.asgi.lifespan(routing):
            yield

    host = fastapi.FastAPI(lifespan=lifespan)

    @host.get("/hello")
    def hello() -> dict[str, str]:
        return {"hello": "world"}

    host.mount("/api/routing", routing)
    with TestClient(host) as client:
        assert client.get("/hello").json() == {"hello": "world"}
        _check_mounted(client, "/api/routing")
    assert routing.state.service.state == "stopped"


def test_a_mounted_app_without_its_lifespan_says_it_is_starting(osrm_example: Path) -> None:
    # What the lifespan helper is for: a mounted app's own lifespan never runs.
    routing = roadkit.asgi.create_app(osrm_example / "service.toml")
    with TestClient(Starlette(routes=[Mount("/routing", app=routing)])) as client:
        answer = client.get("/routing" + ROUTE)
    assert answer.status_code == 503


def test_the_factory_reads_the_service_file_from_the_environment(osrm_example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(roadkit.asgi.SERVICE_VARIABLE, raising=False)
    with pytest.raises(ConfigurationError, match="ROADKIT_SERVICE: expected the path of a service file"):
        roadkit.asgi.from_environment()
    monkeypatch.setenv(roadkit.asgi.SERVICE_VARIABLE, str(osrm_example / "nowhere.toml"))
    with pytest.raises(ConfigurationError, match=r"nowhere\.toml"):
        roadkit.asgi.from_environment()
    monkeypatch.setenv(roadkit.asgi.SERVICE_VARIABLE, str(osrm_example / "service.toml"))
    with TestClient(roadkit.asgi.from_environment()) as client:
        assert client.get(ROUTE).status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize(
    "server",
    [
        ["-m", "uvicorn", "--factory", "roadkit.asgi:from_environment", "--host", "127.0.0.1", "--port", "{port}"],
        ["-m", "hypercorn", "roadkit.asgi:from_environment()", "--bind", "127.0.0.1:{port}"],
    ],
    ids=["uvicorn", "hypercorn"],
)
def test_asgi_servers_run_the_factory_by_their_conventions(osrm_example: Path, server: list[str]) -> None:
    port = free_port()
    env = {**os.environ, roadkit.asgi.SERVICE_VARIABLE: str(osrm_example / "service.toml")}
    command = [sys.executable, *(arg.format(port=port) for arg in server)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}{ROUTE}", timeout=5)
                if answer.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
            assert time.monotonic() < deadline, "the server never answered a route"
            time.sleep(0.2)
        assert answer.json()["resource"] == "monaco-osrm"
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0].decode()
    assert process.returncode == 0 or "Shutting down" in output or "Finished server process" in output, output
