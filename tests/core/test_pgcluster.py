"""roadkit_support.pgcluster: the private PostgreSQL clusters of the demo, the tests and the benchmarks."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
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


def _psql_as(user: list[str], cluster: PrivateCluster, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """psql over TCP to the cluster, as ``user`` (a ``runuser`` prefix, or nothing), with ``env`` only."""
    command = [*user, str(cluster.bindir / "psql"), "-X", "-At", "-w", "-d", cluster.dsn(password=False), "-c", "SELECT 1"]
    return subprocess.run(command, capture_output=True, text=True, env={"PATH": os.environ["PATH"], **env}, timeout=30)


def test_a_cluster_asks_every_client_for_its_password_kept_in_a_0600_file(folder: Path) -> None:
    cluster = PrivateCluster(folder / "cluster")
    cluster.start()
    try:
        assert stat.S_IMODE(cluster.password_file.stat().st_mode) == 0o600
        assert cluster.password_file.stat().st_uid == os.geteuid()
        hba = (cluster.data / "pg_hba.conf").read_text()
        assert "trust" not in hba.replace("never trust", "") and "scram-sha-256" in hba
        without = _psql_as([], cluster, {})
        assert without.returncode != 0 and "password" in without.stderr, without.stderr
        wrong = _psql_as([], cluster, {"PGPASSWORD": "guessed"})
        assert wrong.returncode != 0 and "password authentication failed" in wrong.stderr, wrong.stderr
        assert _psql_as([], cluster, cluster.environ()).stdout == "1\n"
        if os.geteuid() == 0:
            # Another local user: it can't read the password, and without it the server refuses it.
            nobody = ["runuser", "-u", "nobody", "--"]
            assert subprocess.run([*nobody, "cat", str(cluster.password_file)], capture_output=True).returncode != 0
            refused = _psql_as(nobody, cluster, {})
            assert refused.returncode != 0 and "password" in refused.stderr, refused.stderr
    finally:
        cluster.stop("immediate")


def test_a_cluster_made_with_trust_gets_a_password_at_its_next_start(folder: Path) -> None:
    cluster = PrivateCluster(folder / "cluster")
    cluster.start()
    cluster.stop()
    # As clusters were made before: trust for every local client, no password file.
    (cluster.data / "pg_hba.conf").write_text("host all all 127.0.0.1/32 trust\n")
    cluster.password_file.unlink()
    cluster.start()
    try:
        assert stat.S_IMODE(cluster.password_file.stat().st_mode) == 0o600
        assert _psql_as([], cluster, {}).returncode != 0
        assert _psql_as([], cluster, cluster.environ()).stdout == "1\n"
    finally:
        cluster.stop("immediate")
