"""Import an ``.osm.pbf`` extract into Road2's pgRouting schema (``roadkit pgrouting-import``, ``roadkit prepare``).

The field's tools do the OSM work: ``osmium`` converts the extract (osm2pgrouting reads XML) and
extracts the turn-restriction relations, ``osm2pgrouting`` splits the ways at intersections and
builds the topology, pgRouting's ``pgr_strongComponents`` finds the islands. Then SQL
(:mod:`roadkit_pgrouting.import_sql`) writes Road2's columns. The whole graph is built in a new
schema and swapped in with one transaction: a running service never sees half a graph.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from importlib import resources
from pathlib import Path
from typing import Any

import asyncpg

from roadkit.contract.sources import Command, Progress, RoadkitError
from roadkit_pgrouting import import_sql, restrictions
from roadkit_pgrouting.database import EXTENSIONS, describe, settings_of, start_cluster
from roadkit_pgrouting.options import IDENTIFIER, DatabaseFile, quote

PROFILES = ("car", "pedestrian")


class ImportFailed(RoadkitError):
    """The import could not finish; the message says which step and why."""

    status = 400
    code = "import_failed"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ImportFailed(f"{name} not found: install the Debian package {'osmium-tool' if name == 'osmium' else name}")
    return path


def _run(args: list[str], what: str, env: dict[str, str] | None = None) -> str:
    try:
        return subprocess.run(args, check=True, capture_output=True, text=True, env=None if env is None else {**os.environ, **env}).stdout
    except subprocess.CalledProcessError as exc:
        tail = "\n".join((exc.stderr or exc.stdout or "").strip().splitlines()[-15:])
        raise ImportFailed(f"{what} failed:\n{tail}") from None


def _connect_args(settings: DatabaseFile, work: Path) -> tuple[list[str], dict[str, str]]:
    """osm2pgrouting's connection options, and the environment that gives it the password.

    The password goes through a password file in ``work`` (0600; osm2pgrouting sets libpq's
    ``password`` to an empty value, which ignores ``PGPASSWORD`` but reads ``PGPASSFILE``) and
    ``PGPASSWORD``, never on the command line, which every user of the machine can read in ``/proc``.
    """
    password = settings.password
    if settings.dsn:
        url = urllib.parse.urlsplit(settings.dsn)
        args = ["-d", url.path.lstrip("/") or "postgres", "-h", url.hostname or "127.0.0.1", "-p", str(url.port or 5432)]
        if url.username:
            args += ["-U", urllib.parse.unquote(url.username)]
        if url.password and password is None:
            password = urllib.parse.unquote(url.password)
    else:
        args = ["-d", settings.database, "-h", settings.host, "-p", str(settings.port or 5432), "-U", settings.user or "postgres"]
    if not password:
        return args, {}
    passfile = work / "pgpass"
    fd = os.open(passfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("*:*:*:*:" + password.replace("\\", "\\\\").replace(":", "\\:") + "\n")
    return args, {"PGPASSWORD": password, "PGPASSFILE": str(passfile)}


async def _connect(settings: DatabaseFile) -> asyncpg.Connection:
    if settings.dsn:
        return await asyncpg.connect(settings.dsn, **({"password": settings.password} if settings.password is not None else {}))
    return await asyncpg.connect(
        host=settings.host, port=settings.port or 5432, database=settings.database, user=settings.user, password=settings.password
    )


async def _sql(settings: DatabaseFile, script: str) -> None:
    conn = await _connect(settings)
    try:
        await conn.execute(script)
    finally:
        await conn.close()


async def _fetch(settings: DatabaseFile, query: str, *args: Any) -> list[asyncpg.Record]:
    conn = await _connect(settings)
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


async def _restrictions(settings: DatabaseFile, names: dict[str, str], opl: str) -> restrictions.Counts:
    """The turn_restrictions table from osmium's OPL text of the restriction relations."""
    relations, skipped = restrictions.read_relations(opl)
    ways, nodes = restrictions.osm_ids(relations)
    conn = await _connect(settings)
    try:
        edges = [restrictions.Edge(*r) for r in await conn.fetch(restrictions.EDGES.format(**names), ways)]
        vertices = {r["osm_id"]: r["id"] for r in await conn.fetch(restrictions.VERTICES.format(**names), nodes)}
        prefixes, unmapped = restrictions.resolve(relations, edges, vertices)
        await conn.execute(import_sql.RESTRICTIONS_TABLE.format(**names))
        records = [p.record() for p in prefixes]
        await conn.copy_records_to_table("restriction_prefixes", schema_name=names["stage_name"], records=records)
        await conn.execute(import_sql.RESTRICTIONS.format(**names))
        rows = await conn.fetch(restrictions.COUNTS.format(**names))
    finally:
        await conn.close()
    return restrictions.Counts.of(skipped + unmapped, prefixes, rows)


def import_osm(
    osm: Path,
    settings: DatabaseFile,
    schema: str,
    *,
    min_component: int = 30,
    turn_restrictions: bool = True,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Build Road2's schema ``schema`` from ``osm``; returns counts (ways, vertices, turn restrictions)."""
    progress = progress or Progress()
    if not osm.is_file():
        raise ImportFailed(f"OSM extract not found: {osm}")
    if not IDENTIFIER.match(schema) or schema in ("public", "pg_catalog", "information_schema"):
        raise ImportFailed(f"schema: expected a dedicated schema name (letters, digits, underscores; not public), got {schema!r}")
    started = time.monotonic()
    new, stage, old = (f"{schema}_rk_new", f"{schema}_rk_osm", f"{schema}_rk_old")
    names = {"new": quote(new), "stage": quote(stage), "stage_name": stage}
    run = asyncio.run
    with tempfile.TemporaryDirectory(prefix="roadkit-pgr-") as tmp:
        work = Path(tmp)
        progress.step(f"importing {osm.name} into schema {schema} of {describe(settings)}")
        run(
            _sql(
                settings,
                "".join(f'CREATE EXTENSION IF NOT EXISTS "{e}";' for e in (*EXTENSIONS, "hstore"))
                + f"DROP SCHEMA IF EXISTS {quote(new)} CASCADE; DROP SCHEMA IF EXISTS {quote(stage)} CASCADE;"
                + f"CREATE SCHEMA {quote(new)}; CREATE SCHEMA {quote(stage)};",
            )
        )
        try:
            progress.info("osmium: converting the extract for osm2pgrouting")
            xml = work / "extract.osm"
            _run([_tool("osmium"), "cat", str(osm), "-o", str(xml), "-O"], "osmium cat")
            progress.info("osm2pgrouting: splitting the ways at intersections, building the topology")
            mapconfig = resources.files("roadkit_pgrouting").joinpath("mapconfig.xml")
            connection, environment = _connect_args(settings, work)
            with resources.as_file(mapconfig) as config_path:
                out = _run(
                    [
                        _tool("osm2pgrouting"),
                        "-f",
                        str(xml),
                        "-c",
                        str(config_path),
                        "--schema",
                        stage,
                        "--tags",
                        "--addnodes",
                        "--clean",
                        *connection,
                    ],
                    "osm2pgrouting",
                    environment,
                )
            streets = next((line for line in out.splitlines() if "size of streets" in line), "").strip()
            progress.info(f"osm2pgrouting done ({streets or 'no summary'})")
            progress.info("writing Road2's columns: car fastest/shortest, pedestrian fastest/shortest (4 km/h, no motorways)")
            run(_sql(settings, import_sql.WAYS.format(**names)))
            for profile in PROFILES:
                progress.info(f"disabling the {profile} components of fewer than {min_component} vertices")
                run(_sql(settings, import_sql.COMPONENTS.format(profile=profile, min=int(min_component), **names)))
            found = restrictions.Counts()
            if turn_restrictions:
                progress.info("osmium: extracting the turn-restriction relations")
                opl = _run(
                    [_tool("osmium"), "tags-filter", str(osm), "r/type=restriction", "-R", "-f", "opl", "-o", "-"], "osmium tags-filter"
                )
                found = run(_restrictions(settings, names, opl))
                progress.info(found.summary())
            progress.info("GiST indexes, clustering, ANALYZE")
            run(_sql(settings, import_sql.INDEXES.format(**names)))
            run(_sql(settings, f"ANALYZE {quote(new)}.ways; ANALYZE {quote(new)}.ways_vertices_pgr;"))
            counts = run(
                _fetch(settings, f"SELECT (SELECT count(*) FROM {quote(new)}.ways), (SELECT count(*) FROM {quote(new)}.ways_vertices_pgr)")
            )[0]
            progress.info(f"swapping schema {schema} in")
            run(
                _sql(
                    settings,
                    f"""
                BEGIN;
                DROP SCHEMA IF EXISTS {quote(old)} CASCADE;
                DO $$ BEGIN
                  IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = '{schema}') THEN
                    ALTER SCHEMA {quote(schema)} RENAME TO {quote(old)};
                  END IF;
                END $$;
                ALTER SCHEMA {quote(new)} RENAME TO {quote(schema)};
                COMMIT;
                DROP SCHEMA IF EXISTS {quote(old)} CASCADE;""",
                )
            )
        finally:
            run(_sql(settings, f"DROP SCHEMA IF EXISTS {quote(stage)} CASCADE; DROP SCHEMA IF EXISTS {quote(new)} CASCADE;"))
    result = {
        "ways": int(counts[0]),
        "vertices": int(counts[1]),
        "restriction_relations": found.relations,
        "restrictions": found.imported,
        "restriction_paths": found.paths,
        "restrictions_skipped": sum(found.skipped.values()),
    }
    progress.step(
        f"schema {schema} ready: {result['ways']} ways, {result['vertices']} vertices, "
        f"{result['restrictions']} turn restrictions ({time.monotonic() - started:.1f} s)"
    )
    return result


def import_with_database(osm: Path, database_file: Path | None, dsn: str | None, schema: str, **kwargs: Any) -> dict[str, int]:
    """:func:`import_osm` on a database file (starting its private cluster when it has one) or a DSN."""
    settings = settings_of(database_file, dsn)
    cluster = None
    if settings.cluster is not None:
        cluster, settings = start_cluster(settings)
    try:
        return import_osm(osm, settings, schema, **kwargs)
    finally:
        if cluster is not None:
            cluster.stop()


async def schema_exists(settings: DatabaseFile, schema: str, ways: str = "ways") -> bool:
    """True when ``schema.ways`` exists (the graph was imported)."""
    rows = await _fetch(settings, "SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = $2", schema, ways)
    return bool(rows)


def import_command() -> Command:
    """``roadkit pgrouting-import``: import an extract into a database by hand."""

    def configure(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("osm", type=Path, help="the .osm.pbf extract")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--database", type=Path, help="a database file (TOML, or Road2's dbConfig JSON)")
        target.add_argument("--dsn", help="a PostgreSQL DSN, e.g. postgresql://user@host:5432/db")
        parser.add_argument("--schema", required=True, help="the schema to (re)build, e.g. monaco")
        parser.add_argument("--min-component", type=int, default=30, help="disable components with fewer vertices")
        parser.add_argument("--no-turn-restrictions", action="store_true", help="skip the turn_restrictions table")

    def run(args: argparse.Namespace) -> int:
        import_with_database(
            args.osm,
            args.database,
            args.dsn,
            args.schema,
            min_component=args.min_component,
            turn_restrictions=not args.no_turn_restrictions,
        )
        return 0

    return Command("pgrouting-import", "Import an .osm.pbf extract into Road2's pgRouting schema.", configure, run)
