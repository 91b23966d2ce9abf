"""The remote-mode portal: server-side confidential code flow, session cookie, logout."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx

from .apps_support import Stack
from .oidc_flow import submit_login


def portal_login(stack: Stack, http: httpx.Client, username: str = "demo") -> httpx.Response:
    """Browser steps: app -> /login?app=roadkit -> IAM form -> /login/callback; returns the callback answer."""
    start = http.get(f"{stack.backend_url}/login", params={"app": "roadkit"})
    assert start.status_code == 302
    auth_url = start.headers["location"]
    query = parse_qs(urlsplit(auth_url).query)
    assert auth_url.startswith(f"{stack.iam.issuer}/protocol/openid-connect/auth?")
    assert query["client_id"] == ["roadkit-portal"] and query["code_challenge_method"] == ["S256"]
    assert query["state"][0] and query["nonce"][0] and "client_secret" not in auth_url
    assert "httponly" in start.headers["set-cookie"].lower()
    form = http.get(auth_url)
    redirect = submit_login(http, form, username, f"{username}-password")
    callback = redirect.headers["location"]
    assert callback.startswith(f"{stack.backend_url}/login/callback?")
    return http.get(callback)


def test_portal_login_success_sets_session_cookie(stack: Stack, http: httpx.Client) -> None:
    done = portal_login(stack, http)
    assert done.status_code == 302 and done.headers["location"] == f"{stack.app_url}/login?success=1"
    cookie = next(c for c in done.headers.get_list("set-cookie") if c.startswith("roadkit_session=")).lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/" in cookie
    me = http.get(f"{stack.backend_url}/me")
    assert me.status_code == 200 and me.json()["username"] == "demo"
    created = http.post(
        f"{stack.backend_url}/documents",
        json={"title": "remote", "type": "route", "geojson": {"type": "Point", "coordinates": [7.4, 43.7]}},
    )
    assert created.status_code == 201
    assert [d["title"] for d in http.get(f"{stack.backend_url}/documents").json()] == ["remote"]


def test_portal_callback_with_wrong_state_fails_with_success_0(stack: Stack, http: httpx.Client) -> None:
    start = http.get(f"{stack.backend_url}/login", params={"app": "roadkit"})
    redirect = submit_login(http, http.get(start.headers["location"]), "demo", "demo-password")
    parts = urlsplit(redirect.headers["location"])
    params = {k: v[0] for k, v in parse_qs(parts.query).items()}
    params["state"] = "forged"
    done = http.get(f"{stack.backend_url}/login/callback", params=params)
    assert done.headers["location"] == f"{stack.app_url}/login?success=0"
    assert http.get(f"{stack.backend_url}/me").status_code == 401


def test_portal_callback_with_iam_error_fails_with_success_0(stack: Stack, http: httpx.Client) -> None:
    start = http.get(f"{stack.backend_url}/login", params={"app": "roadkit"})
    state = parse_qs(urlsplit(start.headers["location"]).query)["state"][0]
    done = http.get(f"{stack.backend_url}/login/callback", params={"error": "access_denied", "state": state})
    assert done.headers["location"] == f"{stack.app_url}/login?success=0"


def test_portal_callback_without_login_in_progress_fails(stack: Stack, http: httpx.Client) -> None:
    done = http.get(f"{stack.backend_url}/login/callback", params={"code": "x", "state": "y"})
    assert done.status_code == 302 and done.headers["location"] == f"{stack.app_url}/login?success=0"


def test_portal_callback_is_single_use(stack: Stack, http: httpx.Client) -> None:
    start = http.get(f"{stack.backend_url}/login", params={"app": "roadkit"})
    callback = submit_login(http, http.get(start.headers["location"]), "demo", "demo-password").headers["location"]
    assert http.get(callback).headers["location"].endswith("success=1")
    http.cookies.delete("roadkit_session")
    assert http.get(callback).headers["location"].endswith("success=0")


def test_portal_unknown_app_is_400(stack: Stack, http: httpx.Client) -> None:
    response = http.get(f"{stack.backend_url}/login", params={"app": "nope"})
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("app:")
    assert http.get(f"{stack.backend_url}/login").status_code == 400


def iam_sessions(stack: Stack) -> list[object]:
    return list(httpx.get(f"{stack.iam.url}/_testing/state").json()["sessions"])


def test_portal_logout_with_its_csrf_token_ends_both_sessions(stack: Stack, http: httpx.Client) -> None:
    portal_login(stack, http)
    old_cookie = http.cookies.get("roadkit_session")
    assert iam_sessions(stack)
    token = http.get(f"{stack.backend_url}/csrf-token", headers={"Origin": stack.app_url})
    assert token.status_code == 200 and token.headers["access-control-allow-origin"] == stack.app_url
    out = http.post(
        f"{stack.backend_url}/logout",
        params={"app": "roadkit"},
        headers={"X-CSRF-Token": token.json()["csrfToken"], "Origin": stack.app_url},
    )
    assert out.status_code == 200 and out.json() == {"redirect": f"{stack.app_url}/?success=1"}
    assert "roadkit_session" not in http.cookies
    assert iam_sessions(stack) == []
    replay = httpx.get(f"{stack.backend_url}/me", cookies={"roadkit_session": old_cookie})
    assert replay.status_code == 401
    assert http.get(f"{stack.backend_url}/csrf-token").status_code == 401


def test_portal_logout_is_refused_without_post_token_or_origin(stack: Stack, http: httpx.Client) -> None:
    portal_login(stack, http)
    url = f"{stack.backend_url}/logout"
    token = http.get(f"{stack.backend_url}/csrf-token").json()["csrfToken"]
    # A cross-site <img> or link: GET is no logout.
    got = http.get(url, params={"app": "roadkit"})
    assert got.status_code == 405 and got.json()["error"]["errorType"] == "method_not_allowed"
    # A cross-site form post: no token (and a form cannot set the header).
    for headers in (
        {},
        {"X-CSRF-Token": ""},
        {"X-CSRF-Token": token[:-1] + ("A" if token[-1] != "A" else "B")},
        {"X-CSRF-Token": b"\xe9\xff"},
    ):
        refused = http.post(url, params={"app": "roadkit"}, headers=headers, data={"csrf_token": token})
        assert refused.status_code == 403, refused.text
        error = refused.json()["error"]
        assert error["errorType"] == "csrf_token_invalid" and error["message"].startswith("X-CSRF-Token:")
    # The right token from a page of another origin.
    foreign = http.post(url, params={"app": "roadkit"}, headers={"X-CSRF-Token": token, "Origin": "http://evil.test"})
    assert foreign.status_code == 403 and foreign.json()["error"]["errorType"] == "forbidden_origin"
    # Another session's token is not this one's.
    with httpx.Client(follow_redirects=False) as other:
        portal_login(stack, other, "alice")
        alices = other.get(f"{stack.backend_url}/csrf-token").json()["csrfToken"]
    assert alices != token
    assert http.post(url, params={"app": "roadkit"}, headers={"X-CSRF-Token": alices}).status_code == 403
    # Nothing was ended.
    assert http.get(f"{stack.backend_url}/me").status_code == 200
    assert len(iam_sessions(stack)) == 2
    # The browser's preflight for the real call is allowed from the app's origin only.
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-csrf-token"}
    assert httpx.options(url, headers={**preflight, "Origin": stack.app_url}).status_code == 200
    assert httpx.options(url, headers={**preflight, "Origin": "http://evil.test"}).status_code == 400


def test_portal_refreshes_access_token_server_side(stack: Stack, http: httpx.Client) -> None:
    portal_login(stack, http)
    for _ in range(3):
        stack.advance(400)  # past the 300 s access token, within the 1800 s SSO idle
        me = http.get(f"{stack.backend_url}/me")
        assert me.status_code == 200, me.text


def test_portal_session_ends_when_iam_session_ends(stack: Stack, http: httpx.Client) -> None:
    portal_login(stack, http)
    httpx.post(f"{stack.iam.url}/_testing/sessions/end", json={"username": "demo"})
    stack.advance(400)
    response = http.get(f"{stack.backend_url}/me")
    assert response.status_code == 401 and 'error="invalid_token"' in response.headers["www-authenticate"]
