"""Local mode end to end: PKCE login through the IAM form, token reuse, refresh, state checks."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from roadkit_deviam.testing import PORTAL_CLIENT_SECRET as PORTAL_SECRET

from .helpers import (
    end_iam_sessions,
    event_names,
    expire_stored_token,
    is_authenticated,
    login_local,
    record_requests,
    stored_service,
    stored_token,
    submit_login_form,
    wait_ready,
)

TOKEN_FIELDS = {"authenticator", "access_token", "refresh_token", "expires_in", "token_type", "scope", "expires_at"}


def token_posts(requests: list[Any], stack: Any) -> list[dict[str, list[str]]]:
    """The form bodies POSTed to the token endpoint."""
    url = f"{stack.issuer}/protocol/openid-connect/token"
    return [parse_qs(r.post_data or "") for r in requests if r.method == "POST" and r.url == url]


def test_local_login_through_the_iam_form_stores_the_token_record(page: Any, stack: Any) -> None:
    requests = record_requests(page)
    page.goto(f"{stack.app_url}/")
    page.wait_for_url(f"{stack.issuer}/protocol/openid-connect/auth**")
    auth_query = parse_qs(urlsplit(page.url).query)
    assert auth_query["code_challenge_method"] == ["S256"]
    assert auth_query["client_id"] == ["roadkit-app"]
    assert auth_query["redirect_uri"] == [f"{stack.app_url}/"]
    assert auth_query["state"][0] and auth_query["code_challenge"][0]
    submit_login_form(page)
    page.wait_for_url(f"{stack.app_url}/")
    wait_ready(page)
    assert is_authenticated(page)
    before_ms = time.time() * 1000

    token = stored_token(page)
    assert set(token) == TOKEN_FIELDS
    assert token["authenticator"] == "authenticator:oauth2"
    assert token["token_type"] == "Bearer"
    assert token["scope"] == "openid"
    assert token["expires_in"] == 300
    # expires_at: milliseconds since the epoch, about now + 300 s.
    assert abs(token["expires_at"] - (before_ms + 300_000)) < 30_000
    assert "id_token" in stored_service(page)["connexion"]

    # The exchange carried the verifier, and no secret.
    (exchange,) = token_posts(requests, stack)
    assert exchange["grant_type"] == ["authorization_code"]
    assert len(exchange["code_verifier"][0]) == 43
    assert "client_secret" not in exchange
    # The callback parameters are gone from the address bar; nothing pending in sessionStorage.
    assert page.url == f"{stack.app_url}/"
    assert page.evaluate("() => sessionStorage.length") == 0
    # The profile (GET /me) is shown.
    page.wait_for_selector("#profile:not([hidden])")
    assert page.text_content("#profile-name") == "Demo User"
    assert page.text_content("#profile-email") == "demo@example.org"
    # Nothing came from the internet, and no secret travelled to or from the browser.
    assert {urlsplit(r.url).hostname for r in requests} == {"127.0.0.1"}
    settings = page.evaluate("async () => (await fetch('/settings.json')).json()")
    assert "IamClientSecret" not in settings
    assert not any(PORTAL_SECRET in (r.url + (r.post_data or "")) for r in requests)
    assert PORTAL_SECRET not in page.evaluate("() => JSON.stringify(localStorage) + JSON.stringify(sessionStorage)")


def test_wrong_password_stays_on_the_iam_form(page: Any, stack: Any) -> None:
    page.goto(f"{stack.app_url}/")
    submit_login_form(page, "demo", "not-the-password")
    page.wait_for_selector("text=Invalid username or password.")
    assert page.url.startswith(stack.iam_url)


def test_reload_reuses_the_stored_token(page: Any, stack: Any) -> None:
    login_local(page, stack)
    token = stored_token(page)
    requests = record_requests(page)
    page.reload()
    wait_ready(page)
    assert is_authenticated(page)
    assert page.evaluate("() => window.__roadkit.status") == "restored"
    assert stored_token(page) == token
    assert not [r for r in requests if r.url.startswith(stack.iam_url) and "/protocol/" in r.url and r.method == "POST"]
    assert not [r for r in requests if "/protocol/openid-connect/auth" in r.url]


def test_reload_with_an_expired_token_refreshes_it(page: Any, stack: Any) -> None:
    login_local(page, stack)
    old = stored_token(page)
    expire_stored_token(page)
    requests = record_requests(page)
    page.reload()
    wait_ready(page)
    assert is_authenticated(page)
    new = stored_token(page)
    assert new["access_token"] != old["access_token"]
    assert new["refresh_token"] != old["refresh_token"]
    assert new["expires_at"] > time.time() * 1000 + 200_000
    (refresh,) = token_posts(requests, stack)
    assert refresh["grant_type"] == ["refresh_token"]
    assert refresh["refresh_token"] == [old["refresh_token"]]


def test_token_is_refreshed_by_a_timer_before_it_expires(page: Any, short_stack: Any) -> None:
    login_local(page, short_stack)
    first = stored_token(page)
    assert first["expires_in"] == 10
    # Refresh is scheduled a fifth of the lifetime before expiry: about 8 s after login.
    page.wait_for_function(
        "(old) => JSON.parse(localStorage.getItem('service')).connexion.token.access_token !== old",
        arg=first["access_token"],
        timeout=15_000,
    )
    second = stored_token(page)
    assert second["expires_at"] > first["expires_at"]
    assert "service:token:refreshed" in event_names(page)
    assert is_authenticated(page)
    # The backend accepts the new token (the app keeps working).
    assert page.evaluate("async () => (await window.__roadkit.service.api.me()).username") == "demo"


def test_a_refused_refresh_ends_the_session_cleanly(page: Any, stack: Any) -> None:
    login_local(page, stack)
    end_iam_sessions(stack)
    expire_stored_token(page)
    result = page.evaluate(
        "async () => { try { await window.__roadkit.service.refresh(); return 'refreshed'; } catch (e) { return e.code; } }"
    )
    assert result == "session_ended"
    assert not is_authenticated(page)
    assert stored_token(page) is None
    assert event_names(page)[-2:] == ["service:session:ended", "onLogout"] or "onLogout" in event_names(page)
    page.wait_for_selector("#login:not([hidden])")
    assert page.text_content("#status") == "Not signed in"


def test_check_session_with_an_iam_session_exchanges_a_new_code(page: Any, stack: Any) -> None:
    login_local(page, stack)
    # A valid token: true, no frame.
    assert page.evaluate("() => window.__roadkit.auth.checkSession()") is True
    old = stored_token(page)
    expire_stored_token(page)
    requests = record_requests(page)
    assert page.evaluate("() => window.__roadkit.auth.checkSession()") is True
    new = stored_token(page)
    assert new["access_token"] != old["access_token"]
    assert new["expires_at"] > time.time() * 1000 + 200_000
    auth_requests = [r for r in requests if "/protocol/openid-connect/auth" in r.url]
    assert len(auth_requests) == 1
    query = parse_qs(urlsplit(auth_requests[0].url).query)
    assert query["prompt"] == ["none"]
    assert query["redirect_uri"] == [f"{stack.app_url}/silent-check.html"]
    (exchange,) = token_posts(requests, stack)
    assert exchange["grant_type"] == ["authorization_code"]
    assert page.evaluate("() => document.querySelectorAll('iframe').length") == 0
    assert is_authenticated(page)


def test_check_session_without_an_iam_session_is_false_and_closes_the_frame(page: Any, stack: Any) -> None:
    login_local(page, stack)
    end_iam_sessions(stack)
    expire_stored_token(page)
    requests = record_requests(page)
    assert page.evaluate("() => window.__roadkit.auth.checkSession()") is False
    assert page.evaluate("() => document.querySelectorAll('iframe').length") == 0
    assert not is_authenticated(page)
    assert stored_token(page) is None
    assert any("prompt=none" in r.url for r in requests)
    assert token_posts(requests, stack) == []


def test_a_forged_state_is_rejected(page: Any, stack: Any) -> None:
    requests = record_requests(page)
    page.goto(f"{stack.app_url}/?code=forged-code&state=forged-state&session_state=x")
    wait_ready(page)
    page.wait_for_selector("#error:not([hidden])")
    assert "invalid_state" in page.text_content("#error")
    assert not is_authenticated(page)
    assert token_posts(requests, stack) == []
    assert page.url == f"{stack.app_url}/"
    assert stored_token(page) is None


def test_a_replayed_state_is_rejected(page: Any, stack: Any) -> None:
    callbacks: list[str] = []
    page.on("framenavigated", lambda frame: callbacks.append(frame.url) if "code=" in frame.url else None)
    login_local(page, stack)
    assert callbacks, "the IAM callback URL was not seen"
    token = stored_token(page)
    requests = record_requests(page)
    page.goto(callbacks[0])
    wait_ready(page)
    page.wait_for_selector("#error:not([hidden])")
    assert "invalid_state" in page.text_content("#error")
    assert token_posts(requests, stack) == [], "the replayed code must not be sent"
    assert page.url == f"{stack.app_url}/"
    # The session in place is not damaged by the replay.
    assert stored_token(page) == token
    assert is_authenticated(page)


def test_a_state_started_in_another_tab_is_rejected(context: Any, stack: Any) -> None:
    first = context.new_page()
    first.goto(f"{stack.app_url}/")
    first.wait_for_url(f"{stack.issuer}/protocol/openid-connect/auth**")
    authorize_url = first.url
    # The login started in `first` is completed in `second`: its state is not in second's sessionStorage.
    second = context.new_page()
    second.goto(authorize_url)
    submit_login_form(second)
    second.wait_for_url(f"{stack.app_url}/")
    wait_ready(second)
    second.wait_for_selector("#error:not([hidden])")
    assert "invalid_state" in second.text_content("#error")
    assert stored_token(second) is None


def test_an_api_401_refreshes_the_token_and_retries(page: Any, clocked_stack: Any) -> None:
    stack, advance = clocked_stack
    login_local(page, stack)
    old = stored_token(page)
    # Five minutes later for the IAM and the backend (not for the browser, whose timer has not
    # fired): the backend refuses the access token as expired.
    advance(301)
    requests = record_requests(page)
    responses: list[tuple[str, int]] = []
    page.on("response", lambda r: responses.append((r.url, r.status)))
    docs = page.evaluate("() => window.__roadkit.service.api.listDocuments()")
    assert isinstance(docs, list)
    assert [s for u, s in responses if u == f"{stack.backend_url}/documents"] == [401, 200]
    (refresh,) = token_posts(requests, stack)
    assert refresh["grant_type"] == ["refresh_token"]
    assert stored_token(page)["access_token"] != old["access_token"]
    assert is_authenticated(page)
