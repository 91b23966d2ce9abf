"""The one writer of roadkit's configuration files for benchmark runs.

Every benchmark serves its roadkit through files written here: a server file (the administrator on
its port, one service ``main``, same-process or child-process workers), the service file (the
listener, the APIs, the HTTP server) and its sources and resources. :func:`roadkit_files` is the
bench service of an engine family, as the sweep runs it; :func:`gateway_files` a service in front of
an engine server; :func:`pgrouting_files` the pgRouting comparison's; :func:`example_files` a copy of
the Monaco demo with its ports and workers changed. They all end in :func:`service_files`.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.common import EXAMPLE, free_port
from bench.servers import osrm_dataset, valhalla_config

SIMPLE_AND_OSRM_APIS = (("simple", "1.0.0"), ("osrm", "1.0.0"))

#: The costs of the pgRouting comparison's sources (the Monaco import's and the synthetic grids' columns).
PGROUTING_COSTS = """
[[costs]]
profile = "car"
optimization = "fastest"
cost_type = "time"
cost_column = "cost_s_car"
reverse_cost_column = "reverse_cost_s_car"
"""


def service_files(
    workdir: Path,
    *,
    port: int,
    admin: int,
    sources: Mapping[str, str],
    resources: Mapping[str, str],
    workers: str | int = 0,
    apis: Sequence[tuple[str, str]] = (),
    http_server: str | None = None,
    allocator: str | None = None,
    files: Mapping[str, str] | None = None,
) -> Path:
    """The files of one service ``main`` in ``workdir``; returns the server file.

    ``sources`` and ``resources``: file name -> TOML text; ``workers``: 0 for same-process mode, else
    child processes (a number or ``"auto"``); ``apis``: (name, version), none for the service's default
    (the simple API); ``http_server``, ``allocator``: the settings, none for their defaults; ``files``:
    more files (relative path -> text), e.g. a database file the sources point at."""
    for folder, texts in (("sources", sources), ("resources", resources)):
        (workdir / folder).mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (workdir / folder / name).write_text(text)
    for name, text in (files or {}).items():
        (workdir / name).write_text(text)
    (workdir / "service.toml").write_text(
        f'[application]\nname = "bench"\ntitle = "bench"\ndescription = "bench"\n[[listeners]]\nport = {port}\n'
        '[folders]\nsources = ["sources"]\nresources = ["resources"]\n'
        + "".join(f'[[apis]]\nname = "{name}"\nversion = "{version}"\n' for name, version in apis)
        + (f'[http]\nserver = "{http_server}"\n' if http_server else "")
    )
    mode = 'mode = "same-process"\n' if workers == 0 else f'mode = "child-process"\nworkers = {json.dumps(workers)}\n'
    if allocator is not None:  # the default: "auto" (roadkit.process.allocator)
        mode += f"allocator = {json.dumps(allocator)}\n"
    server = workdir / "server.toml"
    server.write_text(
        f'[administrator]\n[administrator.listener]\nport = {admin}\n[administrator.logging]\nlevel = "warning"\n'
        f'[[services]]\nid = "main"\nconfiguration = "service.toml"\n{mode}'
    )
    return server


def roadkit_files(
    workdir: Path,
    family: str,
    port: int,
    admin: int,
    *,
    workers: str | int,
    threads: int,
    http_server: str | None = None,
    allocator: str | None = None,
    engine_calls: str | None = None,
    limits: Sequence[str] = (),
    native_api: bool = True,
) -> Path:
    """The bench service of one engine family (``"osrm"``, ``"valhalla"``) on the example's data, resource
    ``monaco``, with ``workers`` child processes (0: same process).

    ``threads``: the Valhalla source's ``limits.threads``; ``engine_calls``: its ``limits.engine_calls``
    (default: the source's, "threads"); ``limits``: more of its ``limits``, as TOML lines (``"batch = 1"``;
    a ``threads`` line replaces ``threads``). ``native_api``: the OSRM service also serves the native
    OSRM API (the sweep's ``osrm-native`` scenario), else only the simple API."""
    if family == "osrm":
        sources = {
            "car.source": f'id = "car"\ntype = "osrm"\nprojection = "EPSG:4326"\n[storage]\nfile = "{osrm_dataset()}"\n'
            '[cost]\nprofile = "car"\noptimization = "fastest"\n'
        }
        resource = 'id = "monaco"\ntype = "osrm"\nsources = ["car"]\n[operations.route]\n[operations.nearest]\n[operations.matrix]\n'
        if native_api:
            resource += '[apis.osrm]\nprofiles = { driving = "car" }\n'
        apis: Sequence[tuple[str, str]] = SIMPLE_AND_OSRM_APIS if native_api else ()
    else:
        sources = {
            "valhalla.source": f'id = "valhalla"\ntype = "valhalla"\nprojection = "EPSG:4326"\n[storage]\nconfig = "{valhalla_config()}"\n'
            "[limits]\n"
            + ("" if any(line.split("=")[0].strip() == "threads" for line in limits) else f"threads = {threads}\n")
            + (f'engine_calls = "{engine_calls}"\n' if engine_calls else "")
            + "".join(f"{line}\n" for line in limits)
            + '[[costs]]\nprofile = "car"\noptimization = "fastest"\ncost_type = "time"\ncosting = "auto"\n'
        }
        resource = (
            'id = "monaco"\ntype = "valhalla"\nsources = ["valhalla"]\n[operations.route]\n[operations.nearest]\n'
            "[operations.isochrone]\ncostValue = { min = 1, max = 3600 }\n[operations.matrix]\n"
        )
        apis = ()
    return service_files(
        workdir,
        port=port,
        admin=admin,
        sources=sources,
        resources={"monaco.resource": resource},
        workers=workers,
        apis=apis,
        http_server=http_server,
        allocator=allocator,
    )


def gateway_files(workdir: Path, family: str, engine_url: str, port: int, admin: int) -> Path:
    """A same-process gateway: its only source (``osrm-http`` or ``valhalla-http``, id ``remote``, car
    costs) asks the engine server at ``engine_url``, in a resource ``monaco`` of the engine's type."""
    if family == "osrm":
        source = (
            f'id = "remote"\ntype = "osrm-http"\n[http]\nservers = ["{engine_url}"]\n[cost]\nprofile = "car"\noptimization = "fastest"\n'
        )
    else:
        costs = '[[costs]]\nprofile = "car"\noptimization = "fastest"\ncosting = "auto"\n'
        source = f'id = "remote"\ntype = "valhalla-http"\n[http]\nservers = ["{engine_url}"]\n{costs}'
    resource = f'id = "monaco"\ntype = "{family}"\nsources = ["remote"]\n[operations.route]\n[operations.nearest]\n'
    return service_files(workdir, port=port, admin=admin, sources={"remote.source": source}, resources={"monaco.resource": resource})


def worker_count(workers: str) -> int:
    """The worker processes of a ``workers`` setting: a number, or ``"auto"`` (one per usable core)."""
    return len(os.sched_getaffinity(0)) if workers == "auto" else int(workers)


def database_file(workdir: Path, dsn: str, pool_size: int) -> None:
    """``db.toml``, the pgRouting sources' database (``../db.toml`` from their folder)."""
    (workdir / "db.toml").write_text(f'dsn = "{dsn}"\npool_size = {pool_size}\n')


def pgrouting_source(source_id: str, schema: str, *, timeout: float | None = None, search: str = "") -> str:
    """A pgRouting source on ``schema`` of the database file, car costs (``search``: its ``[search]`` table)."""
    return (
        f'id = "{source_id}"\ntype = "pgrouting"\nprojection = "EPSG:4326"\n'
        + (f"timeout = {timeout}\n" if timeout is not None else "")
        + f'[storage]\ndatabase = "../db.toml"\nschema = "{schema}"\nimportance_column = "importance"\n{search}{PGROUTING_COSTS}'
    )


def pgrouting_source_file(workdir: Path, source_id: str, schema: str, *, timeout: float | None = None, search: str = "") -> Path:
    """The file of :func:`pgrouting_source` in ``workdir/sources`` (read by the source directly, no service)."""
    (workdir / "sources").mkdir(parents=True, exist_ok=True)
    path = workdir / "sources" / f"{source_id}.source"
    path.write_text(pgrouting_source(source_id, schema, timeout=timeout, search=search))
    return path


def pgrouting_files(
    workdir: Path,
    dsn: str,
    schema: str,
    pool: int,
    port: int,
    admin: int,
    workers: str,
    timeout: float | None = None,
    resource_id: str = "monaco",
    allocator: str | None = None,
) -> Path:
    """A service of one pgRouting source ``pg`` and resource ``resource_id`` (routes, isochrones, matrices), in child-process workers.

    ``pool`` connections in all: each worker's pool gets its share (as many as the direct client's pool).
    Matrices up to 100 x 100 (the demo's resource allows 2,500 cells); ``timeout``: the source's, seconds;
    ``allocator``: the workers' setting (none: the default, ``"auto"``)."""
    count = worker_count(workers)
    resource = (
        f'id = "{resource_id}"\ntype = "pgrouting"\nsources = '
        '["pg"]\n[operations.route]\n[operations.isochrone]\ncostValue = { min = 1, max = 3600 }\n'
        "[operations.matrix]\nlimits = { sources = 100, targets = 100, cells = 10000 }\n"
    )
    return service_files(
        workdir,
        port=port,
        admin=admin,
        sources={"pg.source": pgrouting_source("pg", schema, timeout=timeout)},
        resources={"pg.resource": resource},
        workers=int(workers) if workers.isdigit() else workers,
        allocator=allocator,
        files={"db.toml": f'dsn = "{dsn}"\npool_size = {max(1, pool // count)}\n'},
    )


def example_files(
    workdir: Path, workers: int, mmap: bool, tile_folder: bool = False, allocator: str | None = None
) -> tuple[Path, int, int]:
    """A copy of the Monaco demo (its built data linked, pgRouting left out) on free ports with ``workers``
    workers; returns (server file, administrator port, service port).

    ``mmap`` false: the OSRM sources read their files into each worker; ``tile_folder``: Valhalla reads
    its tile folder instead of the tar extract; ``allocator``: the workers' setting (none: the demo's)."""
    example = workdir / "monaco"
    shutil.copytree(EXAMPLE, example, symlinks=True, ignore=shutil.ignore_patterns("*pgrouting*"))
    if not (example / "data").exists():
        (example / "data").symlink_to(EXAMPLE / "data")
    admin_port, service_port = free_port(), free_port()
    server = example / "server.toml"
    text = server.read_text().replace("port = 8079", f"port = {admin_port}").replace('workers = "auto"', f"workers = {workers}")
    if allocator is not None:
        text = text.replace("workers = ", f'allocator = "{allocator}"\nworkers = ', 1)
    server.write_text(text.replace('level = "info"', 'level = "warning"'))
    service = example / "service.toml"
    service.write_text(service.read_text().replace("port = 8080", f"port = {service_port}"))
    if not mmap:
        for source in (example / "sources").glob("monaco-*-*.source"):
            source.write_text(source.read_text().replace('algorithm = "', 'mmap = false\nalgorithm = "'))
    if tile_folder:
        config = example / "data" / "valhalla" / "valhalla.json"
        data = json.loads(config.read_text())
        data["mjolnir"].pop("tile_extract", None)
        config.unlink()  # may be a link into the example: replace it, never write through it
        config.write_text(json.dumps(data))
    return server, admin_port, service_port
