"""The admin API accepts access tokens of the development IAM by their role and audience, with roadkit.auth (shared with the backend)."""

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
from .oidc_flow import exchange, login_for_code, tokens_for

#: The admin API's own client of the realm (a command-line tool's, with a loopback redirect).
ADMIN_CLIENT = "roadkit-admin-cli"
ADMIN_REDIRECT = "http://127.0.0.1:8400/"


async def test_admin_writes_need_an_iam_token_with_the_admin_role(tmp_path: Path) -> None:
    mapping = example_mapping()
    users = mapping["users"]
    for user in users:
        if user["username"] == "alice":
            user["roles"] = [*user["roles"], "roadkit-admin"]
    clients = mapping["clients"]
    for client in clients:
        if client["client_id"] == "roadkit-app":
            client["redirect_uris"], client["web_origins"] = [f"{APP_URL}/"], [APP_URL]
    clients.append({"client_id": ADMIN_CLIENT, "public": True, "pkce_method": "S256", "redirect_uris": [ADMIN_REDIRECT]})
    iam, server = start_iam({"users": users, "clients": clients})

    def admin_cli_token(username: str, password: str) -> str:
        with httpx.Client() as http:  # one browser each: the IAM's single sign-on would log the second in as the first
            params, verifier = login_for_code(http, iam.url, ADMIN_REDIRECT, username=username, password=password, client_id=ADMIN_CLIENT)
            response = exchange(http, iam.url, params["code"], verifier, ADMIN_REDIRECT, client_id=ADMIN_CLIENT)
            assert response.status_code == 200, response.text
            return str(response.json()["access_token"])

    try:
        admin_token = admin_cli_token("alice", "alice-password")
        user_token = admin_cli_token("demo", "demo-password")
        with httpx.Client() as http:  # what the browser app holds for the same admin user
            app_token = tokens_for(http, iam.url, f"{APP_URL}/", username="alice", password="alice-password")["access_token"]
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
audiences = ["{ADMIN_CLIENT}"]
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
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8079/admin/1.0.0") as client:
            accepted = await client.delete("/services/nope", headers={"authorization": f"Bearer {admin_token}"})
            assert accepted.status_code == 404  # past authentication: the service is unknown
            forbidden = await client.delete("/services/nope", headers={"authorization": f"Bearer {user_token}"})
            assert forbidden.status_code == 403 and "roadkit-admin" in forbidden.json()["error"]["message"]
            # The browser app's token of the same admin user was issued to another client: not an admin token.
            app = await client.delete("/services/nope", headers={"authorization": f"Bearer {app_token}"})
            assert app.status_code == 401 and 'error_description="Invalid token audience"' in app.headers["www-authenticate"]
            # The listener is not on loopback: reads need the token too.
            assert (await client.get("/services")).status_code == 401
            assert (await client.get("/services", headers={"authorization": f"Bearer {admin_token}"})).status_code == 200
            admin.authenticator.now = lambda: time.time() + 3600  # an hour later, the access token has expired
            await admin.authenticator.close()
            expired = await client.delete("/services/nope", headers={"authorization": f"Bearer {admin_token}"})
            assert expired.status_code == 401 and 'error_description="Token expired"' in expired.headers["www-authenticate"]
    finally:
        await admin.authenticator.close()
        server.stop()
