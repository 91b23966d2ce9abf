"""A new pgRouting graph without a restart: ``roadkit prepare --version`` imports a new schema beside the
one in use, and the source is switched to it under load."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import asyncpg
import httpx

from roadkit.cli import main as roadkit_main
from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.conftest import MONACO_PBF
from tests.core.conftest import free_port
from tests.engine_c.conftest import make_pg_example

ROUTE = {
    "resource": "monaco-pgrouting",
    "start": "7.41337,43.72956",
    "end": "7.41983,43.73115",
    "profile": "car",
    "optimization": "fastest",
}


async def _load(service: str, stop: asyncio.Event) -> list[tuple[int, str]]:
    seen: list[tuple[int, str]] = []
    async with httpx.AsyncClient(base_url=service, timeout=10) as client:
        while not stop.is_set():
            answer = await client.get("/simple/1.0.0/route", params=ROUTE)
            seen.append((answer.status_code, answer.json().get("resourceVersion") if answer.status_code == 200 else answer.text))
    return seen


async def test_pgrouting_switches_to_a_new_schema_under_load_without_a_failed_request(pg_dsn: str, tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "monaco", pg_dsn)
    admin_port, service_port = free_port(), free_port()
    server = example / "server.toml"
    server.write_text(re.sub(r'workers = "auto"', "workers = 2", re.sub(r"port = 8079", f"port = {admin_port}", server.read_text())))
    # The data lies in the sibling "-data" folder and the OSM extract in the repository's example: both allowed.
    with server.open("a") as text:
        text.write(f'\n[administrator.writes]\nfolders = [".", "{example.parent / "monaco-data"}", "{MONACO_PBF.parent}"]\n')
    service = example / "service.toml"
    service.write_text(re.sub(r"port = 8080", f"port = {service_port}", service.read_text()))
    source = example / "sources" / "monaco-pgrouting.source"
    source.write_text(re.sub(r"(?m)^timeout = 10.0", "timeout = 1.0", source.read_text()))
    # The new version is imported while nothing else changes (the test cluster keeps its schema "monaco").
    assert await asyncio.to_thread(roadkit_main, ["prepare", "--config", str(server), "--version", "v2"]) == 0
    connection = await asyncpg.connect(pg_dsn)
    try:
        assert await connection.fetchval("SELECT count(*) FROM monaco_v2.ways") == await connection.fetchval(
            "SELECT count(*) FROM monaco.ways"
        )
        admin = administrator(load_server(server), Plugins.create())
        await admin.start()
        stop = asyncio.Event()
        clients: list[asyncio.Task[list[tuple[int, str]]]] = []
        try:
            base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
            async with httpx.AsyncClient(timeout=60) as c:
                clients = [asyncio.create_task(_load(f"http://127.0.0.1:{service_port}", stop)) for _ in range(4)]
                await asyncio.sleep(1.0)
                switched = await c.post(f"{base}/sources/monaco-pgrouting/version", json={"version": "v2"})
                assert switched.status_code == 200, switched.text
                # The old schema can go once the switch is answered: no worker reads it any more.
                await asyncio.sleep(1.5)
                await connection.execute("ALTER SCHEMA monaco RENAME TO monaco_gone")
                try:
                    await asyncio.sleep(1.0)
                    stop.set()
                    by_client = await asyncio.gather(*clients)
                finally:
                    await connection.execute("ALTER SCHEMA monaco_gone RENAME TO monaco")
                assert [e for seen in by_client for e in seen if e[0] != 200] == []
                for seen in by_client:
                    versions = [v for _, v in seen]
                    switch = versions.index("v2")
                    assert set(versions[:switch]) == {"2016-03-05"} and set(versions[switch:]) == {"v2"}
                    assert len(versions) - switch > 2  # answered from the new schema after the old one was gone
                health = (await c.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health?verbose=true")).json()
                assert health["state"] == "green" and health["services"][0]["sources"][0]["version"] == "v2", health
        finally:
            stop.set()
            await asyncio.gather(*clients, return_exceptions=True)
            await admin.stop()
    finally:
        await connection.execute("DROP SCHEMA IF EXISTS monaco_v2 CASCADE")
        await connection.close()
