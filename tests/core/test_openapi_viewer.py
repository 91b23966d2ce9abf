"""The OpenAPI viewer page: what it takes from the request is escaped, and it loads only the vendored Swagger UI, hash-checked."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from roadkit.web.docs import SWAGGER_UI, docs_routes

ATTACK = 'evil.example"><script>alert(1)</script>'


@pytest.fixture
def client() -> TestClient:
    routes = docs_routes("roadkit <test> API", lambda request: {"openapi": "3.1.0"}, "/test/1.0.0")
    return TestClient(Starlette(routes=[Mount("/test/1.0.0", routes=routes)]))


def _sha384(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def _well_formed(page: str) -> None:
    """The page's own markup only: the attack's text never opens a tag or closes an attribute."""
    assert "<script>alert" not in page and ATTACK not in page
    assert len(re.findall(r"<script", page)) == 3 and len(re.findall(r"<a ", page)) == 1, page


@pytest.mark.parametrize("header", ["host", "x-forwarded-host", "x-forwarded-proto"])
def test_a_header_with_markup_never_reaches_the_page_unescaped(client: TestClient, header: str) -> None:
    page = client.get("/test/1.0.0/openapi", headers={header: ATTACK})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    _well_formed(page.text)
    assert "roadkit &lt;test&gt; API" in page.text


def test_a_mount_path_with_markup_comes_back_escaped() -> None:
    # The path a host application mounts roadkit under (roadkit.asgi) reaches the spec URL as it is: escaped in the page.
    routes = docs_routes("API", lambda request: {}, "/test/1.0.0")
    app = Starlette(routes=[Mount("/test/1.0.0", routes=routes)])

    async def mounted(scope: Any, receive: Any, send: Any) -> None:
        await app({**scope, "roadkit.root_path": '/x"><script>alert(1)</script>'}, receive, send)

    page = TestClient(mounted).get("/test/1.0.0/openapi")
    _well_formed(page.text)
    assert 'data-spec="http://testserver/x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;/test/1.0.0/openapi.json"' in page.text


def test_a_forwarded_scheme_other_than_http_never_reaches_a_link(client: TestClient) -> None:
    page = client.get("/test/1.0.0/openapi", headers={"x-forwarded-proto": "javascript"})
    assert "javascript" not in page.text.lower()
    assert re.search(r'href="(https?://[^"]+)?/test/1\.0\.0/openapi\.json"', page.text), page.text


def test_the_page_loads_only_the_vendored_swagger_ui_each_with_its_recorded_hash(client: TestClient) -> None:
    page = client.get("/test/1.0.0/openapi")
    assert "content-security-policy" in page.headers and "default-src 'self'" in page.headers["content-security-policy"]
    manifest = json.loads((SWAGGER_UI / "manifest.json").read_text())
    assert manifest["package"] == "swagger-ui-dist" and re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    loaded = re.findall(r'<(?:script src|link rel="stylesheet" href)="([^"]+)" integrity="([^"]+)"', page.text)
    assert len(loaded) == 4 and len(re.findall(r"<script", page.text)) == 3, page.text
    for url, integrity in loaded:
        assert url.startswith("/test/1.0.0/openapi/assets/"), url  # same origin: no CDN
        asset = client.get(url)
        assert asset.status_code == 200 and _sha384(asset.content) == integrity, url
        name = url.rsplit("/", 1)[1]
        if name != "viewer.js":
            assert manifest["files"][name] == integrity, f"{name} differs from the hash recorded when it was vendored"
    assert set(manifest["files"]) == {"swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "swagger-ui.css"}
