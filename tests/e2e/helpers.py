"""Helpers shared by the end-to-end tests (IAM test controls, app state, the login form)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
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


def _threads_below(root: int) -> list[int]:
    """Every thread of every process below ``root`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # ended meanwhile
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    threads, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            with contextlib.suppress(OSError):
                threads += [int(tid) for tid in os.listdir(f"/proc/{child}/task")]
    return threads


def _pin(threads: list[int], cpus: set[int]) -> None:
    for tid in threads:
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            os.sched_setaffinity(tid, cpus)


@contextlib.contextmanager
def busy_cpu_for_browser(hogs: int = 2) -> Iterator[None]:
    """Load the browser's CPU for real: every thread of the processes this test process started (the
    browser, its renderers and services) is pinned to one CPU, with ``hogs`` busy-looping processes pinned
    to the same CPU. The browser's threads then wait behind the hogs at each wake-up, so messages between
    its processes (storage changes, lock grants) are late and come in any order, as on a machine under
    heavy load. Only one CPU of the machine is taken; affinities are restored on exit."""
    allowed = os.sched_getaffinity(0)
    one = {max(allowed)}
    # Each hog spins until its parent is gone, so that a killed test run leaves none behind.
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"
    busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(hogs)]
    try:
        _pin(_threads_below(os.getpid()), one)
        yield
    finally:
        for process in busy:
            process.kill()
            process.wait()
        _pin(_threads_below(os.getpid()), allowed)
