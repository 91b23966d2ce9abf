"""A service started with no source and no resource, populated through the admin API with OSRM on Monaco."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx

from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.core.conftest import free_port, write

START, END = "7.4236,43.7312", "7.4201,43.7403"


async def test_an_empty_service_serves_osrm_routes_once_published(osrm_example: Path, tmp_path: Path) -> None:
    admin_port, service_port = free_port(), free_port()
    shutil.copytree(osrm_example / "projections", tmp_path / "projections")
    (tmp_path / "sources").mkdir()
    (tmp_path / "resources").mkdir()
    write(
        tmp_path / "service.toml",
        f"""
[application]
name = "empty"
title = "Populated by a publication agent"
description = "Starts with nothing"

[[listeners]]
port = {service_port}

[folders]
sources = ["sources"]
resources = ["resources"]
projections = "projections"
""",
    )
    path = write(
        tmp_path / "server.toml",
        f"""
[administrator.listener]
port = {admin_port}

[[services]]
id = "main"
configuration = "service.toml"
mode = "same-process"

[administrator.writes]
folders = [".", "{osrm_example / "data"}"]  # the datasets, in the cache
""",
    )
    admin = administrator(load_server(path), Plugins.create())
    await admin.start()
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
            route_url = f"http://127.0.0.1:{service_port}/simple/1.0.0/route"
            assert (await client.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health")).json()["state"] == "green"
            source = {
                "type": "osrm",
                "projection": "EPSG:4326",
                "storage": {"file": str(osrm_example / "data" / "osrm" / "car-fastest" / "monaco.osrm"), "algorithm": "CH"},
                "cost": {"profile": "car", "optimization": "fastest"},
            }
            missing = await client.put(f"{base}/sources/osrm-car", json=source | {"storage": {"algorithm": "CH"}})
            assert missing.status_code == 400 and "storage.file" in missing.json()["error"]["message"]
            created = await client.put(f"{base}/sources/osrm-car", json=source)
            assert created.status_code == 201, created.text
            resource = {
                "type": "osrm",
                "sources": ["osrm-car"],
                "operations": {
                    "route": {"start": {"bbox": "7.349,43.71,7.491,43.77"}, "end": {"bbox": "7.349,43.71,7.491,43.77"}},
                    "nearest": {"coordinates": {"bbox": "7.349,43.71,7.491,43.77"}},
                },
            }
            created = await client.put(f"{base}/resources/monaco", json=resource)
            assert created.status_code == 201, created.text
            route = await client.get(route_url, params={"resource": "monaco", "start": START, "end": END})
            assert route.status_code == 200, route.text
            body = route.json()
            assert body["profile"] == "car" and 500 < body["distance"] < 5000
            health = (await client.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health?verbose=true")).json()
            assert health["services"][0]["sources"] == [{"id": "osrm-car", "type": "osrm", "state": "green"}]

            # Replaced again and again under load: no request fails, none waits for a restart.
            async def load(stop: asyncio.Event) -> list[int]:
                statuses = []
                while not stop.is_set():
                    answer = await client.get(route_url, params={"resource": "monaco", "start": START, "end": END})
                    statuses.append(answer.status_code)
                return statuses

            stop = asyncio.Event()
            clients = [asyncio.create_task(load(stop)) for _ in range(4)]
            for i in range(5):
                assert (await client.put(f"{base}/sources/osrm-car", json=source | {"description": f"v{i}"})).status_code == 200
                await asyncio.sleep(0.1)
                assert (await client.put(f"{base}/resources/monaco", json=resource | {"description": f"v{i}"})).status_code == 200
                await asyncio.sleep(0.1)
            stop.set()
            statuses = [status for task in clients for status in await task]
            assert len(statuses) >= 20 and set(statuses) == {200}, f"{len(statuses)} requests, {sum(s != 200 for s in statuses)} failed"
            print(f"publication under load: {len(statuses)} requests, 0 failed")

            assert (await client.delete(f"{base}/resources/monaco")).status_code == 204
            assert (await client.get(route_url, params={"resource": "monaco", "start": START, "end": END})).status_code == 400
            assert (await client.delete(f"{base}/sources/osrm-car")).status_code == 204
            assert sorted(p.name for p in (tmp_path / "sources").iterdir()) == []
    finally:
        await admin.stop()
