"""Databases of pgRouting sources: one asyncpg pool per database, shared by the sources that name it.

A database is named by a database file or a DSN. Sources that name the same one (in the same event
loop) share one pool, sized by the file's ``pool_size``; the pool closes when its last source
disconnects. A database file with ``cluster`` runs a private PostgreSQL cluster in that folder
(``roadkit_support.pgcluster``), started by the first source and stopped with the pool.

A request is one statement on a pooled connection, and leaves nothing on the session but the
statement time-out, which each connection remembers (:class:`PgConnection`): so a connection going
back to the pool needs no ``RESET ALL`` round trip (asyncpg still rolls back a transaction left open).
"""

from __future__ import annotations

import asyncio
import logging
import re
import urllib.parse
from pathlib import Path
from typing import Any

import asyncpg
import attrs

from roadkit.contract.sources import ConfigurationError
from roadkit_pgrouting.options import DatabaseFile, password_from, read_database_file
from roadkit_support.pgcluster import PrivateCluster

log = logging.getLogger(__name__)

EXTENSIONS = ("postgis", "pgrouting")


@attrs.define
class Database:
    """An open database: its pool, its settings, and the private cluster it runs on (if any)."""

    key: tuple[Any, ...]
    settings: DatabaseFile
    pool: asyncpg.Pool
    cluster: PrivateCluster | None = None
    users: int = 0


class PgConnection(asyncpg.Connection):  # type: ignore[misc]  # asyncpg has no type hints
    """A pooled connection that knows its statement time-out: a request sets it only when it differs."""

    statement_timeout_ms: int | None = None

    async def use_statement_timeout(self, milliseconds: int) -> None:
        """Set the statement time-out of the session (no round trip when it is already that)."""
        if self.statement_timeout_ms != milliseconds:
            self.statement_timeout_ms = None  # unknown until the SET succeeds
            await self.execute(f"SET statement_timeout = {int(milliseconds)}")
            self.statement_timeout_ms = milliseconds


async def _keep_session(connection: asyncpg.Connection) -> None:
    """The pool's reset: nothing to reset (requests set nothing but the remembered time-out)."""


_databases: dict[tuple[Any, ...], Database] = {}
_lock: asyncio.Lock | None = None


def describe(settings: DatabaseFile) -> str:
    """The database as a user reads it in a message (never the password)."""
    if settings.dsn and "://" in settings.dsn:
        return settings.dsn.split("@")[-1]
    if settings.dsn:  # libpq's keywords
        return re.sub(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S*)", "password=***", settings.dsn, flags=re.IGNORECASE)
    return f"{settings.host}:{settings.port or 5432}/{settings.database}"


def settings_of(database_file: Path | None, dsn: str | None, password_env: str | None = None) -> DatabaseFile:
    """The settings of a source's database: its file, or a DSN with the defaults (and its password's variable)."""
    if database_file is not None:
        return read_database_file(database_file)
    problems: list[str] = []
    password = password_from(password_env, "storage.password_env", problems)
    if problems:
        raise ConfigurationError(problems)
    return DatabaseFile(dsn=dsn, password=password, password_env=password_env)


def hosts_of(settings: DatabaseFile) -> list[str]:
    """The hosts a database's settings connect to (a private cluster: this machine)."""
    if settings.cluster is not None:
        return ["127.0.0.1"]
    if not settings.dsn:
        return [settings.host]
    if "://" not in settings.dsn:  # libpq's keywords: host=a,b hostaddr=...
        found = re.findall(r"\b(?:host|hostaddr)\s*=\s*'?([^\s']*)", settings.dsn)
        hosts = [h for value in found for h in value.split(",")]
    else:
        url = urllib.parse.urlsplit(settings.dsn)
        netloc = url.netloc.rpartition("@")[2]
        hosts = [re.sub(r":\d*$", "", part) for part in netloc.split(",")] if netloc else []
        query = urllib.parse.parse_qs(url.query)
        hosts += [h for name in ("host", "hostaddr") for value in query.get(name, []) for h in value.split(",")]
    # A unix socket folder is this machine; no host at all is libpq's default, the local socket.
    hosts = [urllib.parse.unquote(h) for h in hosts]
    return [("localhost" if not h or h.startswith("/") else h) for h in hosts] or ["localhost"]


def start_cluster(settings: DatabaseFile) -> tuple[PrivateCluster, DatabaseFile]:
    """Start (or join) the private cluster of a database file; settings pointed at it."""
    assert settings.cluster is not None
    cluster = PrivateCluster(settings.cluster)
    cluster.start()
    cluster.create_database(settings.database, EXTENSIONS)
    return cluster, attrs.evolve(settings, host="127.0.0.1", port=cluster.port, user="postgres", password=cluster.password, dsn=None)


#: Every connection's session. No JIT: pgRouting's functions make a matrix's statement look costly
#: enough for PostgreSQL to compile it, 0.3 to 0.9 s lost a statement (a 100 x 100 matrix on 10 k
#: edges: 1.5 s with it, 1.25 s without). A plan for each request's values: after five runs of a
#: prepared statement PostgreSQL may keep a generic plan, blind to the size of the search box and
#: the number of points (the same matrix then went from 1.17 to 1.62 s); planning costs a route
#: well under a millisecond, and PostgreSQL's CPU per Monaco route fell 10 %.
SESSION_SETTINGS = {"application_name": "roadkit-pgrouting", "jit": "off", "plan_cache_mode": "force_custom_plan"}


async def _create_pool(settings: DatabaseFile) -> asyncpg.Pool:
    kwargs: dict[str, Any] = {
        "min_size": 1,
        "max_size": settings.pool_size,
        "timeout": settings.connect_timeout,
        "command_timeout": None,
        "server_settings": dict(SESSION_SETTINGS),
        "connection_class": PgConnection,
        "reset": _keep_session,
    }
    if settings.dsn:
        if settings.password is not None:
            kwargs["password"] = settings.password
        return await asyncpg.create_pool(settings.dsn, **kwargs)
    return await asyncpg.create_pool(
        host=settings.host, port=settings.port or 5432, database=settings.database, user=settings.user, password=settings.password, **kwargs
    )


async def open_database(key_path: Path | None, dsn: str | None, password_env: str | None = None) -> Database:
    """The shared database of a source (opened on first use); raises when unreachable."""
    global _lock
    if _lock is None:
        _lock = asyncio.Lock()
    loop = asyncio.get_running_loop()
    key = (str(key_path) if key_path else dsn, id(loop))
    async with _lock:
        database = _databases.get(key)
        if database is None:
            settings = settings_of(key_path, dsn, password_env)
            cluster = None
            if settings.cluster is not None:
                cluster, settings = await loop.run_in_executor(None, start_cluster, settings)
            try:
                pool = await asyncio.wait_for(_create_pool(settings), settings.connect_timeout + 1)
            except BaseException:
                if cluster is not None:
                    await loop.run_in_executor(None, cluster.stop)
                raise
            database = Database(key, settings, pool, cluster)
            _databases[key] = database
        database.users += 1
        return database


async def close_database(database: Database) -> None:
    """One source is done with the database; the last one closes the pool (and stops its cluster)."""
    database.users -= 1
    if database.users > 0:
        return
    _databases.pop(database.key, None)
    try:
        await asyncio.wait_for(database.pool.close(), 5)
    except (TimeoutError, OSError, asyncpg.PostgresError):
        database.pool.terminate()
    if database.cluster is not None:
        await asyncio.get_running_loop().run_in_executor(None, database.cluster.stop)
