"""Refresh rotation, session lifetimes, logout, userinfo and revocation of the development IAM."""

from __future__ import annotations

import httpx

from .apps_support import APP_URL, PORTAL_URL, RunningIam
from .oidc_flow import authorize, location_params, oidc_url, refresh, tokens_for

REDIRECT = f"{APP_URL}/"


def test_refresh_rotates_and_old_refresh_token_is_refused(iam: RunningIam, http: httpx.Client) -> None:
    first = tokens_for(http, iam.url, REDIRECT)
    second = refresh(http, iam.url, first["refresh_token"])
    assert second.status_code == 200
    body = second.json()
    assert body["refresh_token"] != first["refresh_token"] and body["access_token"] != first["access_token"]
    reused = refresh(http, iam.url, first["refresh_token"])
    assert reused.status_code == 400
    assert reused.json() == {"error": "invalid_grant", "error_description": "Maximum allowed refresh token reuse exceeded"}


def test_newest_refresh_token_keeps_working_through_several_rotations(iam: RunningIam, http: httpx.Client) -> None:
    token = tokens_for(http, iam.url, REDIRECT)["refresh_token"]
    for _ in range(3):
        response = refresh(http, iam.url, token)
        assert response.status_code == 200, response.text
        token = response.json()["refresh_token"]


def test_older_refresh_token_is_stale(iam: RunningIam, http: httpx.Client) -> None:
    first = tokens_for(http, iam.url, REDIRECT)["refresh_token"]
    second = refresh(http, iam.url, first).json()["refresh_token"]
    assert refresh(http, iam.url, second).status_code == 200
    stale = refresh(http, iam.url, first)
    assert stale.json()["error"] == "invalid_grant"
    assert stale.json()["error_description"] in ("Stale token", "Maximum allowed refresh token reuse exceeded")


def test_ended_session_refuses_refresh_with_session_not_active(iam: RunningIam, http: httpx.Client) -> None:
    tokens = tokens_for(http, iam.url, REDIRECT)
    http.post(f"{iam.url}/_testing/sessions/end", json={})
    response = refresh(http, iam.url, tokens["refresh_token"])
    assert response.json() == {"error": "invalid_grant", "error_description": "Session not active"}


def test_refresh_token_expires_with_sso_idle(iam: RunningIam, http: httpx.Client) -> None:
    tokens = tokens_for(http, iam.url, REDIRECT)
    http.post(f"{iam.url}/_testing/clock", json={"advance": 1801})
    response = refresh(http, iam.url, tokens["refresh_token"])
    assert response.status_code == 400
    assert response.json() == {"error": "invalid_grant", "error_description": "Token is not active"}


def test_clock_moves_token_times(iam: RunningIam, http: httpx.Client) -> None:
    before = tokens_for(http, iam.url, REDIRECT)
    http.post(f"{iam.url}/_testing/clock", json={"advance": 100})
    after = refresh(http, iam.url, before["refresh_token"]).json()
    import base64
    import json

    def iat(token: str) -> int:
        part = token.split(".")[1]
        return int(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))["iat"])

    assert iat(after["access_token"]) - iat(before["access_token"]) >= 100


def test_refresh_with_another_client_is_refused(iam: RunningIam, http: httpx.Client) -> None:
    tokens = tokens_for(http, iam.url, REDIRECT)
    response = http.post(
        oidc_url(iam.url, "token"),
        auth=("roadkit-portal", "roadkit-portal-dev-secret"),
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
    )
    assert response.json()["error"] == "invalid_grant"


def test_userinfo_accepts_access_token_and_refuses_garbage(iam: RunningIam, http: httpx.Client) -> None:
    tokens = tokens_for(http, iam.url, REDIRECT)
    ok = http.get(oidc_url(iam.url, "userinfo"), headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert ok.status_code == 200 and ok.json()["preferred_username"] == "demo"
    bad = http.get(oidc_url(iam.url, "userinfo"), headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401 and bad.headers["www-authenticate"].startswith('Bearer realm="roadkit"')


def test_revoking_refresh_token_ends_the_session(iam: RunningIam, http: httpx.Client) -> None:
    tokens = tokens_for(http, iam.url, REDIRECT)
    revoked = http.post(
        oidc_url(iam.url, "revoke"), data={"token": tokens["refresh_token"], "token_type_hint": "refresh_token", "client_id": "roadkit-app"}
    )
    assert revoked.status_code == 200
    assert refresh(http, iam.url, tokens["refresh_token"]).json()["error"] == "invalid_grant"
    userinfo = http.get(oidc_url(iam.url, "userinfo"), headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert userinfo.status_code == 401


def test_logout_with_id_token_hint_redirects_with_state(iam: RunningIam, http: httpx.Client) -> None:
    tokens = tokens_for(http, iam.url, REDIRECT)
    response = http.get(
        oidc_url(iam.url, "logout"),
        params={"id_token_hint": tokens["id_token"], "client_id": "roadkit-app", "post_logout_redirect_uri": REDIRECT, "state": "bye-1"},
    )
    assert response.status_code == 302 and response.headers["location"] == f"{REDIRECT}?state=bye-1"
    assert refresh(http, iam.url, tokens["refresh_token"]).json()["error_description"] == "Session not active"
    again = location_params(
        authorize(
            http,
            iam.url,
            client_id="roadkit-app",
            redirect_uri=REDIRECT,
            response_type="code",
            prompt="none",
            state="s",
            code_challenge="E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            code_challenge_method="S256",
        )
    )
    assert again["error"] == "login_required"


def test_logout_without_hint_asks_for_confirmation(iam: RunningIam, http: httpx.Client) -> None:
    tokens_for(http, iam.url, REDIRECT)
    page = http.get(oidc_url(iam.url, "logout"), params={"client_id": "roadkit-app", "post_logout_redirect_uri": REDIRECT})
    assert page.status_code == 200 and "Do you want to log out?" in page.text and 'id="kc-logout"' in page.text


def test_logout_redirect_needs_client_id_or_hint(iam: RunningIam, http: httpx.Client) -> None:
    page = http.get(oidc_url(iam.url, "logout"), params={"post_logout_redirect_uri": REDIRECT})
    assert page.status_code == 400
    assert "Either the parameter &#x27;client_id&#x27; or the parameter &#x27;id_token_hint&#x27; is required" in page.text


def test_backchannel_logout_with_refresh_token(iam: RunningIam, http: httpx.Client) -> None:
    from .oidc_flow import login_for_code

    callback = f"{PORTAL_URL}/login/callback"
    params, verifier = login_for_code(http, iam.url, callback, client_id="roadkit-portal")
    tokens = http.post(
        oidc_url(iam.url, "token"),
        auth=("roadkit-portal", "roadkit-portal-dev-secret"),
        data={"grant_type": "authorization_code", "code": params["code"], "redirect_uri": callback, "code_verifier": verifier},
    ).json()
    response = http.post(
        oidc_url(iam.url, "logout"), auth=("roadkit-portal", "roadkit-portal-dev-secret"), data={"refresh_token": tokens["refresh_token"]}
    )
    assert response.status_code == 204
    assert http.get(f"{iam.url}/_testing/state").json()["sessions"] == []
