"""Browser-like OAuth steps against the development IAM, with httpx (no redirects followed)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx

REALM = "roadkit"
APP_CLIENT = "roadkit-app"


def pkce_pair() -> tuple[str, str]:
    """A fresh (verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def oidc_url(iam_url: str, endpoint: str) -> str:
    """``{iam}/realms/roadkit/protocol/openid-connect/{endpoint}``."""
    return f"{iam_url}/realms/{REALM}/protocol/openid-connect/{endpoint}"


def authorize(http: httpx.Client, iam_url: str, **params: str) -> httpx.Response:
    """GET the authorization endpoint with ``params``."""
    return http.get(oidc_url(iam_url, "auth"), params=params)


def submit_login(http: httpx.Client, form_page: httpx.Response, username: str, password: str) -> httpx.Response:
    """Fill and post the IAM's login form (found by Keycloak's ids)."""
    match = re.search(r'<form id="kc-form-login" action="([^"]+)"', form_page.text)
    assert match, "login form not found"
    action = urljoin(str(form_page.url), unescape(match.group(1)))
    return http.post(action, data={"username": username, "password": password})


def location_params(response: httpx.Response) -> dict[str, str]:
    """Query (or fragment) parameters of a redirect's Location."""
    assert response.status_code == 302, (response.status_code, response.text[:300])
    parts = urlsplit(response.headers["location"])
    return {k: v[0] for k, v in parse_qs(parts.query or parts.fragment).items()}


def login_for_code(
    http: httpx.Client,
    iam_url: str,
    redirect_uri: str,
    *,
    username: str = "demo",
    password: str = "demo-password",
    client_id: str = APP_CLIENT,
    scope: str = "openid",
    **extra: str,
) -> tuple[dict[str, str], str]:
    """Run the authorization request + login form; returns (callback params, verifier)."""
    verifier, challenge = pkce_pair()
    params = {
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "scope": scope,
        "state": secrets.token_hex(16),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **extra,
    }
    first = authorize(http, iam_url, **params)
    if first.status_code == 200:
        first = submit_login(http, first, username, password)
    result = location_params(first)
    assert result.get("state") == params["state"]
    return result, verifier


def exchange(
    http: httpx.Client, iam_url: str, code: str, verifier: str | None, redirect_uri: str, client_id: str = APP_CLIENT, **extra: str
) -> httpx.Response:
    """POST the token endpoint with an authorization code."""
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "client_id": client_id, **extra}
    if verifier is not None:
        data["code_verifier"] = verifier
    return http.post(oidc_url(iam_url, "token"), data=data)


def refresh(http: httpx.Client, iam_url: str, refresh_token: str, client_id: str = APP_CLIENT) -> httpx.Response:
    """POST the token endpoint with a refresh token."""
    return http.post(
        oidc_url(iam_url, "token"), data={"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    )


def tokens_for(http: httpx.Client, iam_url: str, redirect_uri: str, **login: Any) -> dict[str, Any]:
    """Log in and exchange the code: the token endpoint's JSON."""
    params, verifier = login_for_code(http, iam_url, redirect_uri, **login)
    response = exchange(http, iam_url, params["code"], verifier, redirect_uri)
    assert response.status_code == 200, response.text
    return dict(response.json())
