"""A source that fails to connect at start is tried again with a capped back-off and joins its resources."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from starlette.testclient import TestClient

from roadkit import hookimpl
from roadkit.config import load_service
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.routing.model import Cost, RouteRequest, RouteResponse
from roadkit.routing.source import Source, SourceState
from roadkit.serving.app import create_app
from roadkit.serving.reconnect import Backoff
from tests.core.conftest import make_service, write


@attrs.frozen
class GateOptions:
    """The file whose presence lets the engine load (a dataset copied late, a database starting)."""

    needs: str


class GatedSource(Source):
    kind = "gated"
    options_class = GateOptions
    operations = frozenset({"route"})

    def costs(self) -> Sequence[Cost]:
        return [Cost("car", "fastest")]

    async def connect(self) -> None:
        if not Path(self.options.needs).exists():
            raise FileNotFoundError(f"no data at {self.options.needs}")
        self.state = SourceState.GREEN

    async def route(self, request: RouteRequest) -> RouteResponse:
        return RouteResponse(request.start, request.end, list(request.points), 1.0, 1.0, [])


class GatedPlugin:
    @hookimpl
    def roadkit_source_kinds(self) -> Sequence[type[Source]]:
        return [GatedSource]


RESOURCE = """
id = "gated"
type = "gated"
sources = ["g"]

[operations.route]
"""


def gated_service(root: Path, data: Path, *, initial: float = 0.05, maximum: float = 0.2) -> Path:
    service = make_service(root, sources={"g": f'id = "g"\ntype = "gated"\nneeds = "{data}"\n'}, resource_sources="")
    write(root / "resources" / "gated.resource", RESOURCE)
    service.write_text(service.read_text() + f"\n[limits]\nconnect_retry_initial = {initial}\nconnect_retry_max = {maximum}\n")
    return service


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_backoff_doubles_up_to_its_cap() -> None:
    backoff = Backoff(0.5, 3.0)
    assert [backoff.delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


def test_a_source_red_at_start_is_retried_and_its_resource_appears_when_it_connects(tmp_path: Path) -> None:
    data = tmp_path / "data.bin"
    plugins = Plugins.create(load_entry_points=False, extra_plugins=[GatedPlugin()])
    app = create_app(load_service(gated_service(tmp_path / "svc", data)), plugins)
    with TestClient(app) as client:
        service = app.state.service
        capabilities = client.get("/simple/1.0.0/getcapabilities").json()
        assert capabilities["resources"] == []
        route = {"resource": "gated", "start": "0,0", "end": "1,1"}
        assert client.get("/simple/1.0.0/route", params=route).status_code == 400

        def waiting_after_three_failures() -> bool:
            connection = service.health()["sources"][0].get("connection", {})
            return bool(connection.get("attempts", 0) >= 3 and "nextRetry" in connection)

        wait_for(waiting_after_three_failures)
        (entry,) = service.health()["sources"]
        assert entry["state"] == "red" and entry["reason"] == f"no data at {data}"
        connection = entry["connection"]
        assert connection["lastError"] == f"no data at {data}"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", connection["nextRetry"])
        assert datetime.fromisoformat(connection["nextRetry"]) <= datetime.now(UTC) + timedelta(seconds=2)  # capped at 0.2 s
        data.write_bytes(b"ready")
        wait_for(lambda: "gated" in service.resources)
        health = service.health()
        assert health["state"] == "green"
        assert health["sources"] == [{"id": "g", "type": "gated", "state": "green"}]
        assert client.get("/simple/1.0.0/route", params=route).status_code == 200
        capabilities = client.get("/simple/1.0.0/getcapabilities").json()
        assert [r["id"] for r in capabilities["resources"]] == ["gated"]
        assert [op["id"] for op in capabilities["operations"]] == ["route"]


def test_retries_stop_with_the_service(tmp_path: Path) -> None:
    plugins = Plugins.create(load_entry_points=False, extra_plugins=[GatedPlugin()])
    app = create_app(load_service(gated_service(tmp_path / "svc", tmp_path / "never", initial=0.01, maximum=0.01)), plugins)
    with TestClient(app):
        service = app.state.service
        wait_for(lambda: service.health()["sources"][0].get("connection", {}).get("attempts", 0) >= 2)
    assert service.state == "stopped" and service._reconnecting == {}


def test_retry_limits_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_service(gated_service(tmp_path / "svc", tmp_path / "x", initial=0, maximum=-1))
    assert caught.value.problems == [
        f"{tmp_path / 'svc' / 'service.toml'}: limits.connect_retry_initial: expected a number of seconds from 0.01 to 86400, got 0.0",
        f"{tmp_path / 'svc' / 'service.toml'}: limits.connect_retry_max: expected a number of seconds from 0.01 to 86400, got -1.0",
    ]
    # A maximum below the first wait caps every wait (each key is checked alone, as the admin OpenAPI document states them).
    capped = load_service(gated_service(tmp_path / "capped", tmp_path / "x", initial=10, maximum=1))
    assert Backoff(capped.limits.connect_retry_initial, capped.limits.connect_retry_max).delay(1) == 1
