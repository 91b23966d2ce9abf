"""Configuration files and the two command lines (``roadkit-deviam``, ``roadkit-client``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from roadkit_client import ConfigError as ClientConfigError
from roadkit_client import load_config as load_client_config
from roadkit_client.testing import free_port
from roadkit_deviam import ConfigError as IamConfigError
from roadkit_deviam import load_config as load_iam_config

ROOT = Path(__file__).resolve().parents[2]


def test_example_configs_load_with_documented_values() -> None:
    iam = load_iam_config(ROOT / "apps/deviam/example.toml")
    assert iam.issuer == "http://127.0.0.1:8180/realms/roadkit" and iam.testing is False
    demo = iam.user_by_name("demo")
    assert demo is not None and demo.name == "Demo User" and demo.email == "demo@example.org"
    app = iam.client("roadkit-app")
    assert app is not None and app.public and app.pkce_method == "S256"
    assert app.redirect_uris == ("http://127.0.0.1:8182/", "http://127.0.0.1:8182/silent-check.html")
    portal = iam.client("roadkit-portal")
    assert portal is not None and not portal.public and portal.redirect_uris == ("http://127.0.0.1:8181/login/callback",)
    assert iam.lifetimes.access_token == 300 and iam.lifetimes.sso_session_idle == 1800
    client = load_client_config(ROOT / "apps/client/example.toml")
    assert client.backend.port == 8181 and client.app.port == 8182 and client.iam.issuer == iam.issuer


def test_config_errors_name_the_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "iam.toml"
    bad.write_text('realm = "r"\n[lifetimes]\naccess_token = "long"\n')
    with pytest.raises(IamConfigError, match=r"iam\.toml.*lifetimes\.access_token"):
        load_iam_config(bad)
    bad_client = tmp_path / "client.toml"
    bad_client.write_text('mode = "sideways"\n[portal]\nclient_secret = "s"\n[portal.apps.x]\nlogin = "http://a/"\n')
    with pytest.raises(ClientConfigError, match=r"client\.toml: mode: expected 'local' or 'remote'"):
        load_client_config(bad_client)
    typo = tmp_path / "typo.toml"
    typo.write_text("[backend]\nprot = 1\n")
    with pytest.raises(ClientConfigError, match="prot"):
        load_client_config(typo)
    for remote in ("portal.example/api", "https://portal.example/api?x=1"):
        bad_remote = tmp_path / "remote.toml"
        bad_remote.write_text(
            f'[backend]\nremote_public_url = "{remote}"\n[portal]\nclient_secret = "s"\n[portal.apps.x]\nlogin = "http://a/"\n'
        )
        with pytest.raises(ClientConfigError, match=r"remote\.toml: backend\.remote_public_url: expected an http\(s\) URL without query"):
            load_client_config(bad_remote)


def _wait(url: str, proc: subprocess.Popen[bytes]) -> httpx.Response:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "exited"
        try:
            return httpx.get(url)
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not answer")


def test_cli_serves_iam_and_client(tmp_path: Path) -> None:
    iam_port, backend_port, app_port = free_port(), free_port(), free_port()
    iam_url = f"http://127.0.0.1:{iam_port}"
    config = tmp_path / "client.toml"
    config.write_text(f"""
[iam]
url = "{iam_url}"
[backend]
port = {backend_port}
public_url = "http://127.0.0.1:{backend_port}"
database = "data/client.sqlite3"
[portal]
client_secret = "roadkit-portal-dev-secret"
[portal.apps.roadkit]
login = "http://127.0.0.1:{app_port}/login"
[app]
port = {app_port}
public_url = "http://127.0.0.1:{app_port}"
""")
    iam = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "roadkit_deviam",
            "serve",
            "--config",
            str(ROOT / "apps/deviam/example.toml"),
            "--port",
            str(iam_port),
            "--public-url",
            iam_url,
        ],
        stderr=subprocess.PIPE,
    )
    client = subprocess.Popen([sys.executable, "-m", "roadkit_client", "serve", "--config", str(config)], stderr=subprocess.PIPE)
    try:
        discovery = _wait(f"{iam_url}/realms/roadkit/.well-known/openid-configuration", iam).json()
        assert discovery["issuer"] == f"{iam_url}/realms/roadkit"
        assert httpx.post(f"{iam_url}/_testing/clock", json={"advance": 1}).status_code == 404
        assert _wait(f"http://127.0.0.1:{backend_port}/health", client).json() == {"status": "ok"}
        settings = _wait(f"http://127.0.0.1:{app_port}/settings.json", client).json()
        assert settings["IamUrl"] == iam_url
        assert httpx.get(f"http://127.0.0.1:{backend_port}/me").status_code == 401
        assert (tmp_path / "data/client.sqlite3").exists()
    finally:
        for proc in (client, iam):
            proc.terminate()
            proc.wait(10)
            if proc.stderr is not None:  # unclosed, the pipe is a ResourceWarning (an error in the tests)
                proc.stderr.close()


def test_cli_reports_config_errors(tmp_path: Path) -> None:
    missing = subprocess.run(
        [sys.executable, "-m", "roadkit_client", "serve", "--config", str(tmp_path / "none.toml")], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "cannot read" in missing.stderr
