"""The admin API accepts access tokens of the development IAM by their role, with roadkit.auth (shared with the backend)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from roadkit.apis.admin import create_admin_app
from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from roadkit_deviam.config import example_mapping
from tests.core.conftest import make_service, write

from .apps_support import APP_URL, start_iam
from .oidc_flow import tokens_for


async def test_admin_writes_need_an_iam_token_with_the_admin_role(tmp_path: Path) -> None:
    users = example_mapping()["users"]
    for user in users:
        if user["username"] == "alice":
            user["roles"] = [*user["roles"], "roadkit-admin"]
    iam, server = start_iam({"users": users})
    try:
        with httpx.Client() as http:  # one browser each: the IAM's single sign-on would log the second in as the first
            admin_token = tokens_for(http, iam.url, f"{APP_URL}/", username="alice", password="alice-password")["access_token"]
        with httpx.Client() as http:
            user_token = tokens_for(http, iam.url, f"{APP_URL}/", username="demo", password="demo-password")["access_token"]
        make_service(tmp_path, port=1)
        path = write(
            tmp_path / "server.toml",
            f"""
[administrator.listener]
host = "0.0.0.0"
port = 1
[administrator.auth.jwt]
issuer = "{iam.issuer}"
role = "roadkit-admin"
[[services]]
id = "main"
configuration = "service.toml"
mode = "same-process"
""",
        )
        admin = administrator(load_server(path), Plugins.create(load_entry_points=False))
    except BaseException:
        server.stop()
        raise
    try:
        transport = httpx.ASGITransport(create_admin_app(admin), client=("192.0.2.7", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://admin/admin/1.0.0") as client:
            accepted = await client.delete("/services/nope", headers={"authorization": f"Bearer {admin_token}"})
            assert accepted.status_code == 404  # past authentication: the service is unknown
            forbidden = await client.delete("/services/nope", headers={"authorization": f"Bearer {user_token}"})
            assert forbidden.status_code == 403 and "roadkit-admin" in forbidden.json()["error"]["message"]
            admin.authenticator.now = lambda: time.time() + 3600  # an hour later, the access token has expired
            await admin.authenticator.close()
            expired = await client.delete("/services/nope", headers={"authorization": f"Bearer {admin_token}"})
            assert expired.status_code == 401 and 'error_description="Token expired"' in expired.headers["www-authenticate"]
    finally:
        await admin.authenticator.close()
        server.stop()
