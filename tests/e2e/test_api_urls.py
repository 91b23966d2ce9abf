"""``IamEntrepotApiUrl`` and ``IamEntrepotApiUrlRemote`` apart: local mode calls the first, remote mode only the second.

The remote one is the backend behind a reverse proxy under ``/api`` (as a portal on the app's own site
would be): the browser's calls, the IAM's redirect back to the portal and the portal's cookies all go
through it in remote mode, and never in local mode.
"""

from __future__ import annotations

import http.client
import http.server
import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import pytest

from roadkit_client import testing as client_testing
from roadkit_deviam.testing import run_iam
from roadkit_support.serving import bound_socket

from .helpers import is_authenticated, login_local, record_requests, stored_token, submit_login_form, wait_ready, wait_signed_out

PREFIX = "/api"
#: Headers a proxy does not pass on (hop by hop, or set again for the body it writes).
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class PrefixProxy(http.server.ThreadingHTTPServer):
    """A reverse proxy on the loopback: ``/api/...`` -> ``target/...``; records each request's method and path."""

    def __init__(self, target: str) -> None:
        self.target = urlsplit(target)
        self.seen: list[tuple[str, str]] = []
        super().__init__(("127.0.0.1", 0), _Forward)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{PREFIX}"


class _Forward(http.server.BaseHTTPRequestHandler):
    server: PrefixProxy
    protocol_version = "HTTP/1.1"

    def _forward(self) -> None:
        if not self.path.startswith(PREFIX + "/"):
            self.send_error(404)
            return
        path = self.path.removeprefix(PREFIX)
        self.server.seen.append((self.command, path))
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP}
        connection = http.client.HTTPConnection(self.server.target.netloc, timeout=20)
        try:
            connection.request(self.command, path, body=body or None, headers=headers)
            answer = connection.getresponse()  # redirects are the browser's to follow, not the proxy's
            payload = answer.read()
            self.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        finally:
            connection.close()

    do_GET = do_POST = do_DELETE = do_OPTIONS = _forward

    def log_message(self, format: str, *args: object) -> None:
        pass


@attrs.frozen
class SplitStack:
    """IAM, backend and app whose two backend addresses differ: ``backend_url`` (local) and ``remote_url`` (the proxy)."""

    iam_url: str
    backend_url: str
    app_url: str
    proxy: PrefixProxy

    @property
    def remote_url(self) -> str:
        return self.proxy.url

    @property
    def issuer(self) -> str:
        return f"{self.iam_url}/realms/roadkit"


@pytest.fixture(scope="module")
def split() -> Iterator[SplitStack]:
    backend_sock, app_sock = bound_socket(), bound_socket()
    backend_url = "http://{}:{}".format(*backend_sock.getsockname()[:2])
    app_url = "http://{}:{}".format(*app_sock.getsockname()[:2])
    proxy = PrefixProxy(backend_url)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    routing = f"http://127.0.0.1:{client_testing.free_port()}/simple/1.0.0"  # nothing listens: routing is down
    overrides = {"backend": {"remote_public_url": proxy.url}, "app": {"routing_url": routing}}
    try:
        # The IAM knows the portal only at its remote address: a callback elsewhere would be refused.
        with (
            run_iam(app_url=app_url, portal_url=proxy.url) as iam_url,
            client_testing.run_client(iam_url, overrides, sockets=(backend_sock, app_sock)),
        ):
            yield SplitStack(iam_url=iam_url, backend_url=backend_url, app_url=app_url, proxy=proxy)
    finally:
        proxy.shutdown()
        proxy.server_close()


def settings(split: SplitStack, mode: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{split.app_url}/settings.json?mode={mode}", timeout=10) as answer:
        return dict(json.loads(answer.read()))


def api_calls(requests: list[Any], base: str) -> list[tuple[str, str]]:
    """(method, path) of the page's fetches to ``base``, preflights left out."""
    return [
        (r.method, r.url.removeprefix(base))
        for r in requests
        if r.url.startswith(base + "/") and r.resource_type == "fetch" and r.method != "OPTIONS"
    ]


def next_page(page: Any, base: str, headers: dict[str, str]) -> str:
    """The ``Link`` header of a one-document page of ``{base}/documents``, asked by the page (two documents saved first)."""
    return str(
        page.evaluate(
            """async ([base, headers]) => {
                const json = { ...headers, 'Content-Type': 'application/json' };
                const geojson = { type: 'Point', coordinates: [7.42, 43.73] };
                for (const title of ['first', 'second']) {
                    const saved = await fetch(`${base}/documents`, {
                        method: 'POST', credentials: 'include', headers: json, body: JSON.stringify({ title, type: 'route', geojson }),
                    });
                    if (saved.status !== 201) throw new Error(`save: ${saved.status}`);
                }
                const listed = await fetch(`${base}/documents?limit=1`, { credentials: 'include', headers });
                return listed.headers.get('Link');
            }""",
            [base, headers],
        )
    )


def test_the_app_is_told_both_addresses(split: SplitStack) -> None:
    for mode in ("local", "remote"):
        published = settings(split, mode)
        assert (published["mode"], published["IamEntrepotApiUrl"], published["IamEntrepotApiUrlRemote"]) == (
            mode,
            split.backend_url,
            split.remote_url,
        )


def test_local_mode_calls_iam_entrepot_api_url_with_its_token(page: Any, split: SplitStack) -> None:
    split.proxy.seen.clear()
    requests = record_requests(page)
    login_local(page, split)
    assert page.evaluate("() => window.__roadkit.service.mode") == "local"
    calls = api_calls(requests, split.backend_url)
    assert ("GET", "/me") in calls and ("GET", "/documents") in calls, calls
    me = next(r for r in requests if r.url == f"{split.backend_url}/me" and r.method == "GET")
    assert me.headers["authorization"].startswith("Bearer ")
    # The next page of documents is named at the address the token was sent to.
    token = stored_token(page)["access_token"]
    assert next_page(page, split.backend_url, {"Authorization": f"Bearer {token}"}).startswith(f"<{split.backend_url}/documents?limit=1&")
    # Neither the browser nor anything on its behalf went to the remote address.
    assert not [r.url for r in requests if r.url.startswith(split.remote_url)]
    assert split.proxy.seen == []


def test_remote_mode_goes_through_iam_entrepot_api_url_remote_only(page: Any, split: SplitStack) -> None:
    split.proxy.seen.clear()
    requests = record_requests(page)
    page.goto(f"{split.app_url}/login")
    page.wait_for_url(f"{split.issuer}/protocol/openid-connect/auth**")
    # The portal, server side, names its callback at the remote address.
    assert parse_qs(urlsplit(page.url).query)["redirect_uri"] == [f"{split.remote_url}/login/callback"]
    submit_login_form(page)
    page.wait_for_url(f"{split.app_url}/login**")
    wait_ready(page)
    assert is_authenticated(page) and page.text_content("#profile-name") == "Demo User"
    assert page.evaluate("() => window.__roadkit.service.mode") == "remote"
    # The browser: the portal's login and callback, then the profile and documents with the cookie, all at the remote address.
    navigations = [r.url.removeprefix(split.remote_url).split("?")[0] for r in requests if r.is_navigation_request()]
    assert "/login" in navigations and "/login/callback" in navigations, navigations
    calls = api_calls(requests, split.remote_url)
    assert calls[:2] == [("GET", "/me"), ("GET", "/documents")], calls
    assert "authorization" not in next(r for r in requests if r.url == f"{split.remote_url}/me").headers
    assert not [r.url for r in requests if r.url.startswith(split.backend_url)]
    # The proxy saw them all: the portal's cookies are scoped to /api and came back through it.
    seen = [(method, path.split("?")[0]) for method, path in split.proxy.seen if method != "OPTIONS"]
    assert seen[:4] == [("GET", "/login"), ("GET", "/login/callback"), ("GET", "/me"), ("GET", "/documents")], seen

    assert next_page(page, split.remote_url, {}).startswith(f"<{split.remote_url}/documents?limit=1&")

    page.click("#logout")
    wait_signed_out(page)
    assert ("POST", "/logout?app=roadkit") in api_calls(requests, split.remote_url)
    assert not [r.url for r in requests if r.url.startswith(split.backend_url)]
