"""The graph in use re-imported under load: the new schema is swapped in by one transaction, no request fails.

``roadkit prepare --force`` imports the extract again into the schema the service reads (built as a
schema of its own, renamed in by one transaction, the old one dropped after): two workers keep
answering routes meanwhile, their cached statements planned on the old tables included.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import asyncpg
import httpx

from roadkit.cli import main as roadkit_main
from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.core.conftest import free_port
from tests.engine_c.conftest import make_pg_example
from tests.engine_c.test_data_versions_pgrouting import ROUTE

NEAREST = {"resource": "monaco-pgrouting", "coordinates": "7.41337,43.72956"}


async def _load(service: str, stop: asyncio.Event) -> list[tuple[float, int, str]]:
    """One client (one connection, so one worker) asking routes and nearest points until ``stop``."""
    seen: list[tuple[float, int, str]] = []
    async with httpx.AsyncClient(base_url=service, timeout=15) as client:
        n = 0
        while not stop.is_set():
            n += 1
            operation, params = ("nearest", NEAREST) if n % 2 else ("route", ROUTE)
            answer = await client.get(f"/simple/1.0.0/{operation}", params=params)
            seen.append((time.monotonic(), answer.status_code, answer.text[:200] if answer.status_code != 200 else ""))
    return seen


async def test_the_schema_in_use_is_replaced_under_load_without_a_failed_request(pg_dsn: str, tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "monaco", pg_dsn)
    admin_port, service_port = free_port(), free_port()
    server = example / "server.toml"
    server.write_text(re.sub(r'workers = "auto"', "workers = 2", re.sub(r"port = 8079", f"port = {admin_port}", server.read_text())))
    service = example / "service.toml"
    service.write_text(re.sub(r"port = 8080", f"port = {service_port}", service.read_text()))
    connection = await asyncpg.connect(pg_dsn)
    admin = administrator(load_server(server), Plugins.create())
    await admin.start()
    stop = asyncio.Event()
    clients: list[asyncio.Task[list[tuple[float, int, str]]]] = []
    try:
        tables = "SELECT 'monaco.ways'::regclass::oid, 'monaco.ways_vertices_pgr'::regclass::oid"
        before = tuple(await connection.fetchrow(tables))
        clients = [asyncio.create_task(_load(f"http://127.0.0.1:{service_port}", stop)) for _ in range(4)]
        await asyncio.sleep(1.0)
        importing = time.monotonic()
        assert await asyncio.to_thread(roadkit_main, ["prepare", "--config", str(server), "--force"]) == 0
        imported = time.monotonic()
        after = tuple(await connection.fetchrow(tables))
        await asyncio.sleep(2.0)
        stop.set()
        by_client = await asyncio.gather(*clients)

        assert after[0] != before[0] and after[1] != before[1]  # new tables under the same names, the old ones dropped
        assert not await connection.fetchval("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'monaco_rk_%'")
        failures = [entry for seen in by_client for entry in seen if entry[1] != 200]
        during = sum(1 for seen in by_client for e in seen if importing <= e[0] <= imported)
        print(f"\nre-import under load: {imported - importing:.1f} s, {during} answers meanwhile, {len(failures)} failed")
        assert failures == [], failures[:5]
        # Every client, so every worker, answered from the new tables (the old ones were gone by then).
        assert all(len([e for e in seen if e[0] > imported]) > 4 for seen in by_client), [len(s) for s in by_client]
        async with httpx.AsyncClient(timeout=30) as c:
            health = (await c.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health?verbose=true")).json()
        assert health["state"] == "green", health
        assert all(w["connections"]["accepted"] > 0 for w in health["services"][0]["workers"]), health
    finally:
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        await admin.stop()
        await connection.close()
