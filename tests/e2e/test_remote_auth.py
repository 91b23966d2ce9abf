"""Remote mode end to end: the portal (backend) runs the OAuth flow; the browser only has a cookie."""

from __future__ import annotations

from typing import Any

from .helpers import is_authenticated, record_requests, submit_login_form, wait_ready, wait_signed_out

LOGIN_EVENTS = ("service:user:loaded", "service:documents:loaded", "onLogin")


def remote_login(page: Any, stack: Any) -> None:
    page.goto(f"{stack.app_url}/login")
    # /login runs checkAuthentication, which sends the browser to the portal, then to the IAM form.
    page.wait_for_url(f"{stack.issuer}/protocol/openid-connect/auth**")
    submit_login_form(page)
    page.wait_for_url(f"{stack.app_url}/login**")
    wait_ready(page)


def test_remote_success_loads_user_then_documents_before_authenticating(page: Any, stack: Any) -> None:
    requests = record_requests(page)
    remote_login(page, stack)
    assert is_authenticated(page)
    events = page.evaluate(
        "(names) => window.__roadkit.events.filter((e) => names.includes(e.name)).map((e) => [e.name, e.isAuthenticated])",
        list(LOGIN_EVENTS),
    )
    assert events == [
        ["service:user:loaded", False],
        ["service:documents:loaded", False],
        ["onLogin", True],
    ]
    # The portal came back with success=1; the app asked /me then /documents with its cookie.
    assert any(r.url == f"{stack.app_url}/login?success=1" for r in requests)
    api = [r.url for r in requests if r.url.startswith(stack.backend_url) and r.method == "GET" and r.resource_type == "fetch"]
    assert api[:2] == [f"{stack.backend_url}/me", f"{stack.backend_url}/documents"]
    assert page.url == f"{stack.app_url}/login"
    # No token in the browser: nothing in web storage, the session cookie is HttpOnly.
    assert page.evaluate("() => localStorage.length + sessionStorage.length") == 0
    assert page.evaluate("() => document.cookie") == ""
    assert page.text_content("#profile-name") == "Demo User"
    assert page.evaluate("() => window.__roadkit.service.mode") == "remote"


def test_remote_success_0_shows_an_error(page: Any, stack: Any) -> None:
    page.goto(f"{stack.app_url}/login?success=0")
    wait_ready(page)
    page.wait_for_selector("#error:not([hidden])")
    assert "remote_login_failed" in page.text_content("#error")
    assert not is_authenticated(page)
    errors = page.evaluate("() => window.__roadkit.events.filter((e) => e.name === 'onError').map((e) => e.code)")
    assert errors == ["remote_login_failed"]
    assert page.url == f"{stack.app_url}/login"


def test_a_failed_portal_callback_returns_success_0(page: Any, stack: Any) -> None:
    # A callback the portal did not start (unknown state) ends in ?success=0 at the app.
    page.goto(f"{stack.backend_url}/login/callback?state=forged&code=forged")
    page.wait_for_url(f"{stack.app_url}/login**")
    wait_ready(page)
    page.wait_for_selector("#error:not([hidden])")
    assert not is_authenticated(page)


def test_remote_logout_ends_the_portal_session_and_reaches_other_tabs(context: Any, stack: Any) -> None:
    first = context.new_page()
    remote_login(first, stack)
    second = context.new_page()
    second.goto(f"{stack.app_url}/?mode=remote")
    wait_ready(second)
    assert is_authenticated(second)
    requests = record_requests(first)
    first.click("#logout")
    wait_signed_out(first)
    # The portal's logout is a POST carrying the session's CSRF token, never a GET.
    logouts = [r for r in requests if r.url.startswith(f"{stack.backend_url}/logout")]
    assert [r.method for r in logouts if r.method != "OPTIONS"] == ["POST"]
    assert logouts[-1].headers.get("x-csrf-token")
    first.wait_for_url(f"{stack.app_url}/")
    assert not is_authenticated(first)
    second.wait_for_function("() => window.__roadkit.auth.isAuthenticated === false")
    assert second.text_content("#status") == "Not signed in"
    # The portal session is gone.
    status = first.evaluate("async (url) => (await fetch(url + '/me', {credentials: 'include'})).status", stack.backend_url)
    assert status == 401
