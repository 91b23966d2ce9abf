"""Failures of the database: down at start, lost and back while serving, statement time-out."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import attrs
import pytest

from roadkit.config.loader import read_source
from roadkit.errors import EngineTimeout, SourceUnavailable
from roadkit.routing.model import Cost, IsochroneRequest, RouteRequest
from roadkit.routing.source import SourceState
from roadkit.testing import service_client
from roadkit_pgrouting.source import PgRoutingSource
from roadkit_support.pgcluster import PrivateCluster, private_cluster
from tests.engine_c.conftest import END, EXTENSIONS, START, cache_root, import_key, make_pg_example


@pytest.fixture
def own_cluster(pg_dsn: str) -> Iterator[PrivateCluster]:
    """A cluster of this test alone (stopped and restarted by it), with the Monaco graph restored."""
    with private_cluster() as cluster:
        cluster.create_database("roadkit", EXTENSIONS)
        dump = cache_root() / f"pgrouting-monaco-{import_key()}.dump"  # written by pg_dsn when missing
        # The password through the environment, never on a command line.
        dsn = cluster.dsn("roadkit", password=False)
        subprocess.run(
            [str(cluster.bindir / "pg_restore"), "--no-owner", "-d", dsn, str(dump)], check=True, env=os.environ | cluster.environ()
        )
        yield cluster


def _source(example: Path, **changes: str) -> PgRoutingSource:
    path = example / "sources" / "monaco-pgrouting.source"
    text = path.read_text()
    for old, new in changes.items():
        text = text.replace(old, new)
    path.write_text(text)
    source = PgRoutingSource.from_config(read_source(path))
    assert isinstance(source, PgRoutingSource)
    return source


async def test_database_lost_while_serving_is_a_503_then_green_again_by_itself(own_cluster: PrivateCluster, tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "example", own_cluster.dsn("roadkit"))
    source = _source(example)
    source.probe_interval = 0.2
    await source.connect()
    request = RouteRequest((START, END), Cost("car", "fastest"))
    try:
        assert (await source.route(request)).distance > 0
        own_cluster.stop("immediate")
        began = time.monotonic()
        with pytest.raises(SourceUnavailable, match="unavailable"):
            await source.route(request)
        assert time.monotonic() - began < source.timeout + 1
        assert source.state is SourceState.RED and "lost" in source.health()["reason"]
        with pytest.raises(SourceUnavailable):  # red: answered at once, without waiting for the database
            await source.isochrone(IsochroneRequest(START, Cost("car", cost_type="time"), (60.0,)))
        own_cluster.start()
        for _ in range(100):
            if source.state is SourceState.GREEN:
                break
            await asyncio.sleep(0.1)
        assert source.state is SourceState.GREEN and source.health().get("reason") is None
        assert (await source.route(request)).distance > 0
    finally:
        await source.disconnect()


def test_api_answers_503_while_the_database_is_down(own_cluster: PrivateCluster, tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "example", own_cluster.dsn("roadkit"))
    with service_client(example / "service.toml") as client:
        params = {"resource": "monaco-pgrouting", "start": f"{START[0]},{START[1]}", "end": f"{END[0]},{END[1]}"}
        assert client.get("/simple/1.0.0/route", params=params).status_code == 200
        own_cluster.stop("immediate")
        try:
            response = client.get("/simple/1.0.0/route", params=params)
            assert response.status_code == 503, response.text
            assert "database" in response.json()["error"]["message"]
        finally:
            own_cluster.start()


async def test_database_down_at_start_leaves_the_source_red_with_the_reason(tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "example", "postgresql://postgres@127.0.0.1:9/roadkit")
    source = _source(example)
    with pytest.raises(SourceUnavailable):
        await source.connect()
    assert source.state is SourceState.RED and "cannot reach" in source.health()["reason"]
    await source.disconnect()


async def test_statement_time_out_is_a_504(pg_example: Path, tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "example", read_dsn(pg_example))
    source = _source(example, **{"timeout = 10.0": "timeout = 0.001"})
    await source.connect()
    try:
        with pytest.raises(EngineTimeout):
            await source.route(RouteRequest((START, END), Cost("car", "fastest")))
        assert source.state is SourceState.GREEN  # a slow query is not a lost database
    finally:
        await source.disconnect()


async def seconds_to_a_504(example: Path, timeout: float, operation: Callable[[PgRoutingSource], Coroutine[Any, Any, object]]) -> float:
    """Seconds until ``operation``, bounded as the source bounds its operations, gets its 504; the source stays green."""
    source = _source(example, **{"timeout = 10.0": f"timeout = {timeout}"})
    await source.connect()
    try:
        began = time.monotonic()
        with pytest.raises(EngineTimeout):
            await source._bounded(operation(source))
        assert source.state is SourceState.GREEN  # not a lost database
        return time.monotonic() - began
    finally:
        await source.disconnect()


async def test_the_statements_of_an_operation_share_its_time_out(pg_example: Path, tmp_path: Path) -> None:
    async def second_statement(source: PgRoutingSource) -> object:
        await asyncio.sleep(2.5)  # as if a first statement took that long: 0.5 s is left for the next one
        return await source.fetch("SELECT pg_sleep(1)", [])

    example = make_pg_example(tmp_path / "example", read_dsn(pg_example))
    assert await seconds_to_a_504(example, 3.0, second_statement) < 3.5, "cancelled by PostgreSQL at the operation's time-out"


async def test_work_past_the_time_out_on_a_database_that_answers_is_a_504_not_a_lost_database(pg_example: Path, tmp_path: Path) -> None:
    async def uncancelled(source: PgRoutingSource) -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            # As asyncpg's pool waiting for PostgreSQL to end a statement it does not cancel (pgRouting's TRSP).
            await asyncio.sleep(3)
            raise

    example = make_pg_example(tmp_path / "example", read_dsn(pg_example))
    seconds = await seconds_to_a_504(example, 1.0, uncancelled)
    assert seconds < 3.0, "answered at the time-out and its margin, not when the work ends"


async def test_a_database_that_hangs_is_answered_within_the_time_out(own_cluster: PrivateCluster, tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "example", own_cluster.dsn("roadkit"))
    source = _source(example, **{"timeout = 10.0": "timeout = 2.0"})
    await source.connect()
    request = RouteRequest((START, END), Cost("car", "fastest"))
    conn = await asyncpg.connect(own_cluster.dsn("roadkit"))
    stopped: list[int] = []
    try:
        assert (await source.route(request)).distance > 0
        # The source's connections stop answering (the cluster is this test's alone).
        rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE application_name = 'roadkit-pgrouting'")
        assert rows
        for row in rows:
            os.kill(row["pid"], signal.SIGSTOP)
            stopped.append(row["pid"])
        began = time.monotonic()
        with pytest.raises((EngineTimeout, SourceUnavailable)):
            await source.route(request)
        assert time.monotonic() - began < source.timeout + 2.5, "the time-out, its margin and a 1 s look at the database"
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        await conn.close()
        await source.disconnect()


def read_dsn(example: Path) -> str:
    return (example / "pgrouting.database.toml").read_text().split('"')[1]


def test_database_down_at_start_is_served_once_it_is_up(own_cluster: PrivateCluster, tmp_path: Path) -> None:
    """The service runs on with the source red, tries it again, and serves its resource once the database is up."""
    example = make_pg_example(tmp_path / "example", own_cluster.dsn("roadkit"))
    service = example / "service.toml"
    service.write_text(service.read_text().replace("[limits]\n", "[limits]\nconnect_retry_initial = 0.2\nconnect_retry_max = 0.5\n"))
    own_cluster.stop("immediate")
    params = {"resource": "monaco-pgrouting", "start": f"{START[0]},{START[1]}", "end": f"{END[0]},{END[1]}"}
    try:
        with service_client(service) as client:
            assert client.get("/simple/1.0.0/route", params=params).status_code == 400  # no such resource yet
            own_cluster.start()
            for _ in range(100):
                response = client.get("/simple/1.0.0/route", params=params)
                if response.status_code == 200:
                    break
                time.sleep(0.1)
            assert response.status_code == 200, response.text
    finally:
        if not own_cluster.is_running():
            own_cluster.start()


async def test_sources_sharing_a_connection_keep_their_own_time_outs(pg_example: Path, tmp_path: Path) -> None:
    """A connection remembers the time-out it has: each request runs under its own source's, never another's."""
    example = make_pg_example(tmp_path / "example", read_dsn(pg_example))
    database = example / "pgrouting.database.toml"
    database.write_text(database.read_text().replace("pool_size = 4", "pool_size = 1"))  # one connection for both
    slow = _source(example)
    hasty = PgRoutingSource.from_config(
        attrs.evolve(read_source(example / "sources" / "monaco-pgrouting.source"), id="hasty", timeout=0.001)
    )
    await slow.connect()
    await hasty.connect()
    request = RouteRequest((START, END), Cost("car", "fastest"))
    try:
        assert slow._database is hasty._database and slow._database is not None
        for _ in range(2):
            assert (await slow.route(request)).distance > 0
            with pytest.raises(EngineTimeout):
                await hasty.route(request)
        assert (await slow.route(request)).distance > 0
    finally:
        await hasty.disconnect()
        await slow.disconnect()
