"""The app as shipped and across reloads and tabs, in Chromium: no test hooks in the production page,
a refresh timer armed after a reload, one refresh call for two tabs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from roadkit_client import testing as client_testing

from .helpers import login_local, record_requests, stored_token, submit_login_form

TOKEN_PATH = "/protocol/openid-connect/token"
#: The stored access token, or null (never a TypeError while a tab rewrites the record).
CURRENT_TOKEN = "(JSON.parse(localStorage.getItem('service') || '{}').connexion?.token?.access_token ?? null)"


@pytest.fixture(scope="module")
def shipped_stack() -> Iterator[Any]:
    """A stack whose app runs with the production setting ``app.test_hooks = false``."""
    with client_testing.run_stack(client_overrides={"app": {"test_hooks": False}}) as s:
        yield s


def test_the_shipped_page_does_not_expose_the_auth_service(page: Any, shipped_stack: Any) -> None:
    page.goto(f"{shipped_stack.app_url}/")
    page.wait_for_url(f"{shipped_stack.issuer}/protocol/openid-connect/auth**")
    submit_login_form(page)
    page.wait_for_url(f"{shipped_stack.app_url}/")
    page.wait_for_function("() => document.getElementById('status').textContent.startsWith('Signed in as')")
    assert page.evaluate("() => typeof window.__roadkit") == "undefined"
    assert page.locator('meta[name="roadkit-test-hooks"]').count() == 0
    # Nothing on window holds the token either (web storage does, as the specification says).
    token = page.evaluate("() => JSON.parse(localStorage.getItem('service')).connexion.token.access_token")
    leaked = page.evaluate(
        """(token) => Object.keys(window).filter((k) => {
            if (k === 'localStorage' || k === 'sessionStorage') return false;
            try { return JSON.stringify(window[k]).includes(token); } catch { return false; } })""",
        token,
    )
    assert leaked == []


def _token_requests(requests: list[Any]) -> list[Any]:
    return [r for r in requests if r.method == "POST" and r.url.endswith(TOKEN_PATH)]


def test_after_a_reload_the_refresh_timer_is_armed(page: Any, short_stack: Any) -> None:
    login_local(page, short_stack)
    page.reload()
    page.wait_for_function("() => window.__roadkit && window.__roadkit.status === 'restored'")
    first = stored_token(page)
    requests = record_requests(page)
    # 10-second tokens: refreshed about 8 s after issue by the timer, with no API call to trigger it.
    page.wait_for_function(
        "(old) => JSON.parse(localStorage.getItem('service')).connexion.token.access_token !== old",
        arg=first["access_token"],
        timeout=15_000,
    )
    assert len(_token_requests(requests)) == 1
    assert not [r for r in requests if r.url.startswith(short_stack.backend_url)], "the refresh came from the timer"


def test_two_tabs_whose_timers_fire_together_make_one_refresh_call(context: Any, short_stack: Any) -> None:
    first = context.new_page()
    login_local(first, short_stack)
    second = context.new_page()
    second.goto(f"{short_stack.app_url}/")
    second.wait_for_function("() => window.__roadkit && window.__roadkit.status === 'restored'")
    token = stored_token(first)
    seen_first, seen_second = record_requests(first), record_requests(second)
    for tab in (first, second):
        tab.wait_for_function(f"(old) => {CURRENT_TOKEN} !== old", arg=token["access_token"], timeout=15_000)
    # Both tabs' timers were due at the same instant (same stored token); give a second call time to happen.
    first.wait_for_timeout(1500)
    seen = seen_first + seen_second
    events = [tab.evaluate("() => window.__roadkit.events.map((e) => e.name + (e.code ? ':' + e.code : ''))") for tab in (first, second)]
    assert len(_token_requests(seen)) == 1, ([r.url for r in seen], events)
    assert stored_token(first) is not None and stored_token(first)["access_token"] == stored_token(second)["access_token"], events
