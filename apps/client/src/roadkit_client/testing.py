"""Helpers to run the backend and the static app (and the development IAM) in tests.

Three context managers, all serving with hypercorn in a background thread on 127.0.0.1:

* :func:`run_stack` -- the development IAM, the backend and the static app, wired together
  on free ports. The usual choice for end-to-end tests::

      from roadkit_client.testing import run_stack

      with run_stack() as stack:
          stack.app_url      # "http://127.0.0.1:PORT"  (browser app; /settings.json?mode=remote works)
          stack.backend_url  # "http://127.0.0.1:PORT"  (/me, /documents, /login, /logout)
          stack.iam_url      # "http://127.0.0.1:PORT"  (realm at iam_url + "/realms/roadkit")

* :func:`run_client` -- the backend and the static app against an IAM you already run::

      with run_client(iam_url) as (backend_url, app_url): ...

  The IAM must know the URLs: start it with ``run_iam(app_url=..., portal_url=...)`` and pass
  the same ports here (``backend_port=``, ``app_port=``; :func:`free_port` finds some).

* ``roadkit_deviam.testing.run_iam`` -- the IAM alone.

Users: ``demo``/``demo-password`` and ``alice``/``alice-password``. The IAM has its test
controls on (``POST {iam_url}/_testing/clock``, ``/_testing/sessions/end``, ...).
"""

from __future__ import annotations

import socket
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from roadkit.config.files import deep_merge
from roadkit_support.serving import ServerThread, bound_socket

from .backend import create_backend_app
from .config import ClientConfig, config_from_mapping
from .static_app import create_static_app


def free_port(host: str = "127.0.0.1") -> int:
    """A port that is free right now (another process could take it before you bind it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def client_test_config(
    iam_url: str, backend_url: str, app_url: str, database: str, config_overrides: Mapping[str, Any] | None = None
) -> ClientConfig:
    """The example configuration pointed at these URLs, with ``allow_mode_override = true``."""
    import tomllib
    from importlib import resources

    packaged = resources.files("roadkit_client").joinpath("example.toml")
    # An editable install has no packaged copy: the file is then the checkout's, beside pyproject.toml.
    source = packaged if packaged.is_file() else Path(__file__).resolve().parents[2] / "example.toml"
    data = tomllib.loads(source.read_text(encoding="utf-8"))
    host_b, port_b = backend_url.split("://", 1)[1].rsplit(":", 1)
    host_a, port_a = app_url.split("://", 1)[1].rsplit(":", 1)
    data = deep_merge(
        data,
        {
            "allow_mode_override": True,
            "iam": {"url": iam_url, "jwks_min_refresh_interval": 0.0},
            "backend": {"host": host_b, "port": int(port_b), "public_url": backend_url, "cors_origins": [app_url], "database": database},
            "portal": {"apps": {"roadkit": {"login": f"{app_url}/login", "logout": f"{app_url}/"}}},
            "app": {"host": host_a, "port": int(port_a), "public_url": app_url, "test_hooks": True},
        },
    )
    if config_overrides:
        data = deep_merge(data, config_overrides)
    return config_from_mapping(data, source="run_client")


@contextmanager
def _serve_client(
    iam_url: str,
    backend_sock: socket.socket,
    app_sock: socket.socket,
    config_overrides: Mapping[str, Any] | None,
    now: Callable[[], float] | None,
) -> Iterator[ClientConfig]:
    backend_url = "http://{}:{}".format(*backend_sock.getsockname()[:2])
    app_url = "http://{}:{}".format(*app_sock.getsockname()[:2])
    with tempfile.TemporaryDirectory(prefix="roadkit-client-") as tmp:
        config = client_test_config(iam_url, backend_url, app_url, str(Path(tmp) / "client.sqlite3"), config_overrides)
        server = ServerThread([(create_backend_app(config, now=now), backend_sock), (create_static_app(config), app_sock)])
        server.start(f"{backend_url}/health")
        try:
            yield config
        finally:
            server.stop()


@contextmanager
def run_client(
    iam_url: str,
    config_overrides: Mapping[str, Any] | None = None,
    *,
    backend_port: int = 0,
    app_port: int = 0,
    host: str = "127.0.0.1",
    now: Callable[[], float] | None = None,
    sockets: tuple[socket.socket, socket.socket] | None = None,
) -> Iterator[tuple[str, str]]:
    """Run the backend and the static app; yields ``(backend_url, app_url)``.

    The database is a fresh SQLite file in a temporary folder unless ``config_overrides``
    sets ``backend.database`` or ``backend.postgres_dsn``. ``now`` replaces the backend's clock.
    ``sockets``: (backend, app) sockets already bound (``roadkit_support.serving.bound_socket``), so that
    nothing can take the ports between choosing them and serving (ports are then ignored).
    """
    backend_sock, app_sock = sockets or (bound_socket(host, backend_port), bound_socket(host, app_port))
    with _serve_client(iam_url, backend_sock, app_sock, config_overrides, now) as config:
        yield config.backend.public_url, config.app.public_url


@attrs.frozen
class Stack:
    """URLs of a running IAM + backend + static app."""

    iam_url: str
    backend_url: str
    app_url: str
    realm: str = "roadkit"
    config: ClientConfig | None = attrs.field(default=None, repr=False)

    @property
    def issuer(self) -> str:
        """The realm's issuer (``{iam_url}/realms/{realm}``)."""
        return f"{self.iam_url}/realms/{self.realm}"


@contextmanager
def run_stack(
    iam_overrides: Mapping[str, Any] | None = None,
    client_overrides: Mapping[str, Any] | None = None,
    *,
    now: Callable[[], float] | None = None,
) -> Iterator[Stack]:
    """Run the development IAM, the backend and the static app together on free ports."""
    from roadkit_deviam.testing import run_iam

    backend_sock, app_sock = bound_socket(), bound_socket()
    backend_url = "http://{}:{}".format(*backend_sock.getsockname()[:2])
    app_url = "http://{}:{}".format(*app_sock.getsockname()[:2])
    with (
        run_iam(iam_overrides, app_url=app_url, portal_url=backend_url) as iam_url,
        _serve_client(iam_url, backend_sock, app_sock, client_overrides, now) as config,
    ):
        yield Stack(iam_url=iam_url, backend_url=backend_url, app_url=app_url, config=config)
