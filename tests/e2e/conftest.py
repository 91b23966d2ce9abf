"""End-to-end fixtures: the development IAM, the backend and the static app on free ports,
and Debian's Chromium driven by Playwright (never a downloaded browser).

Environment:
  ROADKIT_CHROMIUM   path of the Chromium binary (default /usr/bin/chromium)
  ROADKIT_E2E_HEADED set to 1 to watch the browser (needs a display)
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# Missing test dependencies fail the collection: ./dev tests installs them.
from playwright import sync_api as playwright_sync

from roadkit_client import testing as client_testing
from roadkit_deviam import testing as _deviam_testing  # noqa: F401  (run_stack needs it)

from .helpers import post_json

CHROMIUM = os.environ.get("ROADKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-gpu",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: Default time Playwright waits for a page state, in ms.
TIMEOUT_MS = 15_000


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "e2e" in item.nodeid:
            item.add_marker(pytest.mark.slow)  # each test drives a browser against real servers
    # Playwright's sync API keeps an event loop running in the main thread while the browser
    # lives: run the browser tests last, so that no async test runs beside it.
    items.sort(key=lambda item: "tests/e2e/" in item.nodeid)
    if shutil.which(CHROMIUM) is None and not os.path.exists(CHROMIUM):
        # A missing browser is a broken set-up, not a reason to pass: ./dev installs Debian's chromium.
        raise pytest.UsageError(f"Chromium not found at {CHROMIUM}: run ./dev tests, or apt-get install chromium")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session; each test gets its own context."""
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=os.environ.get("ROADKIT_E2E_HEADED") != "1",
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture()
def context(browser: Any) -> Iterator[Any]:
    """A fresh browser profile: empty storage and cookies."""
    ctx = browser.new_context()
    ctx.set_default_timeout(TIMEOUT_MS)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture()
def page(context: Any) -> Any:
    page = context.new_page()
    page.on("console", lambda msg: print(f"[console.{msg.type}] {msg.text}") if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: print(f"[pageerror] {exc}"))
    return page


def _closed_routing() -> dict[str, Any]:
    """Settings pointing the routing service at a port nothing listens on: routing is "down"."""
    return {"app": {"routing_url": f"http://127.0.0.1:{client_testing.free_port()}/simple/1.0.0"}}


@pytest.fixture(scope="session")
def stack() -> Iterator[Any]:
    """IAM (300 s access tokens) + backend + static app, shared by the tests of the session."""
    with client_testing.run_stack(client_overrides=_closed_routing()) as s:
        yield s


@pytest.fixture(scope="module")
def short_stack() -> Iterator[Any]:
    """A stack whose IAM issues 10-second access tokens (refresh timer tests)."""
    with client_testing.run_stack({"lifetimes": {"access_token": 10}}, _closed_routing()) as s:
        yield s


@pytest.fixture()
def clocked_stack() -> Iterator[tuple[Any, Callable[[float], None]]]:
    """A stack whose IAM and backend clocks can be moved forward together: ``advance(seconds)``."""
    offset = [0.0]
    with client_testing.run_stack(client_overrides=_closed_routing(), now=lambda: time.time() + offset[0]) as s:

        def advance(seconds: float) -> None:
            offset[0] += seconds
            post_json(f"{s.iam_url}/_testing/clock", {"advance": seconds})

        yield s, advance
