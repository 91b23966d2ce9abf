"""Shared helpers and fixtures of the apps tests (IAM, backend, static app, private PostgreSQL)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from roadkit_deviam import create_app
from roadkit_deviam.testing import iam_test_config
from roadkit_support.pgcluster import private_cluster
from roadkit_support.serving import ServerThread, bound_socket

APP_URL = "http://app.test:8182"
PORTAL_URL = "http://backend.test:8181"


class RunningIam:
    """An IAM served on a free port, with the in-process app kept for forging tokens."""

    def __init__(self, app: Any, url: str) -> None:
        self.app = app
        self.url = url

    @property
    def iam(self) -> Any:
        """The IAM's shared objects (keys, clock, state)."""
        return self.app.state.iam

    @property
    def issuer(self) -> str:
        """The realm's issuer."""
        return f"{self.url}/realms/roadkit"


def start_iam(
    overrides: dict[str, Any] | None = None, *, app_url: str = APP_URL, portal_url: str = PORTAL_URL
) -> tuple[RunningIam, ServerThread]:
    """Start an IAM in a thread (call ``stop()`` on the returned server)."""
    sock = bound_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = create_app(iam_test_config(overrides, public_url=url, app_url=app_url, portal_url=portal_url))
    server = ServerThread([(app, sock)])
    server.start(f"{url}/realms/roadkit/.well-known/openid-configuration")
    return RunningIam(app, url), server


@pytest.fixture
def iam() -> Iterator[RunningIam]:
    """A fresh development IAM with testing controls (clients registered for APP_URL / PORTAL_URL)."""
    running, server = start_iam()
    try:
        yield running
    finally:
        server.stop()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    """A cookie-keeping HTTP client that does not follow redirects (a browser, step by step)."""
    with httpx.Client(follow_redirects=False, timeout=20) as client:
        yield client


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A private PostgreSQL cluster (``roadkit_support.pgcluster``: initdb in a temporary folder, a free port); yields a DSN."""
    with private_cluster() as cluster:
        yield cluster.create_database("roadkit")


class FakeClock:
    """Wall time plus an offset the test moves (the backend's ``now``)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


class Stack:
    """A running IAM (with its in-process app), backend and static app, and the backend's clock."""

    def __init__(self, iam: RunningIam, backend_url: str, app_url: str, clock: FakeClock) -> None:
        self.iam = iam
        self.backend_url = backend_url
        self.app_url = app_url
        self.clock = clock

    def advance(self, seconds: float) -> None:
        """Move the IAM's and the backend's clocks forward together."""
        httpx.post(f"{self.iam.url}/_testing/clock", json={"advance": seconds}).raise_for_status()
        self.clock.offset += seconds


@contextlib.contextmanager
def running_stack(client_overrides: dict[str, Any] | None = None, iam_overrides: dict[str, Any] | None = None) -> Iterator[Stack]:
    """IAM + backend + static app on free ports, wired to each other."""
    from roadkit_client.testing import run_client

    # Bound now and served as they are: no window in which another test could take the ports.
    backend_sock, app_sock = bound_socket(), bound_socket()
    backend_url = f"http://127.0.0.1:{backend_sock.getsockname()[1]}"
    app_url = f"http://127.0.0.1:{app_sock.getsockname()[1]}"
    running, server = start_iam(iam_overrides, app_url=app_url, portal_url=backend_url)
    clock = FakeClock()
    try:
        with run_client(running.url, client_overrides, now=clock, sockets=(backend_sock, app_sock)) as urls:
            assert urls == (backend_url, app_url)
            yield Stack(running, backend_url, app_url, clock)
    finally:
        server.stop()


@pytest.fixture
def stack() -> Iterator[Stack]:
    """IAM + backend (SQLite) + static app."""
    with running_stack() as running:
        yield running


@pytest.fixture
def fresh_pg_dsn(postgres_dsn: str) -> str:
    """A new empty database in the private cluster, for one test."""
    import asyncio
    import uuid

    import asyncpg

    name = f"t_{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        conn = await asyncpg.connect(postgres_dsn)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(create())
    return postgres_dsn.rsplit("/", 1)[0] + f"/{name}"
