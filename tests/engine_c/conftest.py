"""pgRouting fixtures: a private PostgreSQL cluster per test run holding the Monaco graph.

The import (osm2pgrouting and the SQL of roadkit_pgrouting) runs once per set of inputs: its result
is kept as a ``pg_dump`` under ``$ROADKIT_CACHE/pgrouting-monaco-<key>.dump`` (the key hashes the
extract and the import code), and every later run restores it into its fresh cluster in seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from roadkit_pgrouting.importer import import_osm
from roadkit_pgrouting.options import DatabaseFile
from roadkit_support.pgcluster import PrivateCluster, private_cluster
from tests.conftest import MONACO_PBF, cache_root, content_key, copy_example

SCHEMA = "monaco"
START = (7.41337, 43.72956)
END = (7.41983, 43.73115)
VIA = (7.4246, 43.7383)
FAR_START, FAR_END = (7.37612, 43.75813), (7.45165, 43.73148)  # west of Monaco to the east, along the A8
EXTENSIONS = ("postgis", "pgrouting", "hstore")


def import_key() -> str:
    """What the cached graph depends on: the extract and the import code (SQL, mapping of OSM classes, restrictions)."""
    package = resources.files("roadkit_pgrouting")
    names = ("import_sql.py", "importer.py", "mapconfig.xml", "restrictions.py")
    code = [package.joinpath(name).read_text(encoding="utf-8") for name in names]
    return content_key(MONACO_PBF, *code)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PrivateCluster]:
    """A private PostgreSQL cluster for this test run (temporary folder, free port)."""
    with private_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def pg_dsn(pg_cluster: PrivateCluster) -> str:
    """A database with the Monaco graph in schema ``monaco``: restored from the cache, imported when missing."""
    dsn = pg_cluster.create_database("roadkit", EXTENSIONS)
    dump = cache_root() / f"pgrouting-monaco-{import_key()}.dump"
    # PostgreSQL's tools get the password through the environment, never on their command line.
    bare, env = pg_cluster.dsn("roadkit", password=False), os.environ | pg_cluster.environ()
    if not dump.exists():
        import_osm(MONACO_PBF, DatabaseFile(dsn=dsn), SCHEMA)
        with tempfile.NamedTemporaryFile(dir=dump.parent, prefix=".pgdump-", delete=False) as tmp:
            pass
        subprocess.run([str(pg_cluster.bindir / "pg_dump"), "-Fc", "-n", SCHEMA, "-f", tmp.name, "-d", bare], check=True, env=env)
        os.replace(tmp.name, dump)  # atomic: a concurrent run sees a whole dump or none
    else:
        subprocess.run([str(pg_cluster.bindir / "pg_restore"), "--no-owner", "-d", bare, str(dump)], check=True, env=env)
    return dsn


def keep_only_pgrouting(example: Path) -> Path:
    """Drop the example's other engines' sources and resources: the service serves only pgRouting."""
    for folder, suffix in (("sources", ".source"), ("resources", ".resource")):
        for path in (example / folder).glob(f"*{suffix}"):
            if "pgrouting" not in path.name:
                path.unlink()
    return example


def make_pg_example(target: Path, dsn: str) -> Path:
    """A copy of the Monaco example, pgRouting only, its database file pointing at ``dsn``."""
    data = target.parent / f"{target.name}-data"
    data.mkdir(exist_ok=True)
    example = keep_only_pgrouting(copy_example(target, data, ("*osrm*", "*valhalla*", "gtfs")))
    (example / "pgrouting.database.toml").write_text(f'dsn = "{dsn}"\npool_size = 4\n', encoding="utf-8")
    return example


@pytest.fixture(scope="session")
def pg_example(tmp_path_factory: pytest.TempPathFactory, pg_dsn: str) -> Path:
    """The Monaco example (pgRouting only) on the test cluster's graph."""
    return make_pg_example(tmp_path_factory.mktemp("monaco-pg"), pg_dsn)


@pytest.fixture
def scratch_folder() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="roadkit-pgtest-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
