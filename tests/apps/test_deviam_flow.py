"""The development IAM's authorization code flow, with Keycloak's parameters and error strings."""

from __future__ import annotations

import base64
import json

import httpx

from .apps_support import APP_URL, RunningIam
from .oidc_flow import (
    APP_CLIENT,
    authorize,
    exchange,
    location_params,
    login_for_code,
    oidc_url,
    pkce_pair,
    submit_login,
    tokens_for,
)

REDIRECT = f"{APP_URL}/"


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _auth_params(**extra: str) -> dict[str, str]:
    _, challenge = pkce_pair()
    return {
        "client_id": APP_CLIENT,
        "redirect_uri": REDIRECT,
        "response_type": "code",
        "scope": "openid",
        "state": "st-123",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **extra,
    }


def test_discovery_serves_keycloak_paths(iam: RunningIam, http: httpx.Client) -> None:
    doc = http.get(f"{iam.url}/realms/roadkit/.well-known/openid-configuration").json()
    assert doc["issuer"] == iam.issuer
    for key, path in [
        ("authorization_endpoint", "auth"),
        ("token_endpoint", "token"),
        ("jwks_uri", "certs"),
        ("userinfo_endpoint", "userinfo"),
        ("end_session_endpoint", "logout"),
        ("revocation_endpoint", "revoke"),
    ]:
        assert doc[key] == f"{iam.issuer}/protocol/openid-connect/{path}"
    keys = http.get(doc["jwks_uri"]).json()["keys"]
    assert keys and all(k["kid"] and k["alg"] == "RS256" and "d" not in k for k in keys)


def test_login_form_has_keycloak_ids_and_rejects_wrong_password(iam: RunningIam, http: httpx.Client) -> None:
    page = authorize(http, iam.url, **_auth_params())
    assert page.status_code == 200
    for marker in ('name="username"', 'id="username"', 'name="password"', 'id="password"', 'type="password"', 'id="kc-login"'):
        assert marker in page.text
    again = submit_login(http, page, "demo", "wrong")
    assert again.status_code == 200 and "Invalid username or password." in again.text


def test_success_redirect_echoes_state_with_session_state_and_iss(iam: RunningIam, http: httpx.Client) -> None:
    params, _ = login_for_code(http, iam.url, REDIRECT, state="exact-state-value")
    assert params["state"] == "exact-state-value"
    assert params["iss"] == iam.issuer and params["session_state"] and params["code"]


def test_token_response_and_access_token_claims_are_keycloak_shaped(iam: RunningIam, http: httpx.Client) -> None:
    body = tokens_for(http, iam.url, REDIRECT)
    assert body["token_type"] == "Bearer" and body["expires_in"] == 300 and body["refresh_expires_in"] == 1800
    for key in ("access_token", "refresh_token", "id_token", "not-before-policy", "session_state", "scope"):
        assert key in body
    assert body["scope"].split()[0] == "openid"
    claims = _claims(body["access_token"])
    assert claims["iss"] == iam.issuer and claims["typ"] == "Bearer" and claims["azp"] == APP_CLIENT
    assert claims["aud"] == "account" and claims["sid"] == body["session_state"]
    assert claims["preferred_username"] == "demo" and claims["name"] == "Demo User"
    assert claims["email"] == "demo@example.org" and claims["email_verified"] is True
    assert claims["exp"] - claims["iat"] == 300 and "realm_access" in claims and claims["auth_time"]
    id_claims = _claims(body["id_token"])
    assert id_claims["aud"] == APP_CLIENT and id_claims["typ"] == "ID"


def test_unknown_redirect_uri_gets_error_page_not_redirect(iam: RunningIam, http: httpx.Client) -> None:
    response = authorize(http, iam.url, **_auth_params(redirect_uri=f"{APP_URL}/other"))
    assert response.status_code == 400 and "Invalid parameter: redirect_uri" in response.text
    assert "location" not in response.headers


def test_missing_code_challenge_method_redirects_with_keycloak_error(iam: RunningIam, http: httpx.Client) -> None:
    params = _auth_params()
    del params["code_challenge_method"]
    result = location_params(authorize(http, iam.url, **params))
    assert result == {
        "error": "invalid_request",
        "error_description": "Missing parameter: code_challenge_method",
        "state": "st-123",
        "iss": iam.issuer,
    }


def test_code_is_single_use(iam: RunningIam, http: httpx.Client) -> None:
    params, verifier = login_for_code(http, iam.url, REDIRECT)
    assert exchange(http, iam.url, params["code"], verifier, REDIRECT).status_code == 200
    again = exchange(http, iam.url, params["code"], verifier, REDIRECT)
    assert again.status_code == 400
    assert again.json() == {"error": "invalid_grant", "error_description": "Code not valid"}


def test_code_expires_after_60_seconds(iam: RunningIam, http: httpx.Client) -> None:
    params, verifier = login_for_code(http, iam.url, REDIRECT)
    http.post(f"{iam.url}/_testing/clock", json={"advance": 61})
    response = exchange(http, iam.url, params["code"], verifier, REDIRECT)
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_grant", "error_description": "Code is expired"}


def test_code_still_valid_just_before_60_seconds(iam: RunningIam, http: httpx.Client) -> None:
    params, verifier = login_for_code(http, iam.url, REDIRECT)
    http.post(f"{iam.url}/_testing/clock", json={"advance": 55})
    assert exchange(http, iam.url, params["code"], verifier, REDIRECT).status_code == 200


def test_wrong_redirect_uri_at_token_endpoint(iam: RunningIam, http: httpx.Client) -> None:
    params, verifier = login_for_code(http, iam.url, REDIRECT)
    response = exchange(http, iam.url, params["code"], verifier, f"{APP_URL}/silent-check.html")
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_grant", "error_description": "Incorrect redirect_uri"}


def test_pkce_mismatch_is_refused_with_keycloak_message(iam: RunningIam, http: httpx.Client) -> None:
    params, _ = login_for_code(http, iam.url, REDIRECT)
    other_verifier, _ = pkce_pair()
    response = exchange(http, iam.url, params["code"], other_verifier, REDIRECT)
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_grant", "error_description": "PKCE verification failed: Code mismatch"}


def test_missing_pkce_verifier_is_refused(iam: RunningIam, http: httpx.Client) -> None:
    params, _ = login_for_code(http, iam.url, REDIRECT)
    response = exchange(http, iam.url, params["code"], None, REDIRECT)
    assert response.json() == {"error": "invalid_grant", "error_description": "PKCE code verifier not specified"}


def test_prompt_none_without_session_answers_login_required(iam: RunningIam, http: httpx.Client) -> None:
    result = location_params(authorize(http, iam.url, **_auth_params(prompt="none")))
    assert result["error"] == "login_required" and result["state"] == "st-123" and result["iss"] == iam.issuer
    assert "code" not in result


def test_prompt_none_with_session_returns_a_code(iam: RunningIam, http: httpx.Client) -> None:
    login_for_code(http, iam.url, REDIRECT)
    result = location_params(authorize(http, iam.url, **_auth_params(prompt="none", redirect_uri=f"{APP_URL}/silent-check.html")))
    assert result["code"] and result["state"] == "st-123"


def test_prompt_none_after_session_ended_answers_login_required(iam: RunningIam, http: httpx.Client) -> None:
    login_for_code(http, iam.url, REDIRECT)
    assert http.post(f"{iam.url}/_testing/sessions/end", json={"username": "demo"}).json() == {"ended": 1}
    result = location_params(authorize(http, iam.url, **_auth_params(prompt="none")))
    assert result["error"] == "login_required"


def test_response_mode_fragment_puts_parameters_in_fragment(iam: RunningIam, http: httpx.Client) -> None:
    login_for_code(http, iam.url, REDIRECT)
    response = authorize(http, iam.url, **_auth_params(response_mode="fragment"))
    assert "#" in response.headers["location"] and "?" not in response.headers["location"]


def test_confidential_client_with_wrong_secret_gets_401(iam: RunningIam, http: httpx.Client) -> None:
    response = http.post(
        oidc_url(iam.url, "token"), data={"grant_type": "authorization_code", "code": "x"}, auth=("roadkit-portal", "wrong")
    )
    assert response.status_code == 401
    assert response.json() == {"error": "invalid_client", "error_description": "Invalid client or Invalid client credentials"}


def test_missing_code_and_unknown_grant(iam: RunningIam, http: httpx.Client) -> None:
    url = oidc_url(iam.url, "token")
    missing = http.post(url, data={"grant_type": "authorization_code", "client_id": APP_CLIENT})
    assert missing.json() == {"error": "invalid_request", "error_description": "Missing parameter: code"}
    unknown = http.post(url, data={"grant_type": "password", "client_id": APP_CLIENT})
    assert unknown.json()["error"] == "unsupported_grant_type"


def test_token_endpoint_cors_only_for_web_origins(iam: RunningIam, http: httpx.Client) -> None:
    params, verifier = login_for_code(http, iam.url, REDIRECT)
    ok = http.post(
        oidc_url(iam.url, "token"),
        headers={"Origin": APP_URL},
        data={
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": REDIRECT,
            "client_id": APP_CLIENT,
            "code_verifier": verifier,
        },
    )
    assert ok.headers["access-control-allow-origin"] == APP_URL and ok.headers["cache-control"] == "no-store"
    other = http.post(
        oidc_url(iam.url, "token"),
        headers={"Origin": "http://evil.test"},
        data={"grant_type": "refresh_token", "refresh_token": "x", "client_id": APP_CLIENT},
    )
    assert "access-control-allow-origin" not in other.headers
    preflight = http.options(oidc_url(iam.url, "token"), headers={"Origin": APP_URL, "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == APP_URL


def test_testing_controls_are_404_unless_enabled() -> None:
    from .apps_support import start_iam

    running, server = start_iam({"testing": False})
    try:
        response = httpx.post(f"{running.url}/_testing/clock", json={"advance": 5})
        assert response.status_code == 404
    finally:
        server.stop()
