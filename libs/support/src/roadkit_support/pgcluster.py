"""A private PostgreSQL cluster: ``initdb`` into a folder, start on a free port, stop.

The one way the project runs PostgreSQL of its own: the tests (apps and pgRouting), the demo (the
pgRouting example keeps its cluster next to its built data, so the import happens once) and the
benchmarks. It needs the PostgreSQL server binaries (``pg_config --bindir``, or Debian's
``/usr/lib/postgresql/<version>/bin``) and nothing else; no system server is touched.

A cluster that is already running in the folder (another process started it: another worker of
the same service, a service restarting while the old one still runs) is joined. Every process using
it registers in ``.<folder>.users``; the last one to leave stops the server.

The server listens on 127.0.0.1 only and asks every client for the password of its superuser
(scram-sha-256, never ``trust``): a random password kept in ``.<folder>.password``, readable by
the user that created the cluster only (0600). Other local users can neither read it nor connect.
Tools get it through the environment (``PGPASSWORD``), never on their command line.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from roadkit_support.serving import bound_socket


class ClusterError(RuntimeError):
    """PostgreSQL's tools failed; the message carries their output."""


def pg_bindir() -> Path:
    """The folder of PostgreSQL's server binaries (``initdb``, ``pg_ctl``)."""
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        out = subprocess.run(["pg_config", "--bindir"], check=True, capture_output=True, text=True).stdout.strip()
        if (Path(out) / "initdb").exists():
            return Path(out)
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").exists():
            return candidate
    raise ClusterError("PostgreSQL server binaries not found (install postgresql-15, see tools/apt-packages.txt)")


def _as_server_user(args: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root: run them as the postgres user then.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def _give_to_server_user(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")


#: Who may connect, and how: over TCP from this machine, with the password (no unix socket is opened).
HBA = """# Written by roadkit (roadkit_support.pgcluster): the password of the role, never trust.
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


def _run(args: list[str], what: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    try:
        environ = None if env is None else {**os.environ, **env}
        done = subprocess.run(args, check=True, capture_output=True, text=True, env=environ, input=stdin)
    except subprocess.CalledProcessError as exc:
        raise ClusterError(f"{what} failed: {(exc.stderr or exc.stdout or '').strip()}") from None
    return done.stdout


def _running_port(data: Path) -> int | None:
    """The port of the server running on ``data`` (from ``postmaster.pid``), or None."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return port


@attrs.define
class PrivateCluster:
    """A PostgreSQL cluster in ``data``, reachable on 127.0.0.1 only, with the password of ``password_file``."""

    data: Path
    bindir: Path = attrs.field(factory=pg_bindir)
    port: int = 0
    owned: bool = False  # True while this object is a registered user of the server

    @property
    def _users(self) -> Path:
        return self.data.parent / f".{self.data.name}.users"

    @property
    def _me(self) -> Path:
        return self._users / f"{os.getpid()}-{id(self)}"

    def _live_users(self) -> list[Path]:
        """The registered users whose process still runs (files of dead ones are removed)."""
        live = []
        for entry in self._users.glob("*-*") if self._users.exists() else []:
            try:
                os.kill(int(entry.name.split("-")[0]), 0)
                live.append(entry)
            except (OSError, ValueError):
                entry.unlink(missing_ok=True)
        return live

    @property
    def log_file(self) -> Path:
        return self.data / "server.log"

    @property
    def password_file(self) -> Path:
        """The file holding the superuser's password (0600, next to the data folder)."""
        return self.data.parent / f".{self.data.name}.password"

    @property
    def password(self) -> str:
        """The superuser's password (random, made when the cluster is initialised)."""
        return self.password_file.read_text(encoding="utf-8").strip()

    def environ(self) -> dict[str, str]:
        """The environment a PostgreSQL tool (psql, pg_dump...) needs to connect with :meth:`dsn` ``(password=False)``."""
        return {"PGPASSWORD": self.password}

    def dsn(self, database: str = "postgres", *, password: bool = True) -> str:
        """A libpq/asyncpg DSN of one database of the running cluster.

        With the password by default, for clients in this process; ``password=False`` for a command
        line or a file (give :meth:`environ` to the tool).
        """
        secret = f":{self.password}" if password else ""
        return f"postgresql://postgres{secret}@127.0.0.1:{self.port}/{database}"

    def _new_password(self) -> str:
        """A new random password in ``password_file``, written 0600 before anything is in it."""
        password = secrets.token_urlsafe(24)  # URL-safe: it goes into DSNs as it is
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(password + "\n")
        return password

    def exists(self) -> bool:
        return (self.data / "PG_VERSION").exists()

    def init(self) -> None:
        """``initdb`` into ``data`` when it holds no cluster yet."""
        if self.exists():
            return
        self.data.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0 and subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(self.data.parent)]).returncode:
            raise ClusterError(
                f"the postgres user cannot reach {self.data.parent}: the server runs as that user when "
                "roadkit runs as root; put the cluster folder where every parent folder is world-searchable"
            )
        _give_to_server_user(self.data)
        os.chmod(self.data, 0o700)
        password = self._new_password()
        # initdb reads the password from a file of its own user's (the postgres user when run as root), removed at once.
        with tempfile.TemporaryDirectory(prefix="roadkit-pg-init-") as tmp:
            pwfile = Path(tmp) / "password"
            pwfile.write_text(password + "\n", encoding="utf-8")
            pwfile.chmod(0o600)
            _give_to_server_user(Path(tmp))
            _give_to_server_user(pwfile)
            _run(
                _as_server_user(
                    [
                        str(self.bindir / "initdb"),
                        "-D",
                        str(self.data),
                        "-U",
                        "postgres",
                        "--auth=scram-sha-256",
                        f"--pwfile={pwfile}",
                        "-E",
                        "UTF8",
                        "--locale=C",
                        "--no-sync",
                    ]
                ),
                f"initdb {self.data}",
            )
        self._write_hba()

    def _write_hba(self) -> None:
        hba = self.data / "pg_hba.conf"
        hba.write_text(HBA, encoding="utf-8")
        hba.chmod(0o600)
        _give_to_server_user(hba)

    def _needs_password(self) -> bool:
        """A cluster made before passwords (``trust``): it gets one at its next start."""
        return self.exists() and not self.password_file.exists()

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        # Two processes starting the same folder at once would race on the pid file.
        lock = self.data.parent / f".{self.data.name}.lock"
        with open(lock, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def start(self, *, timeout: float = 60.0) -> None:
        """Start the server (``initdb`` first when needed), or join the one already running there."""
        self.data.parent.mkdir(parents=True, exist_ok=True)
        with self._lock():
            self.init()
            self._users.mkdir(exist_ok=True)
            running = _running_port(self.data)
            if running is not None:
                self.port, self.owned = running, True
                self._me.touch()
                if self._needs_password():
                    self._set_password()
                return
            legacy = self._needs_password()
            if not legacy:
                self._write_hba()
            if not self.port:  # a restarted cluster keeps its port: its clients reconnect there
                with bound_socket("127.0.0.1", 0) as sock:
                    self.port = int(sock.getsockname()[1])
            options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
            _run(
                _as_server_user(
                    [
                        str(self.bindir / "pg_ctl"),
                        "-D",
                        str(self.data),
                        "-l",
                        str(self.log_file),
                        "-w",
                        "-t",
                        str(int(timeout)),
                        "-o",
                        options,
                        "start",
                    ]
                ),
                f"pg_ctl start {self.data}",
            )
            self.owned = True
            self._me.touch()
            if legacy:
                self._set_password()

    def _set_password(self) -> None:
        """Give a cluster made with ``trust`` a password, then ask every client for it."""
        password = self._new_password()
        self.psql(f"ALTER ROLE postgres PASSWORD '{password}'")  # token_urlsafe: no quote in it
        self._write_hba()
        _run(_as_server_user([str(self.bindir / "pg_ctl"), "-D", str(self.data), "reload"]), f"pg_ctl reload {self.data}")

    def stop(self, mode: str = "fast") -> None:
        """Leave the server; the last user stops it (``fast``, or ``immediate`` for a crash-like stop)."""
        if not self.owned:
            return
        with self._lock():
            self._me.unlink(missing_ok=True)
            self.owned = False
            if self._live_users():
                return
            with contextlib.suppress(ClusterError):
                _run(
                    _as_server_user([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"]),
                    f"pg_ctl stop {self.data}",
                )

    def is_running(self) -> bool:
        return _running_port(self.data) is not None

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL with ``psql`` (stops at the first error); returns its output.

        The SQL goes through standard input (it may set a password): a command line is readable by every local user.
        """
        return _run(
            [str(self.bindir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-d", self.dsn(database, password=False), "-f", "-"],
            "psql",
            env=self.environ(),
            stdin=sql,
        )

    def create_database(self, name: str, extensions: Sequence[str] = ()) -> str:
        """Create database ``name`` when missing, with ``extensions``; returns its DSN."""
        if name.replace("_", "").isalnum() is False:
            raise ValueError(f"database name {name!r}: expected letters, digits and underscores")
        if not self.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}'"):
            self.psql(f'CREATE DATABASE "{name}"')
        for extension in extensions:
            self.psql(f'CREATE EXTENSION IF NOT EXISTS "{extension}" CASCADE', name)
        return self.dsn(name)


@contextlib.contextmanager
def private_cluster(data: Path | None = None) -> Iterator[PrivateCluster]:
    """A running private cluster in ``data`` (a temporary folder, removed afterwards, when None)."""
    temporary = data is None
    if data is None:
        folder = Path(tempfile.mkdtemp(prefix="roadkit-pg-"))
        _give_to_server_user(folder)
        data = folder / "data"
    cluster = PrivateCluster(data)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop("immediate" if temporary else "fast")
        if temporary:
            time.sleep(0.1)
            shutil.rmtree(data.parent, ignore_errors=True)
