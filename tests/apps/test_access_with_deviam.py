"""A service's routing APIs accept access tokens of the development IAM (``[access.jwt]``), as the admin API does."""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.testclient import TestClient

from roadkit.config import load_service
from roadkit.serving.app import create_app
from roadkit.testing import SERVICE, straight_plugins, write_service

from .apps_support import APP_URL, RunningIam
from .oidc_flow import tokens_for

ROUTE = "/simple/1.0.0/route?resource=straight&start=2.3,48.8&end=2.4,48.9"


def _client(tmp_path: Path, access: str) -> TestClient:
    path = write_service(tmp_path, service=SERVICE + access)
    return TestClient(create_app(load_service(path), straight_plugins(entry_points=False)))


def test_a_routing_api_accepts_an_iam_token(tmp_path: Path, iam: RunningIam) -> None:
    with httpx.Client() as http:
        token = tokens_for(http, iam.url, f"{APP_URL}/", username="demo", password="demo-password")["access_token"]
    access = f'\n[access]\n[access.jwt]\nissuer = "{iam.issuer}"\n[access.quota]\nrequests = 100\n'
    with _client(tmp_path, access) as client:
        accepted = client.get(ROUTE, headers={"Authorization": f"Bearer {token}"})
        assert accepted.status_code == 200 and accepted.json()["resource"] == "straight"
        assert accepted.headers["ratelimit"] == '"default";r=99;t=60'
        missing = client.get(ROUTE)
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == 'Bearer realm="roadkit"'
        tampered = client.get(ROUTE, headers={"Authorization": f"Bearer {token[:-4]}AAAA"})
        assert tampered.status_code == 401
        assert 'error="invalid_token"' in tampered.headers["www-authenticate"]
        document = client.get("/simple/1.0.0/openapi.json").json()
        assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        assert document["security"] == [{"bearer": []}]


def test_a_token_without_the_required_role_is_forbidden(tmp_path: Path, iam: RunningIam) -> None:
    with httpx.Client() as http:
        token = tokens_for(http, iam.url, f"{APP_URL}/", username="demo", password="demo-password")["access_token"]
    access = f'\n[access]\n[access.jwt]\nissuer = "{iam.issuer}"\nrole = "routing-partner"\n'
    with _client(tmp_path, access) as client:
        forbidden = client.get(ROUTE, headers={"Authorization": f"Bearer {token}"})
        assert forbidden.status_code == 403 and "routing-partner" in forbidden.json()["error"]["message"]
