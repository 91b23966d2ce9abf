"""Source kind ``pgrouting``: routes, isochrones and nearest points on a pgRouting schema, through asyncpg.

Each request takes one connection of the database's shared pool and runs one statement (see
:mod:`roadkit_pgrouting.sql` and :mod:`roadkit_pgrouting.queries`; a matrix with turn restrictions
or a route widening its search, a few): one round trip, plus a ``SET statement_timeout`` when the
connection's time-out is not this source's yet (or not what is left of the operation's). No transaction (the
statement only reads), no session settings, so no BEGIN/COMMIT and no reset when the connection goes back.
A lost database makes the source red at once (503 within the time-out, never a hang) and a
background probe turns it green again when the database answers; no restart is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import asyncpg

from roadkit.contract.sources import (
    ConstraintKeyType,
    Cost,
    CostTable,
    EngineBusy,
    EngineError,
    EngineTimeout,
    IsochroneRequest,
    IsochroneResponse,
    MatrixRequest,
    MatrixResponse,
    NearestRequest,
    NearestResponse,
    ParameterInvalid,
    Progress,
    RoadkitError,
    RouteRequest,
    RouteResponse,
    Source,
    SourceConfig,
    SourceState,
    SourceUnavailable,
    VersionedKind,
)
from roadkit_pgrouting import avoidance, matrices, queries
from roadkit_pgrouting.database import Database, close_database, describe, hosts_of, open_database
from roadkit_pgrouting.options import DatabaseFile, PgCost, PgOptions, parse_options, read_database_file
from roadkit_pgrouting.sql import Binder

log = logging.getLogger(__name__)

# Errors that mean "the database is gone" (as opposed to "this query failed").
_LOST = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    ConnectionError,
)

#: When the operation under way must have answered (the event loop's clock): its statements share the time-out.
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("pgrouting_deadline", default=None)


async def _within[T](seconds: float, coroutine: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result within ``seconds``, else TimeoutError.

    Unlike ``asyncio.wait_for``, this does not wait for the coroutine to stop once cancelled: asyncpg's
    pool takes a connection back only when PostgreSQL has ended its cancelled statement, which a hung
    database never does (``wait_for`` then waited for ever). The coroutine ends alone, later.
    """
    task = asyncio.ensure_future(coroutine)
    try:
        done, _ = await asyncio.wait((task,), timeout=seconds)
    finally:
        if not task.done():  # timed out, or the request was cancelled (its client left)
            task.cancel()
            task.add_done_callback(_forget)
    if not done:
        raise TimeoutError
    return task.result()


def _forget(task: asyncio.Task[Any]) -> None:
    """Read the outcome of a task nobody waits for any more (so asyncio does not log it as lost)."""
    if not task.cancelled():
        task.exception()


class PgRoutingSource(Source):
    """A pgRouting graph (Road2's schema) in a PostgreSQL database shared with other sources."""

    kind = "pgrouting"
    options_class = PgOptions
    versioned_keys: ClassVar[Mapping[str, VersionedKind]] = {"storage.schema": "name"}
    operations = frozenset({"route", "isochrone", "nearest", "matrix"})
    constraint_key_types: ClassVar[Mapping[str, ConstraintKeyType]] = {
        # A configured condition on a column: '=' bans the edges where it holds, '!=' those where it does not.
        "name-pgr": ConstraintKeyType(("=", "!=")),
        # The user's operator and number on the key's column.
        "numerical-pgr": ConstraintKeyType(("=", "!=", ">", ">=", "<", "<="), numeric=True),
    }
    options: PgOptions
    probe_interval: ClassVar[float] = 1.0
    avoids_areas = True  # edges crossing an obstacle are left out (roadkit_pgrouting.avoidance)

    def __init__(self, config: SourceConfig, options: PgOptions, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self._database: Database | None = None
        self._columns: dict[str, str] = {}
        self._has_restrictions = False
        self._restriction_path = "ARRAY[id_from, id_to]::bigint[]"
        # Statements built for a shape of request (queries._statement); emptied when the schema is read again.
        self._statements: dict[tuple[Any, ...], tuple[str, Binder]] = {}
        self._probe: asyncio.Task[None] | None = None
        self.cost_table = CostTable(self.id, options.costs)

    @classmethod
    def parse_options(cls, config: SourceConfig) -> PgOptions:
        return parse_options(config)

    @property
    def vehicle_limits(self) -> Mapping[str, float]:
        """The dimensions whose limit columns the source file names."""
        return {dimension: avoidance.MOST[dimension] for dimension in avoidance.limit_columns(self)}

    def costs(self) -> Sequence[Cost]:
        return self.cost_table.costs()

    def resolve_cost(self, cost: Cost) -> PgCost:
        """The columns of a cost (route key first, then isochrone key)."""
        return self.cost_table.find(cost)

    def constraint_problem(self, operation: str, constraint_type: str, key_type: str, field: str | None) -> str | None:
        # An isochrone's contours are the real costs: a weighted cost would move them (Road2 ignored these).
        if operation == "isochrone" and constraint_type != "banned":
            return "pgRouting isochrones apply banned only (prefer and avoid weigh routes and matrices, not reach)"
        return None

    def isochrone_limit(self, cost_type: str) -> float | None:
        limits = self.options.limits
        return limits.isochrone_time if cost_type == "time" else limits.isochrone_distance

    def remote_hosts(self) -> Sequence[tuple[str, str]]:
        storage = self.options.storage
        if storage.database is not None:
            return [("storage.database", host) for host in hosts_of(read_database_file(storage.database))]
        return [("storage.dsn", host) for host in hosts_of(DatabaseFile(dsn=storage.dsn))]

    @classmethod
    def data_paths(cls, config: SourceConfig, options: PgOptions) -> Sequence[Path]:
        return [options.storage.database] if options.storage.database else []

    @classmethod
    def prepare(cls, config: SourceConfig, options: PgOptions, *, force: bool, progress: Progress) -> bool:
        from roadkit_pgrouting.prepare import prepare_source

        return prepare_source(config, options, force=force, progress=progress)

    # -- connection -----------------------------------------------------------------------------

    @property
    def where(self) -> str:
        storage = self.options.storage
        if storage.database is not None:
            return f"database file {storage.database}"
        # describe() never shows the password a DSN may hold (this text goes to health answers).
        return f"database {describe(self._database.settings if self._database else DatabaseFile(dsn=storage.dsn))}"

    async def connect(self) -> None:
        storage = self.options.storage
        try:
            self._database = await open_database(storage.database, storage.dsn, storage.password_env)
        except RoadkitError as exc:
            self.fail(f"{self.where}: {exc.message}")
            raise
        except Exception as exc:
            self.fail(f"cannot reach the {self.where}: {exc or type(exc).__name__}")
            raise SourceUnavailable(self.reason) from None
        try:
            await self._check_schema()
        except Exception:
            await self._release()
            raise
        self.state = SourceState.GREEN
        self.reason = ""

    async def _check_schema(self) -> None:
        """Every configured column must exist: a wrong name is a red source naming it, not a 500 later."""
        assert self._database is not None
        storage = self.options.storage
        try:
            async with self._database.pool.acquire(timeout=max(self.timeout, 1.0)) as conn:
                rows = await conn.fetch(queries.COLUMNS, storage.schema, [storage.ways, storage.vertices, storage.restrictions])
        except Exception as exc:
            self.fail(f"cannot read schema {storage.schema} in the {self.where}: {exc or type(exc).__name__}")
            raise SourceUnavailable(self.reason) from None
        tables: dict[str, dict[str, str]] = {}
        for row in rows:
            tables.setdefault(row["table_name"], {})[row["column_name"]] = row["data_type"]
        ways = tables.get(storage.ways, {})
        if not ways:
            self.fail(f"table {storage.schema}.{storage.ways} not found in the {self.where} (run 'roadkit prepare')")
            raise SourceUnavailable(self.reason)
        needed = {"id", "source", "target", "the_geom", storage.name_column}
        for cost in self.options.costs:
            needed.update(cost.columns())
        needed.update(a.column for a in storage.attributes)
        if storage.importance_column:
            needed.add(storage.importance_column)
        limits = avoidance.limit_columns(self)
        needed.update(limits.values())
        missing = sorted(needed - set(ways))
        if missing:
            self.fail(f"{storage.schema}.{storage.ways} has no column {', '.join(missing)} ({self.config.path})")
            raise SourceUnavailable(self.reason)
        for column in limits.values():
            if ways[column] not in avoidance.NUMERIC_TYPES:
                self.fail(
                    f"{storage.schema}.{storage.ways}.{column} is {ways[column]}: a limit column must be numeric ({self.config.path})"
                )
                raise SourceUnavailable(self.reason)
        if "the_geom" not in tables.get(storage.vertices, {}):
            self.fail(f"table {storage.schema}.{storage.vertices} with a the_geom column not found in the {self.where}")
            raise SourceUnavailable(self.reason)
        self._columns = ways
        self._statements = {}
        restriction_columns = set(tables.get(storage.restrictions, {}))
        self._has_restrictions = {"id_from", "id_to"} <= restriction_columns
        # roadkit's import writes whole paths (a via-way restriction has 3 edges or more), Road2's tables pairs.
        self._restriction_path = "path" if "path" in restriction_columns else "ARRAY[id_from, id_to]::bigint[]"

    async def _release(self) -> None:
        if self._database is not None:
            database, self._database = self._database, None
            await close_database(database)

    async def disconnect(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._probe
            self._probe = None
        await self._release()
        await super().disconnect()

    def _lost(self, exc: BaseException) -> SourceUnavailable:
        """The database went away: red now, a probe brings the source back."""
        self.fail(f"lost the {self.where}: {exc or type(exc).__name__}")
        log.warning("source %s: %s", self.id, self.reason)
        if self._probe is None or self._probe.done():
            self._probe = asyncio.get_running_loop().create_task(self._probe_until_back())
        return SourceUnavailable(f"The database of source {self.id} is unavailable")  # the reason (health, log) has the detail

    async def _probe_until_back(self) -> None:
        while self._database is not None and self.state is SourceState.RED:
            await asyncio.sleep(self.probe_interval)
            try:
                async with self._database.pool.acquire(timeout=min(self.timeout, 2.0)) as conn:
                    await conn.fetchval("SELECT 1", timeout=2.0)
                await self._check_schema()
            except Exception as exc:  # still down (or the schema is gone): try again later
                log.debug("source %s: database still unavailable: %s", self.id, exc)
                continue
            self.state, self.reason = SourceState.GREEN, ""
            log.info("source %s: the database is back, source green again", self.id)

    async def fetch(self, sql: str, args: Sequence[Any]) -> list[asyncpg.Record]:
        """The rows of one statement."""
        rows: list[asyncpg.Record] = await self._run("fetch", sql, args)
        return rows

    async def fetchrow(self, sql: str, args: Sequence[Any]) -> asyncpg.Record:
        """The one row of a statement that always returns one."""
        row: asyncpg.Record | None = await self._run("fetchrow", sql, args)
        if row is None:
            raise EngineError(f"pgRouting could not answer: no row from the statement of source {self.id}")
        return row

    def time_left(self) -> float | None:
        """Seconds left of the time-out of the operation under way (None: outside one)."""
        deadline = _deadline.get()
        return None if deadline is None else deadline - asyncio.get_running_loop().time()

    def timed_out(self) -> EngineTimeout:
        """The error of an operation past the source's time-out (a 504)."""
        return EngineTimeout(f"The database of source {self.id} did not answer within {self.timeout:g} s")

    async def _run(self, method: str, sql: str, args: Sequence[Any]) -> Any:
        """One statement on a pooled connection with the source's statement time-out; database errors as roadkit errors."""
        if self.state is SourceState.RED or self._database is None:
            # The reason names the database and its error: health and the log show it, not the client.
            raise SourceUnavailable(f"The database of source {self.id} is unavailable")
        pool = self._database.pool
        milliseconds = int(self.timeout * 1000)
        left = self.time_left()
        if left is not None:
            if left <= 0:
                raise self.timed_out()
            if left < self.timeout - 1.0:  # a later statement of the operation (a SET only then: one more round trip)
                milliseconds = max(1, int(left * 1000))
        try:
            async with pool.acquire(timeout=max(self.timeout, 1.0)) as conn:
                await conn.use_statement_timeout(milliseconds)
                return await getattr(conn, method)(sql, *args)
        except asyncpg.QueryCanceledError:
            raise self.timed_out() from None
        except TimeoutError as exc:
            # Every connection taken by other requests is a busy source, not a lost database (which
            # times out while a new connection is being opened, with the pool not full).
            if pool.get_size() >= pool.get_max_size() and pool.get_idle_size() == 0:
                raise EngineBusy(f"Source {self.id} is busy: every database connection is in use; try again shortly") from None
            raise self._lost(exc) from None
        except _LOST as exc:
            raise self._lost(exc) from None
        except asyncpg.PostgresError as exc:
            # The database's own text names tables, columns and values: the log has it, the client a generic message.
            log.debug("source %s: query failed: %s", self.id, exc)
            raise EngineError(f"pgRouting could not answer this request on source {self.id}") from None

    async def _bounded[T](self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Never wait longer than the time-out (plus a margin) for the database, even if it hangs.

        The operation's statements share the time-out (each gets what is left of it). Past the margin,
        a database that still answers is working on a statement it does not cancel (pgRouting's TRSP
        checks for no cancel): that is the request's time-out, not a lost database.
        """
        token = _deadline.set(asyncio.get_running_loop().time() + self.timeout)
        try:
            result: T = await _within(self.timeout + 1.0, coroutine)
        except TimeoutError:
            if await self._answers():
                raise self.timed_out() from None
            raise self._lost(TimeoutError(f"no answer within {self.timeout + 1.0:g} s")) from None
        finally:
            _deadline.reset(token)
        return result

    async def _answers(self) -> bool:
        """Whether the database answers a trivial statement within 1 s."""
        database = self._database
        if database is None:
            return False

        async def trivial() -> None:
            async with database.pool.acquire() as conn:
                await conn.fetchval("SELECT 1")

        try:
            await _within(1.0, trivial())
        except Exception:  # whatever the failure, the database did not answer
            return False
        return True

    # -- operations -----------------------------------------------------------------------------

    async def route(self, request: RouteRequest) -> RouteResponse:
        cost = self.setting(request.cost)
        return await self._bounded(queries.route(self, request, cost))

    async def isochrone(self, request: IsochroneRequest) -> IsochroneResponse:
        cost = self.setting(request.cost)
        return await self._bounded(queries.isochrone(self, request, cost))

    async def matrix(self, request: MatrixRequest) -> MatrixResponse:
        cost = self.setting(request.cost)
        return await self._bounded(matrices.matrix(self, request, cost))

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        most = self.options.limits.max_nearest
        if request.number > most:
            raise ParameterInvalid("nbPoints", f"expected at most {most}: source {self.id} returns no more points")
        return await self._bounded(queries.nearest(self, request))

    def health(self) -> dict[str, Any]:
        entry = super().health()
        if self._database is not None:
            entry["database"] = describe(self._database.settings)
        return entry
