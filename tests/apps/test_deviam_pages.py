"""The development IAM's pages: what they show of a request is escaped, and every answer has the
security headers of the other roadkit apps."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import httpx
import pytest

from roadkit_deviam.http import PAGE_STYLE, csp_hash

from .apps_support import APP_URL, RunningIam, start_iam
from .oidc_flow import authorize, oidc_url, pkce_pair, submit_login

PAYLOAD = "\"'><script>alert(1)</script><img src=x onerror=alert(2)>"
APP_CLIENT = "roadkit-app"
WILD_CLIENT = {
    "client_id": "wild",
    "public": True,
    "pkce_method": "S256",
    "redirect_uris": [f"{APP_URL}/*"],
    "web_origins": ["+"],
    "post_logout_redirect_uris": ["+"],
}
HOSTILE_USER = {"username": f"eve{PAYLOAD}", "password": "eve-password", "email": f"eve{PAYLOAD}@example.org", "first_name": "Eve"}


@pytest.fixture
def hostile_iam() -> Iterator[RunningIam]:
    """The test IAM plus a client with a wildcard redirect URI and a user whose name is a payload."""
    from roadkit_deviam.testing import iam_test_config

    base = iam_test_config(app_url=APP_URL)
    clients = [{"client_id": c.client_id, **_client_fields(c)} for c in base.clients] + [WILD_CLIENT]
    users = [
        {"username": u.username, "password": u.password, "email": u.email, "first_name": u.first_name, "last_name": u.last_name}
        for u in base.users
    ]
    running, server = start_iam({"clients": clients, "users": [*users, HOSTILE_USER]})
    try:
        yield running
    finally:
        server.stop()


def _client_fields(client: object) -> dict[str, object]:
    names = ("public", "secret", "pkce_method", "redirect_uris", "web_origins", "post_logout_redirect_uris")
    return {name: getattr(client, name) for name in names if getattr(client, name, None) not in (None, "")}


def assert_escaped(page: httpx.Response, shown: str = PAYLOAD) -> None:
    """The payload never appears as markup; when the page shows it, it is there escaped."""
    assert "<script>alert" not in page.text and "<img src=x" not in page.text, page.text
    if shown:
        assert html.escape(shown) in page.text, page.text


def auth_params(**extra: str) -> dict[str, str]:
    _, challenge = pkce_pair()
    params = {
        "client_id": APP_CLIENT,
        "redirect_uri": f"{APP_URL}/",
        "response_type": "code",
        "scope": "openid",
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    return {**params, **extra}


def test_the_login_form_escapes_the_login_hint_and_the_username(hostile_iam: RunningIam, http: httpx.Client) -> None:
    form = authorize(http, hostile_iam.url, **auth_params(login_hint=PAYLOAD))
    assert form.status_code == 200 and 'id="kc-form-login"' in form.text
    assert_escaped(form)
    retry = submit_login(http, form, PAYLOAD, "wrong")
    assert retry.status_code == 200 and "Invalid username or password." in retry.text
    assert_escaped(retry)


def test_error_pages_do_not_echo_client_id_or_redirect_uri(hostile_iam: RunningIam, http: httpx.Client) -> None:
    unknown_client = authorize(http, hostile_iam.url, **auth_params(client_id=PAYLOAD))
    assert unknown_client.status_code == 400 and "Client not found." in unknown_client.text
    assert_escaped(unknown_client, shown="")
    bad_redirect = authorize(http, hostile_iam.url, **auth_params(redirect_uri=f"http://evil.test/{PAYLOAD}"))
    assert bad_redirect.status_code == 400 and "Invalid parameter: redirect_uri" in bad_redirect.text
    assert_escaped(bad_redirect, shown="")
    logout = http.get(oidc_url(hostile_iam.url, "logout"), params={"client_id": PAYLOAD, "post_logout_redirect_uri": PAYLOAD})
    assert logout.status_code == 400
    assert_escaped(logout, shown="")


def test_form_post_escapes_state_error_text_and_redirect_uri(hostile_iam: RunningIam, http: httpx.Client) -> None:
    # prompt=none without a session: login_required goes back by an auto-posted form with the state.
    redirect_uri = f"{APP_URL}/{PAYLOAD}"
    params = auth_params(client_id="wild", redirect_uri=redirect_uri, response_mode="form_post", prompt="none", state=PAYLOAD)
    answer = authorize(http, hostile_iam.url, **params)
    assert answer.status_code == 200 and 'value="login_required"' in answer.text
    assert_escaped(answer)
    assert f'action="{html.escape(redirect_uri)}"' in answer.text
    # An unknown scope's error text ("Invalid scopes: ...") is shown in the form too.
    scope = authorize(http, hostile_iam.url, **{**params, "prompt": "", "scope": f"openid {PAYLOAD}"})
    assert scope.status_code == 200 and 'value="invalid_scope"' in scope.text
    assert_escaped(scope, shown=f"Invalid scopes: openid {PAYLOAD}")
    # Its only script runs under a policy that allows that script and no other.
    script = re.search(r"<script>(.*?)</script>", answer.text, re.S)
    assert script is not None and csp_hash(script.group(1)) in answer.headers["content-security-policy"]
    assert "unsafe-inline" not in answer.headers["content-security-policy"]


def test_the_account_page_escapes_the_user(hostile_iam: RunningIam, http: httpx.Client) -> None:
    form = authorize(http, hostile_iam.url, **auth_params())
    assert submit_login(http, form, HOSTILE_USER["username"], HOSTILE_USER["password"]).status_code == 302
    account = http.get(f"{hostile_iam.issuer}/account")
    assert account.status_code == 200 and "Signed in as eve" in account.text
    assert_escaped(account, shown=f"Signed in as {HOSTILE_USER['username']} ({HOSTILE_USER['email']})")


def test_every_answer_has_the_security_headers(hostile_iam: RunningIam, http: httpx.Client) -> None:
    login = authorize(http, hostile_iam.url, **auth_params())
    answers = {
        "login form": login,
        "error page": authorize(http, hostile_iam.url, **auth_params(client_id="nobody")),
        "logout confirmation": http.get(oidc_url(hostile_iam.url, "logout")),
        "account": http.get(f"{hostile_iam.issuer}/account"),
        "discovery": http.get(f"{hostile_iam.issuer}/.well-known/openid-configuration"),
        "token error": http.post(oidc_url(hostile_iam.url, "token"), data={"grant_type": "nope"}),
        "redirect": authorize(http, hostile_iam.url, **auth_params(prompt="none")),
        "not found": http.get(f"{hostile_iam.url}/nowhere"),
    }
    for name, answer in answers.items():
        headers = answer.headers
        assert headers["x-content-type-options"] == "nosniff", name
        assert headers["x-frame-options"] == "SAMEORIGIN", name
        assert headers["referrer-policy"] == "no-referrer", name
        policy = headers["content-security-policy"]
        assert policy.startswith("default-src 'none'") and "frame-ancestors 'self'" in policy, (name, policy)
        assert "unsafe-inline" not in policy and "script-src" not in policy, (name, policy)
    # The pages' one inline style is allowed by its hash, and is the style the page carries.
    style = re.search(r"<style>(.*?)</style>", login.text, re.S)
    assert style is not None and style.group(1) == PAGE_STYLE
    assert f"style-src {csp_hash(PAGE_STYLE)}" in login.headers["content-security-policy"]
    # keycloak-js's third-party cookie pages are framed by the application: their script only.
    step = http.get(f"{oidc_url(hostile_iam.url, '3p-cookies')}/step1.html")
    script = re.search(r"<script>(.*?)</script>", step.text, re.S)
    assert script is not None
    assert f"script-src {csp_hash(script.group(1))}" in step.headers["content-security-policy"]
    assert "frame-ancestors *" in step.headers["content-security-policy"]
    assert step.headers["x-content-type-options"] == "nosniff"
