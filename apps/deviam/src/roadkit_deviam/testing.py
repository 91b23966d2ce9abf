"""Helpers to run the development IAM in tests (pytest, Playwright end-to-end tests).

Typical use::

    from roadkit_deviam.testing import run_iam

    with run_iam(app_url="http://127.0.0.1:8182", portal_url="http://127.0.0.1:8181") as iam_url:
        # iam_url == "http://127.0.0.1:<free port>"; the realm is iam_url + "/realms/roadkit"
        ...

The IAM runs on a free port in a background thread (hypercorn) with the packaged example
configuration (realm ``roadkit``, users ``demo``/``demo-password`` and ``alice``/``alice-password``,
clients ``roadkit-app`` and ``roadkit-portal``) and ``testing = true``, so the test-only controls
``POST /_testing/clock``, ``POST /_testing/sessions/end``, ``POST /_testing/keys/rotate`` and
``GET /_testing/state`` are available.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from roadkit_support.documents import deep_merge
from roadkit_support.serving import ServerThread, bound_socket

from .app import create_app
from .config import IamConfig, config_from_mapping, example_mapping

REALM = "roadkit"
PUBLIC_CLIENT_ID = "roadkit-app"
PORTAL_CLIENT_ID = "roadkit-portal"
PORTAL_CLIENT_SECRET = "roadkit-portal-dev-secret"
DEMO_USER = ("demo", "demo-password")
SECOND_USER = ("alice", "alice-password")


def iam_test_config(
    config_overrides: Mapping[str, Any] | None = None,
    *,
    public_url: str = "http://127.0.0.1:8180",
    app_url: str | None = None,
    portal_url: str | None = None,
) -> IamConfig:
    """The example configuration with ``testing = true``, client URLs moved to ``app_url``/``portal_url``.

    ``app_url`` is the static app's origin (``http://127.0.0.1:PORT``): the public client then
    accepts ``{app_url}/`` and ``{app_url}/silent-check.html`` and allows CORS from it.
    ``portal_url`` is the backend's base URL: the portal client then redirects to
    ``{portal_url}/login/callback``. ``config_overrides`` is deep-merged last (a list replaces a list).
    """
    data = example_mapping()
    data["public_url"] = public_url
    data["testing"] = True
    for client in data["clients"]:
        if client["client_id"] == PUBLIC_CLIENT_ID and app_url:
            origin = app_url.rstrip("/")
            client["redirect_uris"] = [f"{origin}/", f"{origin}/silent-check.html"]
            client["web_origins"] = [origin]
        if client["client_id"] == PORTAL_CLIENT_ID and portal_url:
            client["redirect_uris"] = [f"{portal_url.rstrip('/')}/login/callback"]
            if app_url:
                client["post_logout_redirect_uris"] = ["+", f"{app_url.rstrip('/')}/login", f"{app_url.rstrip('/')}/"]
    if config_overrides:
        data = deep_merge(data, config_overrides)
    return config_from_mapping(data, source="run_iam")


@contextmanager
def run_iam(
    config_overrides: Mapping[str, Any] | None = None,
    *,
    app_url: str | None = None,
    portal_url: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Iterator[str]:
    """Run the IAM on ``host:port`` (0 = free port) in a thread; yields its base URL (no trailing slash).

    See :func:`iam_test_config` for ``config_overrides``, ``app_url`` and ``portal_url``.
    """
    sock = bound_socket(host, port)
    base_url = f"http://{host}:{sock.getsockname()[1]}"
    config = iam_test_config(config_overrides, public_url=base_url, app_url=app_url, portal_url=portal_url)
    server = ServerThread([(create_app(config), sock)])
    server.start(f"{base_url}/realms/{config.realm}/.well-known/openid-configuration")
    try:
        yield base_url
    finally:
        server.stop()


def _post_json(url: str, body: Mapping[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(dict(body)).encode(), headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.loads(response.read()))


def advance_clock(iam_url: str, seconds: float) -> dict[str, Any]:
    """Move a running test IAM's clock forward by ``seconds``."""
    return _post_json(f"{iam_url}/_testing/clock", {"advance": seconds})


def end_sessions(iam_url: str, username: str | None = None) -> int:
    """End the SSO sessions of ``username`` (every session when None); returns how many ended."""
    body = {"username": username} if username else {}
    return int(_post_json(f"{iam_url}/_testing/sessions/end", body)["ended"])


def rotate_keys(iam_url: str, *, keep_previous: bool = True) -> str:
    """Switch the IAM to a new signing key; returns the new ``kid``."""
    return str(_post_json(f"{iam_url}/_testing/keys/rotate", {"keep_previous": keep_previous})["kid"])
