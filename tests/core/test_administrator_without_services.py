"""An administrator may start with no service (Road2 2.1.0): it answers, is green, and services are added later."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.core.conftest import free_port, make_service, write
from tests.core.test_publication import ROUTE
from tests.core.test_service_management import configuration


@pytest.mark.parametrize("road2", [False, True])
async def test_an_administrator_without_services_is_green_and_takes_one_through_the_admin_api(
    tmp_path: Path, plugins: Plugins, road2: bool
) -> None:
    port = free_port()
    if road2:
        admin_file = {
            "administration": {
                "api": {"name": "admin", "version": "1.0.0"},
                "services": [],
                "network": {"server": {"id": "admin", "https": "false", "host": "127.0.0.1", "port": str(port)}},
            }
        }
        server = write(tmp_path / "road2.json", json.dumps(admin_file))
    else:
        server = write(tmp_path / "server.toml", f"[administrator.listener]\nport = {port}\n")
    make_service(tmp_path)  # the projections folder a new service names
    admin = administrator(load_server(server), plugins)
    await admin.start()
    base = f"http://127.0.0.1:{port}/admin/1.0.0"
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            health = await client.get(f"{base}/health")
            assert (health.status_code, health.json()) == (200, {"state": "green"})
            verbose = (await client.get(f"{base}/health", params={"verbose": "true"})).json()
            assert verbose["services"] == [] and verbose["administrator"]["state"] == "green"
            assert (await client.get(f"{base}/services")).json() == []
            assert (await client.get(f"{base}/version")).status_code == 200
            service_port = free_port()
            body = {"id": "later", "mode": "same-process", "configuration": configuration(service_port)}
            created = await client.post(f"{base}/services", json=body)
            if road2:
                # The admin API never rewrites Road2's file (its JSON keeps Road2's keys): it says what to do instead.
                assert created.status_code == 409, created.text
                assert f"{server} is a Road2 administration file: the admin API does not rewrite it" in created.json()["error"]["message"]
                return
            assert created.status_code == 201 and created.json()["lifecycle"] == "ready", created.text
            assert [s["id"] for s in (await client.get(f"{base}/services")).json()] == ["later"]
            # Its folders are empty: it answers, and says the resource is not there.
            route = await client.get(f"http://127.0.0.1:{service_port}/simple/1.0.0/route", params=ROUTE)
            assert route.status_code == 400 and "not permitted on this service" in route.json()["error"]["message"]
            assert (await client.get(f"{base}/health")).json() == {"state": "green"}
    finally:
        await admin.stop()
