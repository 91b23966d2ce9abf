"""roadkit_support.pgcluster: the private PostgreSQL clusters of the demo, the tests and the benchmarks."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from roadkit_support.pgcluster import PrivateCluster, private_cluster


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="roadkit-pgcluster-"))
    path.chmod(0o755)  # the server runs as the postgres user when the tests run as root
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_last_user_stops_a_shared_cluster(folder: Path) -> None:
    first, second = PrivateCluster(folder / "cluster"), PrivateCluster(folder / "cluster")
    first.start()
    try:
        second.start()  # another worker of the same service joins the running server
        assert second.port == first.port
        assert first.psql("SELECT 1") == "1\n"
        first.stop()
        assert second.is_running(), "a user still needs it"
        assert second.psql("SELECT 2") == "2\n"
        (folder / ".cluster.users" / "999999999-1").touch()  # a user that died without leaving
        second.stop()
        assert not second.is_running()
    finally:
        first.stop("immediate")
        second.stop("immediate")


def test_a_restarted_cluster_keeps_its_port_and_data(folder: Path) -> None:
    cluster = PrivateCluster(folder / "cluster")
    cluster.start()
    try:
        dsn = cluster.create_database("kept", ["postgis"])
        port = cluster.port
        cluster.stop()
        cluster.start()
        assert cluster.port == port and cluster.dsn("kept") == dsn
        assert cluster.psql("SELECT PostGIS_Version() IS NOT NULL", "kept") == "t\n"
    finally:
        cluster.stop("immediate")


def test_a_temporary_cluster_is_removed_afterwards() -> None:
    with private_cluster() as cluster:
        data = cluster.data
        assert cluster.psql("SELECT current_user") == "postgres\n"
    assert not data.exists()


def test_database_names_are_checked() -> None:
    cluster = PrivateCluster(Path("/nonexistent"), bindir=Path("/nonexistent"))
    with pytest.raises(ValueError, match="database name"):
        cluster.create_database('x"; DROP DATABASE postgres; --')
