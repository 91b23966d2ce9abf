"""Local-mode logout: revoked at the IAM, ended there, and seen by the other tabs."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from .helpers import is_authenticated, login_local, record_requests, stored_token, wait_ready, wait_signed_out


def test_logout_in_one_tab_reaches_the_other(context: Any, stack: Any) -> None:
    first = context.new_page()
    login_local(first, stack)
    refresh_token = stored_token(first)["refresh_token"]
    second = context.new_page()
    second.goto(f"{stack.app_url}/")
    wait_ready(second)
    assert is_authenticated(second)
    assert second.evaluate("() => window.__roadkit.status") == "restored"

    requests = record_requests(first)
    with first.expect_request(lambda r: "/protocol/openid-connect/logout" in r.url):
        first.click("#logout")
    # Back from the IAM's end-session endpoint, signed out, not sent to the login form again.
    wait_signed_out(first)
    first.wait_for_url(f"{stack.app_url}/")
    assert not is_authenticated(first)
    assert first.text_content("#status") == "Signed out"

    second.wait_for_function("() => window.__roadkit.auth.isAuthenticated === false")
    assert "onLogout" in second.evaluate("() => window.__roadkit.events.map((e) => e.name)")
    assert second.text_content("#status") == "Not signed in"
    assert stored_token(second) is None

    revoke = [r for r in requests if r.url.endswith("/protocol/openid-connect/revoke")]
    assert len(revoke) == 1 and parse_qs(revoke[0].post_data)["token"] == [refresh_token]
    end = [r for r in requests if "/protocol/openid-connect/logout" in r.url]
    query = parse_qs(urlsplit(end[0].url).query)
    assert query["client_id"] == ["roadkit-app"] and "id_token_hint" in query and "state" in query

    # The IAM session is over: a new visit shows the login form, not a silent sign-in.
    third = context.new_page()
    third.goto(f"{stack.app_url}/")
    third.wait_for_selector("#username")
