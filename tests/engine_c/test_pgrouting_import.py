"""The OSM import: ``roadkit pgrouting-import``, ``roadkit prepare`` on a private cluster, re-import under load."""

from __future__ import annotations

import asyncio
import logging
import subprocess
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from roadkit.cli import main as roadkit_main
from roadkit.errors import ConfigurationError
from roadkit.routing.model import Cost, RouteRequest
from roadkit.routing.source import SourceState
from roadkit_pgrouting import importer
from roadkit_pgrouting.options import DatabaseFile, read_database_file
from roadkit_support.pgcluster import PrivateCluster
from tests.engine_c.conftest import END, MONACO_PBF, START, make_pg_example
from tests.engine_c.test_pgrouting_failures import _source

SCHEMA = "imported"


async def _fetch(dsn: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def imported(pg_dsn: str) -> str:
    assert roadkit_main(["pgrouting-import", str(MONACO_PBF), "--dsn", pg_dsn, "--schema", SCHEMA]) == 0
    return pg_dsn


async def test_import_writes_road2_schema_with_indexes_and_statistics(imported: str) -> None:
    columns = {
        r["column_name"]
        for r in await _fetch(
            imported, f"SELECT column_name FROM information_schema.columns WHERE table_schema = '{SCHEMA}' AND table_name = 'ways'"
        )
    }
    for profile in ("car", "pedestrian"):
        assert {f"cost_s_{profile}", f"reverse_cost_s_{profile}", f"cost_m_{profile}", f"reverse_cost_m_{profile}"} <= columns
    assert {"id", "source", "target", "the_geom", "name", "importance", "tunnel", "highway"} <= columns
    geometry = await _fetch(imported, f"SELECT Find_SRID('{SCHEMA}', 'ways', 'the_geom') AS srid")
    assert geometry[0]["srid"] == 4326
    indexes = " ".join(r["indexdef"] for r in await _fetch(imported, f"SELECT indexdef FROM pg_indexes WHERE schemaname = '{SCHEMA}'"))
    assert "ways USING gist (the_geom)" in indexes and "ways_vertices_pgr USING gist (the_geom)" in indexes
    analyzed = await _fetch(imported, f"SELECT last_analyze FROM pg_stat_user_tables WHERE schemaname = '{SCHEMA}' AND relname = 'ways'")
    assert analyzed[0]["last_analyze"] is not None
    restrictions = await _fetch(imported, f"SELECT count(*) AS n FROM {SCHEMA}.turn_restrictions")
    assert restrictions[0]["n"] > 0
    leftovers = await _fetch(imported, f"SELECT nspname FROM pg_namespace WHERE nspname LIKE '{SCHEMA}_rk_%'")
    assert leftovers == []


async def test_import_stores_the_ways_by_importance(imported: str) -> None:
    # A long route reads its main network from few pages when the ways are stored in importance order.
    rows = await _fetch(
        imported,
        f"""SELECT count(DISTINCT importance) AS levels, count(*) FILTER (WHERE importance < before) AS out_of_order
            FROM (SELECT importance, lag(importance) OVER (ORDER BY ctid) AS before FROM {SCHEMA}.ways) w""",
    )
    assert rows[0]["levels"] > 2
    assert rows[0]["out_of_order"] == 0


async def test_import_keeps_exactly_the_vertices_at_the_ways_ends(imported: str) -> None:
    rows = await _fetch(
        imported,
        f"""SELECT (SELECT count(*) FROM {SCHEMA}.ways_vertices_pgr) AS vertices,
                   (SELECT count(*) FROM (SELECT source FROM {SCHEMA}.ways UNION SELECT target FROM {SCHEMA}.ways) e) AS ends,
                   (SELECT count(*) FROM {SCHEMA}.ways w
                     WHERE NOT EXISTS (SELECT 1 FROM {SCHEMA}.ways_vertices_pgr v WHERE v.id = w.source)
                        OR NOT EXISTS (SELECT 1 FROM {SCHEMA}.ways_vertices_pgr v WHERE v.id = w.target)) AS dangling""",
    )
    assert rows[0]["vertices"] == rows[0]["ends"] > 1000
    assert rows[0]["dangling"] == 0


async def test_import_costs_follow_one_ways_speeds_and_pedestrian_rules(imported: str) -> None:
    rows = await _fetch(
        imported,
        f"""
        SELECT
          count(*) FILTER (WHERE highway = 'motorway' AND cost_s_pedestrian > 0) AS walk_on_motorway,
          count(*) FILTER (WHERE one_way = 1 AND car AND reverse_cost_s_car > 0) AS against_one_way,
          count(*) FILTER (WHERE one_way = 1 AND car AND cost_s_car > 0) AS along_one_way,
          count(*) FILTER (WHERE cost_s_pedestrian > 0 AND abs(cost_s_pedestrian - length_m * 0.9) > 1e-6) AS not_4_kmh,
          count(*) FILTER (WHERE cost_m_car > 0 AND abs(cost_m_car - length_m) > 1e-6) AS car_m_not_length,
          count(*) FILTER (WHERE highway = 'footway' AND cost_s_car > 0) AS drive_on_footway,
          count(*) FILTER (WHERE car AND cost_s_car < 0 AND reverse_cost_s_car < 0) AS disabled_islands
        FROM {SCHEMA}.ways""",
    )
    counts = dict(rows[0])
    assert counts["walk_on_motorway"] == 0 and counts["against_one_way"] == 0 and counts["drive_on_footway"] == 0
    assert counts["along_one_way"] > 100
    assert counts["not_4_kmh"] == 0 and counts["car_m_not_length"] == 0
    assert counts["disabled_islands"] > 0, "small components are disabled"


def test_import_refuses_public_and_bad_schema_names(pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    for schema in ("public", "x; DROP TABLE y"):
        assert roadkit_main(["pgrouting-import", str(MONACO_PBF), "--dsn", pg_dsn, "--schema", schema]) != 0
        assert "schema: expected a dedicated schema name" in capsys.readouterr().err


async def test_reimport_swaps_the_schema_while_a_source_serves(imported: str, tmp_path: Path) -> None:
    example = make_pg_example(tmp_path / "example", imported)
    source = _source(example, **{'schema = "monaco"': f'schema = "{SCHEMA}"'})
    await source.connect()
    request = RouteRequest((START, END), Cost("car", "fastest"))
    expected = (await source.route(request)).distance
    answers: list[float] = []
    errors: list[Exception] = []
    done = asyncio.Event()

    async def serve() -> None:
        while not done.is_set():
            try:
                answers.append((await source.route(request)).distance)
            except Exception as exc:
                errors.append(exc)
            await asyncio.sleep(0.01)

    server = asyncio.create_task(serve())
    try:
        status = await asyncio.to_thread(roadkit_main, ["pgrouting-import", str(MONACO_PBF), "--dsn", imported, "--schema", SCHEMA])
        assert status == 0
        await asyncio.sleep(0.2)
    finally:
        done.set()
        await server
        await source.disconnect()
    assert errors == [] and len(answers) > 10
    assert all(a == pytest.approx(expected) for a in answers)
    assert source.state is SourceState.INIT


def test_prepare_imports_into_a_private_cluster_once(tmp_path: Path, scratch_folder: Path) -> None:
    scratch_folder.chmod(0o755)  # the server runs as the postgres user when the tests run as root
    cluster = scratch_folder / "cluster"
    example = make_pg_example(tmp_path / "example", "unused")
    (example / "pgrouting.database.toml").write_text(f'cluster = "{cluster}"\ndatabase = "roadkit"\n')
    assert roadkit_main(["prepare", "--config", str(example / "server.toml")]) == 0
    assert (cluster / "PG_VERSION").exists()
    assert not (cluster / "postmaster.pid").exists(), "prepare stops the cluster it started"
    from roadkit.config import load_service
    from roadkit.plugins import Plugins
    from roadkit.serving.service import Service

    service = Service(load_service(example / "service.toml"), Plugins.create())
    service.load()
    source = service.sources["monaco-pgrouting"]
    assert type(source).prepare(source.config, source.options, force=False, progress=_Silent()) is False, "imported once"


class _Silent:
    def step(self, message: str) -> None: ...

    def info(self, message: str) -> None: ...


def test_the_importer_gives_the_password_through_the_environment_never_the_command_line(
    pg_cluster: PrivateCluster, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []
    run = subprocess.run

    def recording(args: list[str], *more: Any, **options: Any) -> Any:
        calls.append(([str(a) for a in args], dict(options.get("env") or {})))
        return run(args, *more, **options)

    monkeypatch.setattr(importer.subprocess, "run", recording)
    # The cluster asks for the password (scram-sha-256): the import succeeds only if the tools get it.
    importer.import_osm(MONACO_PBF, DatabaseFile(dsn=pg_dsn), "argv_check", turn_restrictions=False)
    password = pg_cluster.password
    assert password in pg_dsn
    assert calls and not [argv for argv, _ in calls if any(password in a for a in argv)]
    osm2pgrouting = [env for argv, env in calls if Path(argv[0]).name == "osm2pgrouting"]
    assert osm2pgrouting and osm2pgrouting[0]["PGPASSWORD"] == password


def test_a_database_file_gives_the_password_through_an_environment_variable(
    pg_cluster: PrivateCluster, pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "db.toml"
    file.write_text(f'dsn = "{pg_cluster.dsn("roadkit", password=False)}"\npassword_env = "ROADKIT_TEST_PG"\n')
    with pytest.raises(ConfigurationError, match="ROADKIT_TEST_PG' is not set"):
        read_database_file(file)
    monkeypatch.setenv("ROADKIT_TEST_PG", pg_cluster.password)
    rows = asyncio.run(importer._fetch(read_database_file(file), "SELECT 1 AS one"))
    assert rows[0]["one"] == 1


def test_a_hand_written_database_file_with_its_password_is_read_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    file = tmp_path / "db.toml"
    file.write_text('host = "127.0.0.1"\npassword = "inline-s3cret"\n')  # Road2's files hold it: still read
    with caplog.at_level(logging.WARNING):
        assert read_database_file(file).password == "inline-s3cret"
    assert f"{file}: a database password is written in the file" in caplog.text
    assert "inline-s3cret" not in caplog.text
