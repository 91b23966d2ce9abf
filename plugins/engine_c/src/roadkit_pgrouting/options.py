"""The kind-specific keys of a ``pgrouting`` source file and of its database file.

A source names its database (``storage.database``: a database file, or ``storage.dsn``) and its
schema, lists its costs (profile, optimization and/or cost type, cost and reverse-cost columns; the
metre and second columns default to Road2's ``cost_m_<profile>`` / ``cost_s_<profile>``) and the
way attributes steps may carry. Road2's JSON spelling (``storage.base.dbConfig``, ``costType``,
``costColumn``, ``rcostColumn``, attributes with ``default: "true"``) is accepted as it is.

Every column name is checked against :data:`IDENTIFIER` here and against the database at connect:
column names are the only configuration text that reaches SQL, always double-quoted.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any, Literal

import attrs

from roadkit.contract.sources import ConfigurationError, SourceConfig, read_document, resolve, structure

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

log = logging.getLogger(__name__)


def password_from(variable: str | None, where: str, problems: list[str]) -> str | None:
    """The password held by the environment variable ``variable`` (None: no variable named); a problem when it is not set."""
    if variable is None:
        return None
    if variable not in os.environ:
        problems.append(f"{where}: the environment variable {variable!r} is not set")
        return None
    return os.environ[variable]


def warn_inline_password(path: Path, database: DatabaseFile) -> None:
    """A password written in the file itself (read, as Road2's files hold them): a warning to move it out."""
    dsn_password = bool(database.dsn and re.search(r"://[^/@\s:]*:[^/@\s]+@|\bpassword\s*=", database.dsn, re.IGNORECASE))
    if database.password is not None or dsn_password:
        log.warning(
            '%s: a database password is written in the file: name an environment variable instead (password_env = "NAME") '
            "and keep the file readable by roadkit's user only",
            path,
        )


def quote(name: str) -> str:
    """A checked SQL identifier, double-quoted (names are checked when the configuration is read)."""
    if not IDENTIFIER.match(name):
        raise ValueError(f"not an SQL identifier: {name!r}")
    return f'"{name}"'


@attrs.frozen
class Attribute:
    """A way attribute steps may carry: the request key and its column; ``default`` ones always come."""

    key: str
    column: str
    default: bool = False


@attrs.frozen
class PgCost:
    """One cost of the source and the columns it reads."""

    profile: str
    cost_column: str
    reverse_cost_column: str
    optimization: str | None = None
    cost_type: Literal["time", "distance"] | None = None
    distance_column: str | None = None
    reverse_distance_column: str | None = None
    duration_column: str | None = None
    reverse_duration_column: str | None = None
    #: Routes of this cost honour the source's turn restrictions (Road2: always). OSM's restriction
    #: relations are for vehicles: the example's pedestrian costs set it false.
    turn_restrictions: bool = True

    @property
    def distance(self) -> tuple[str, str]:
        """The metre columns (forward, reverse)."""
        return (self.distance_column or f"cost_m_{self.profile}", self.reverse_distance_column or f"reverse_cost_m_{self.profile}")

    @property
    def duration(self) -> tuple[str, str]:
        """The second columns (forward, reverse)."""
        return (self.duration_column or f"cost_s_{self.profile}", self.reverse_duration_column or f"reverse_cost_s_{self.profile}")

    def columns(self) -> list[str]:
        return [self.cost_column, self.reverse_cost_column, *self.distance, *self.duration]


@attrs.frozen
class PgStorage:
    """Where the graph is: a database file (or a DSN) and a schema."""

    schema: str = "public"
    database: Path | None = None
    dsn: str | None = None
    #: With ``dsn``: the environment variable that holds the password (a DSN in a file holds none).
    password_env: str | None = None
    attributes: tuple[Attribute, ...] = ()
    ways: str = "ways"
    vertices: str = "ways_vertices_pgr"
    restrictions: str = "turn_restrictions"
    name_column: str = "name"
    importance_column: str | None = None
    #: Numeric columns of the ways' height limit (metres) and weight limit (tonnes), NULL where none: with
    #: them, a route for a vehicle leaves out the edges whose limit is below its height or weight.
    max_height_column: str | None = None
    max_weight_column: str | None = None


@attrs.frozen
class PgSearch:
    """The area a route is searched in: the points' box widened by ``margin`` degrees (at least), then
    multiplied by ``widen`` up to ``attempts`` times when no path is found, then the whole graph.

    With ``storage.importance_column``, a route longer than ``importance_from`` metres (straight line)
    searches the local streets only within ``margin`` of its points and the main network
    (importance <= ``importance_level``) in the whole box: its cost grows with its length, not with the
    number of streets between its points. The last attempt (the whole graph) has no such restriction.
    """

    margin: float = 0.01
    widen: float = 4.0
    attempts: int = 3
    importance_level: int = 1
    importance_from: float = 30_000.0
    snap_radius: float = 2_000.0


@attrs.frozen
class PgLimits:
    """The largest isochrones the source computes, in the engine's units whatever unit a request uses, and nearest points.

    ``isochrone_time`` in seconds, ``isochrone_distance`` in meters: a larger ``costValue`` (once
    converted from the request's ``timeUnit``/``distanceUnit``) is a 400 before any query runs.
    """

    isochrone_time: float = 20_000.0
    isochrone_distance: float = 50_000.0
    #: The most points a nearest request returns (``nbPoints``), whatever the resource allows.
    max_nearest: int = 100


@attrs.frozen
class PgPreparation:
    """How ``roadkit prepare`` builds the schema: from ``osm`` with osm2pgrouting."""

    osm: Path
    min_component: int = 30
    turn_restrictions: bool = True


@attrs.frozen
class PgOptions:
    """The kind-specific part of a ``pgrouting`` source file."""

    storage: PgStorage
    costs: tuple[PgCost, ...]
    search: PgSearch = PgSearch()
    preparation: PgPreparation | None = None
    limits: PgLimits = PgLimits()


@attrs.frozen
class DatabaseFile:
    """A database file (TOML, or Road2's ``dbConfig`` JSON of pg Pool options).

    ``password_env`` names an environment variable holding the password, so the file holds no
    secret. ``cluster`` is a folder where roadkit runs a private PostgreSQL cluster of its own
    (initialised and started when a source needs it, stopped with the service): the demo's way.
    """

    host: str = "127.0.0.1"
    port: int | None = None
    database: str = "postgres"
    user: str | None = None
    password: str | None = None
    password_env: str | None = None
    dsn: str | None = None
    pool_size: int = 8
    statement_timeout: float | None = None  # milliseconds (Road2); a source's own time-out wins
    cluster: Path | None = None
    connect_timeout: float = 5.0


def _from_road2_source(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    storage = data.get("storage")
    if isinstance(storage, dict) and isinstance(storage.get("base"), dict):
        base = dict(storage["base"])
        storage = {k: v for k, v in storage.items() if k != "base"}
        if "dbConfig" in base:
            storage["database"] = base.pop("dbConfig")
        storage.update(base)
        data["storage"] = storage
    if isinstance(storage, dict) and isinstance(storage.get("attributes"), list):
        attributes = []
        for entry in storage["attributes"]:
            if isinstance(entry, dict) and isinstance(entry.get("default"), str) and entry["default"] in ("true", "false"):
                entry = {**entry, "default": entry["default"] == "true"}
            attributes.append(entry)
        data["storage"] = {**storage, "attributes": attributes}
    renames = {"costType": "cost_type", "costColumn": "cost_column", "rcostColumn": "reverse_cost_column"}
    if isinstance(data.get("costs"), list):
        data["costs"] = [{renames.get(k, k): v for k, v in cost.items()} if isinstance(cost, dict) else cost for cost in data["costs"]]
    return data


def _check(path: Path, options: PgOptions) -> list[str]:
    problems: list[str] = []
    storage = options.storage
    if storage.password_env is not None and storage.dsn is None:
        problems.append(f"{path}: storage.password_env: goes with storage.dsn (a database file names its own password_env)")
    if (storage.database is None) == (storage.dsn is None):
        problems.append(f"{path}: storage: expected either database (a database file) or dsn, got {'both' if storage.dsn else 'neither'}")
    names = [
        ("storage.schema", storage.schema),
        ("storage.ways", storage.ways),
        ("storage.vertices", storage.vertices),
        ("storage.restrictions", storage.restrictions),
        ("storage.name_column", storage.name_column),
    ]
    if storage.importance_column:
        names.append(("storage.importance_column", storage.importance_column))
    for setting, column in (("max_height_column", storage.max_height_column), ("max_weight_column", storage.max_weight_column)):
        if column is not None:
            names.append((f"storage.{setting}", column))
    names += [(f"storage.attributes[{i}].column", a.column) for i, a in enumerate(storage.attributes)]
    if not options.costs:
        problems.append(f"{path}: costs: expected at least one cost")
    for limit in ("isochrone_time", "isochrone_distance"):
        value = getattr(options.limits, limit)
        if not 0 < value < 1e12:  # NaN too
            problems.append(f"{path}: limits.{limit}: expected a positive number, got {value}")
    if not 0 < options.limits.max_nearest <= 10_000:
        problems.append(f"{path}: limits.max_nearest: expected an integer from 1 to 10000, got {options.limits.max_nearest}")
    seen: dict[tuple[str, str], int] = {}
    for i, cost in enumerate(options.costs):
        names += [
            (f"costs[{i}].{label}", column)
            for label, column in zip(
                (
                    "cost_column",
                    "reverse_cost_column",
                    "distance_column",
                    "reverse_distance_column",
                    "duration_column",
                    "reverse_duration_column",
                ),
                [*cost.columns()[:2], *cost.distance, *cost.duration],
                strict=True,
            )
        ]
        if cost.optimization is None and cost.cost_type is None:
            problems.append(f"{path}: costs[{i}]: expected an optimization (routes) or a cost_type (isochrones), got neither")
        for key in (cost.optimization, cost.cost_type):
            if key is not None:
                if (cost.profile, key) in seen:
                    problems.append(
                        f"{path}: costs[{i}]: profile {cost.profile!r} with {key!r} is already costs[{seen[(cost.profile, key)]}]"
                    )
                seen.setdefault((cost.profile, key), i)
    for where, name in names:
        if not IDENTIFIER.match(name):
            problems.append(f"{path}: {where}: expected an SQL identifier (letters, digits, underscores), got {name!r}")
    search = options.search
    if search.margin <= 0 or search.widen <= 1 or search.attempts < 0 or search.snap_radius <= 0:
        problems.append(f"{path}: search: expected margin > 0, widen > 1, attempts >= 0 and snap_radius > 0")
    return problems


def parse_options(config: SourceConfig) -> PgOptions:
    """The options of a ``pgrouting`` source, paths resolved against its file; problems name file and key."""
    options = structure(_from_road2_source(config.options), PgOptions, config.path)
    problems = _check(config.path, options)
    if config.projection != "EPSG:4326":
        problems.append(f"{config.path}: projection: the graph's the_geom is in EPSG:4326, got {config.projection!r}")
    if problems:
        raise ConfigurationError(problems)
    storage = options.storage
    if storage.database is not None:
        storage = attrs.evolve(storage, database=resolve(config.path, storage.database))
    prep = options.preparation
    if prep is not None:
        prep = attrs.evolve(prep, osm=resolve(config.path, prep.osm))
    return attrs.evolve(options, storage=storage, preparation=prep)


def _from_road2_database(data: dict[str, Any]) -> dict[str, Any]:
    # Road2's pg Pool options: port may be a string, the pool size is `max`, ms time-outs.
    data = dict(data)
    if isinstance(data.get("port"), str) and data["port"].isdigit():
        data["port"] = int(data["port"])
    if "max" in data:
        data["pool_size"] = data.pop("max")
    if "passwordEnv" in data:
        data["password_env"] = data.pop("passwordEnv")
    if isinstance(data.get("statement_timeout"), int):
        data["statement_timeout"] = float(data["statement_timeout"])
    for ignored in ("idleTimeoutMillis", "connectionTimeoutMillis", "ssl", "min"):
        data.pop(ignored, None)
    return data


def read_database_file(path: Path) -> DatabaseFile:
    """A database file, its cluster folder resolved; the password read from ``password_env`` when named."""
    database = structure(_from_road2_database(read_document(path)), DatabaseFile, path)
    problems: list[str] = []
    if database.pool_size < 1:
        problems.append(f"{path}: pool_size: expected a positive integer, got {database.pool_size}")
    warn_inline_password(path, database)
    password = password_from(database.password_env, f"{path}: password_env", problems)
    if problems:
        raise ConfigurationError(problems)
    if password is not None:
        database = attrs.evolve(database, password=password)
    if database.cluster is not None:
        database = attrs.evolve(database, cluster=resolve(path, database.cluster))
    return database
