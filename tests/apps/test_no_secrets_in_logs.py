"""No token, code, secret or password reaches the logs during full local and remote flows."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from roadkit_support.serving import ACCESS_LOG_FORMAT

from .apps_support import Stack
from .oidc_flow import exchange, login_for_code, refresh, submit_login


def test_access_log_format_has_no_query_string() -> None:
    assert "%(U)s" in ACCESS_LOG_FORMAT
    for atom in ("%(r)s", "%(R)s", "%(q)s", "%(Q)s", "%({"):
        assert atom not in ACCESS_LOG_FORMAT


def test_full_flows_leave_no_secret_in_logs(stack: Stack, http: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secrets: list[str] = ["roadkit-portal-dev-secret", "demo-password"]
    # Local mode: code, PKCE verifier, tokens; a bad token; a refresh.
    params, verifier = login_for_code(http, stack.iam.url, f"{stack.app_url}/")
    tokens = exchange(http, stack.iam.url, params["code"], verifier, f"{stack.app_url}/").json()
    secrets += [params["code"], verifier, tokens["access_token"], tokens["refresh_token"], tokens["id_token"]]
    httpx.get(f"{stack.backend_url}/me", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    httpx.get(f"{stack.backend_url}/me", headers={"Authorization": f"Bearer {tokens['access_token']}x"})
    refreshed = refresh(http, stack.iam.url, tokens["refresh_token"]).json()
    secrets += [refreshed["access_token"], refreshed["refresh_token"]]
    # Remote mode: portal login with a failed attempt, server-side refresh, logout.
    with httpx.Client() as browser:
        start = browser.get(f"{stack.backend_url}/login", params={"app": "roadkit"})
        form = browser.get(start.headers["location"])
        submit_login(browser, form, "demo", "not-the-password")
        callback = submit_login(browser, form, "demo", "demo-password").headers["location"]
        secrets += [v[0] for k, v in parse_qs(urlsplit(callback).query).items() if k in ("code", "state")]
        browser.get(callback)
        secrets += [browser.cookies["roadkit_session"]]
        stack.advance(400)
        assert browser.get(f"{stack.backend_url}/me").status_code == 200
        browser.get(f"{stack.backend_url}/login/callback", params={"code": "c0de-leak-check", "state": "s"})
        csrf = browser.get(f"{stack.backend_url}/csrf-token").json()["csrfToken"]
        assert browser.post(f"{stack.backend_url}/logout", params={"app": "roadkit"}, headers={"X-CSRF-Token": csrf}).status_code == 200
        secrets.append(csrf)
    secrets.append("c0de-leak-check")
    # The test's own HTTP client (httpx/httpcore) logs the URLs it requests; only the servers count.
    server_records = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert server_records, "expected some log records from the servers"
    text = "\n".join(f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in server_records)
    for value in secrets:
        assert value not in text, f"a secret value reached the logs: {value[:12]}..."
    assert "not-the-password" not in text
