"""Bounded engine work on pgRouting: limits in the engine's units, a busy pool, database errors kept from clients."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from roadkit.config.loader import read_source
from roadkit.errors import EngineError
from roadkit.routing.source import SourceState
from roadkit.testing import service_client
from roadkit_pgrouting import database
from roadkit_pgrouting.source import PgRoutingSource
from tests.engine_c.conftest import END, START, make_pg_example
from tests.engine_c.test_pgrouting_failures import read_dsn

ISOCHRONE, ROUTE = "/simple/1.0.0/isochrone", "/simple/1.0.0/route"


@pytest.fixture(scope="module")
def busy(pg_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The pgRouting service on a pool of one connection, a source time-out of 1 s."""
    example = make_pg_example(tmp_path_factory.mktemp("busy") / "example", read_dsn(pg_example))
    (example / "pgrouting.database.toml").write_text(f'dsn = "{read_dsn(pg_example)}"\npool_size = 1\n')
    source = example / "sources" / "monaco-pgrouting.source"
    source.write_text(source.read_text().replace("timeout = 10.0", "timeout = 1.0"))
    with service_client(example / "service.toml") as client:
        yield client


def isochrone(client: TestClient, **params: Any) -> Any:
    point = f"{START[0]},{START[1]}"
    return client.get(ISOCHRONE, params={"resource": "monaco-pgrouting", "point": point, "costType": "time", **params})


def test_a_time_unit_does_not_stretch_the_engine_limit(busy: TestClient) -> None:
    """The resource allows costValue up to 20000: in hours that would be 72,000,000 s, past the engine's 20,000 s."""
    refused = isochrone(busy, costValue="20000", timeUnit="hour")
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == (
        "Parameter 'costValue' is invalid: expected at most 5.55556 (hour): the engine computes no larger time isochrone"
    )
    minutes = isochrone(busy, costValue="400", timeUnit="minute")  # 24,000 s
    assert minutes.status_code == 400 and "at most 333.333 (minute)" in minutes.json()["error"]["message"]
    kilometres = isochrone(busy, costType="distance", costValue="60", distanceUnit="kilometer")
    assert kilometres.status_code == 400 and "at most 50 (kilometer)" in kilometres.json()["error"]["message"]
    assert isochrone(busy, costValue="2", timeUnit="minute").status_code == 200


def test_the_engine_limit_is_configurable_and_published(pg_example: Path, tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "example", read_dsn(pg_example))
    source = example / "sources" / "monaco-pgrouting.source"
    source.write_text(source.read_text() + "\n[limits]\nisochrone_time = 600\nisochrone_distance = 5000\nmax_nearest = 2\n")
    with service_client(example / "service.toml") as client:
        refused = isochrone(client, costValue="601", timeUnit="second")
        assert refused.status_code == 400 and "at most 600 (second)" in refused.json()["error"]["message"]
        assert isochrone(client, costValue="10", timeUnit="minute").status_code == 200
        document = str(client.get("/simple/1.0.0/openapi.json").json())
        assert "'maximum': 600.0" in document and "'maximum': 10.0" in document  # seconds and minutes
        nearest = {"resource": "monaco-pgrouting", "coordinates": f"{START[0]},{START[1]}"}
        assert client.get("/simple/1.0.0/nearest", params={**nearest, "nbPoints": "2"}).status_code == 200
        refused = client.get("/simple/1.0.0/nearest", params={**nearest, "nbPoints": "3"})
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == (
            "Parameter 'nbPoints' is invalid: expected at most 2: source monaco-pgrouting returns no more points"
        )


def test_a_bad_engine_limit_is_a_configuration_error(pg_example: Path, tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "example", read_dsn(pg_example))
    source = example / "sources" / "monaco-pgrouting.source"
    source.write_text(source.read_text() + "\n[limits]\nisochrone_time = -1\n")
    with pytest.raises(Exception, match=r"monaco-pgrouting.source: limits.isochrone_time: expected a positive number, got -1"):
        PgRoutingSource.from_config(read_source(source))


def test_a_full_pool_is_a_503_busy_and_the_source_stays_green(busy: TestClient) -> None:
    params = {"resource": "monaco-pgrouting", "start": f"{START[0]},{START[1]}", "end": f"{END[0]},{END[1]}"}
    assert busy.get(ROUTE, params=params).status_code == 200
    (opened,) = [d for d in database._databases.values() if d.pool.get_max_size() == 1]
    portal = busy.portal
    assert portal is not None
    held = portal.call(opened.pool.acquire)  # the pool's only connection, taken
    try:
        started = time.perf_counter()
        answer = busy.get(ROUTE, params=params)
        waited = time.perf_counter() - started
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "1"
        assert answer.json()["error"]["errorType"] == "busy"
        assert 0.9 < waited < 3.0
    finally:
        portal.call(opened.pool.release, held)
    # A red source would answer 503 until its probe finds the database (a second later at the earliest).
    assert busy.get(ROUTE, params=params).status_code == 200


async def test_a_database_error_text_never_reaches_the_client(pg_example: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    example = make_pg_example(tmp_path / "example", read_dsn(pg_example))
    source = PgRoutingSource.from_config(read_source(example / "sources" / "monaco-pgrouting.source"))
    assert isinstance(source, PgRoutingSource)
    await source.connect()
    try:
        with caplog.at_level(logging.DEBUG), pytest.raises(EngineError) as raised:
            await source.fetch("SELECT secret_column FROM monaco.ways", [])
        assert "secret_column" not in raised.value.message and "does not exist" not in raised.value.message
        assert raised.value.message == "pgRouting could not answer this request on source monaco-pgrouting"
        assert "secret_column" in caplog.text  # the log has it
        # An identified error (it carries a code): logged at debug, as the core logs it.
        records = [r for r in caplog.records if r.name == "roadkit_pgrouting.source"]
        assert records and all(r.levelno == logging.DEBUG for r in records), [(r.levelname, r.getMessage()) for r in records]
        assert source.state is SourceState.GREEN
    finally:
        await source.disconnect()
