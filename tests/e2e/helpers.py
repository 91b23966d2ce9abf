"""Helpers shared by the end-to-end tests (IAM test controls, app state, the login form)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

DEMO = ("demo", "demo-password")


def post_json(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.loads(response.read() or b"{}"))


def end_iam_sessions(stack: Any, username: str = "demo") -> None:
    """End the user's SSO sessions at the IAM (its refresh tokens then fail)."""
    post_json(f"{stack.iam_url}/_testing/sessions/end", {"username": username})


def wait_ready(page: Any) -> None:
    """Wait until the app page finished checkAuthentication."""
    page.wait_for_function("() => window.__roadkit && window.__roadkit.ready === true")


def wait_signed_out(page: Any) -> None:
    """Wait until the app page, back from a logout's navigations, finished checkAuthentication with
    status 'logout'. The wait outlives the navigations: the page that was clicked is gone before it ends."""
    page.wait_for_function("() => window.__roadkit && window.__roadkit.ready === true && window.__roadkit.status === 'logout'")


def is_authenticated(page: Any) -> bool:
    return bool(page.evaluate("() => !!(window.__roadkit && window.__roadkit.auth && window.__roadkit.auth.isAuthenticated)"))


def submit_login_form(page: Any, username: str = DEMO[0], password: str = DEMO[1]) -> None:
    """Fill the IAM's login form (Keycloak element ids) and submit it."""
    page.wait_for_selector("#username")
    page.fill("#username", username)
    page.fill("#password", password)
    page.click("#kc-login")


def stored_service(page: Any) -> Any:
    """The parsed localStorage `service` entry of the app origin."""
    return page.evaluate("() => JSON.parse(localStorage.getItem('service') || 'null')")


def stored_token(page: Any) -> Any:
    service = stored_service(page)
    return ((service or {}).get("connexion") or {}).get("token")


def event_names(page: Any) -> list[str]:
    return list(page.evaluate("() => window.__roadkit.events.map((e) => e.name)"))


def login_local(page: Any, stack: Any, username: str = DEMO[0], password: str = DEMO[1]) -> None:
    """Open the app, go through the IAM form, come back signed in."""
    page.goto(f"{stack.app_url}/")
    page.wait_for_url(f"{stack.issuer}/protocol/openid-connect/auth**")
    submit_login_form(page, username, password)
    page.wait_for_url(f"{stack.app_url}/")
    wait_ready(page)
    page.wait_for_function("() => window.__roadkit.auth.isAuthenticated === true")


def expire_stored_token(page: Any) -> None:
    """Make the stored access token look expired (as after a long pause)."""
    page.evaluate(
        """() => {
            const s = JSON.parse(localStorage.getItem('service'));
            s.connexion.token.expires_at = Date.now() - 1000;
            localStorage.setItem('service', JSON.stringify(s));
        }"""
    )


def record_requests(page: Any) -> list[Any]:
    """Collect every request the page (and its frames) makes from now on."""
    seen: list[Any] = []
    page.on("request", lambda request: seen.append(request))
    return seen
