"""Requests to the IAM (discovery, signing keys) go through the environment's proxy, as any outbound HTTP.

The administrator's (admin API tokens, in a real ``roadkit serve``) and a service's (``[access.jwt]``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.core.conftest import free_port, write
from tests.engine_servers import PROXY_VARIABLES, LoopbackProxy, without_proxies

from .apps_support import RunningIam, start_iam
from .test_access_with_deviam import ROUTE, _client

ADMIN_CLIENT = "roadkit-admin-cli"


def access_token(iam: RunningIam, audience: str, roles: list[str]) -> str:
    """An access token signed with the IAM's own key, as its token endpoint issues them."""
    now = int(time.time())
    claims = {"iss": iam.issuer, "aud": audience, "azp": audience, "sub": "alice", "typ": "Bearer", "iat": now, "exp": now + 600}
    return str(iam.iam.keys.sign({**claims, "realm_access": {"roles": roles}}))


def iam_requests(iam: RunningIam) -> list[str]:
    """What a first token check asks of the IAM: discovery, then the keys."""
    return [f"{iam.issuer}/.well-known/openid-configuration", f"{iam.issuer}/protocol/openid-connect/certs"]


async def _serve(server_file: Path, admin: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``roadkit serve`` with ``env`` as its whole proxy environment, once its admin API answers."""
    environment = {name: value for name, value in os.environ.items() if name not in PROXY_VARIABLES} | env
    with (server_file.parent / "serve.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "roadkit.cli", "serve", str(server_file)], stdout=log, stderr=log, env=environment
        )
    async with httpx.AsyncClient(trust_env=False) as client:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if (await client.get(f"{admin}/health")).status_code == 200:
                    return process
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    process.kill()
    process.wait()
    raise AssertionError(f"the administrator did not start: {(server_file.parent / 'serve.log').read_text()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


async def test_the_admin_api_fetches_discovery_and_keys_through_http_proxy_unless_no_proxy(tmp_path: Path) -> None:
    iam, iam_server = start_iam()
    proxy = await LoopbackProxy().start()
    try:
        admin_token = access_token(iam, ADMIN_CLIENT, ["roadkit-admin"])
        port = free_port()
        server_file = write(
            tmp_path / "server.toml",
            f"""
[administrator.listener]
host = "127.0.0.1"
port = {port}
[administrator.auth.jwt]
issuer = "{iam.issuer}"
role = "roadkit-admin"
audiences = ["{ADMIN_CLIENT}"]
""",
        )
        admin = f"http://127.0.0.1:{port}/admin/1.0.0"
        # 127.0.0.1 is not bypassed by itself: only NO_PROXY keeps a loopback IAM away from the proxy.
        for env, expected in (
            ({"HTTP_PROXY": proxy.url}, iam_requests(iam)),
            ({"HTTP_PROXY": proxy.url, "NO_PROXY": "localhost,127.0.0.1"}, []),
        ):
            proxy.seen.clear()
            process = await _serve(server_file, admin, env)
            try:
                async with httpx.AsyncClient(trust_env=False, base_url=admin) as client:
                    accepted = await client.delete("/services/nope", headers={"authorization": f"Bearer {admin_token}"})
                    assert accepted.status_code == 404, (env, accepted.text)  # past authentication: the service is unknown
                    assert (await client.delete("/services/nope")).status_code == 401
            finally:
                _stop(process)
            assert proxy.seen == expected, env
    finally:
        await proxy.stop()
        iam_server.stop()


async def test_a_routing_api_fetches_discovery_and_keys_through_http_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_proxies(monkeypatch)
    iam, iam_server = start_iam()
    proxy = await LoopbackProxy().start()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        token = access_token(iam, "roadkit-app", [])

        def route() -> int:
            with _client(tmp_path, f'\n[access]\n[access.jwt]\nissuer = "{iam.issuer}"\n') as client:
                assert client.get(ROUTE).status_code == 401
                return client.get(ROUTE, headers={"Authorization": f"Bearer {token}"}).status_code

        # The service checks the token in a thread of its own while the proxy answers on this loop.
        assert await asyncio.to_thread(route) == 200
        assert proxy.seen == iam_requests(iam)
    finally:
        await proxy.stop()
        iam_server.stop()
