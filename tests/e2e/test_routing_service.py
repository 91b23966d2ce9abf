"""The client application against a real roadkit service: a route computed by OSRM, drawn, saved."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from roadkit.config import load_service
from roadkit.plugins import Plugins
from roadkit.serving.app import create_app
from roadkit_client import testing as client_testing
from roadkit_support.serving import ServerThread, bound_socket

from .helpers import login_local


@pytest.fixture(scope="module")
def routing_service(osrm_example: Path) -> Iterator[str]:
    """The Monaco roadkit service (CORS from the example's file) on a free port: its base URL."""
    sock = bound_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = create_app(load_service(osrm_example / "service.toml", cors=osrm_example / "cors.toml"), Plugins.create())
    server = ServerThread([(app, sock)])
    server.start(f"{url}/simple/1.0.0/getcapabilities")
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def routing_stack(routing_service: str) -> Iterator[Any]:
    """The app stack configured to route with that service."""
    overrides = {"app": {"routing_url": f"{routing_service}/simple/1.0.0", "routing_resource": "monaco-osrm"}}
    with client_testing.run_stack(client_overrides=overrides) as stack:
        yield stack


def test_a_signed_in_user_computes_a_route_with_the_simple_api_and_saves_it(page: Any, routing_stack: Any) -> None:
    login_local(page, routing_stack)
    page.fill("#route-start", "7.41337,43.72956")
    page.fill("#route-end", "7.41983,43.73115")
    page.click("#route-compute")
    page.wait_for_selector("#route-drawing polyline.route-line")
    route = page.evaluate("() => window.__roadkit.route")
    assert route["geometry"]["type"] == "LineString" and len(route["geometry"]["coordinates"]) > 10
    assert route["distance"] > 500
    # What the user reads, checked against the routing service asked directly in metres and seconds.
    truth = httpx.get(
        f"{routing_stack.config.app.routing_url}/route",
        params={
            "resource": "monaco-osrm",
            "start": "7.41337,43.72956",
            "end": "7.41983,43.73115",
            "distanceUnit": "meter",
            "timeUnit": "second",
        },
    ).json()
    minutes = round(truth["duration"] / 60)
    assert minutes >= 1, truth  # a car takes minutes across Monaco, never "0 min"
    expected = f"{truth['distance'] / 1000:.2f} km · {minutes} min"
    assert page.text_content("#route-summary") == expected
    page.fill("#save-title", "Monaco by car")
    page.click("#save")
    page.locator("#document-list li[data-id]").wait_for()
    docs = page.evaluate("() => window.__roadkit.service.api.listDocuments()")
    assert docs[0]["title"] == "Monaco by car"
    assert docs[0]["geojson"]["geometry"]["coordinates"] == route["geometry"]["coordinates"]
    props = docs[0]["geojson"]["properties"]
    assert (props["distanceUnit"], props["timeUnit"]) == ("meter", "second")
    assert props["duration"] == pytest.approx(truth["duration"]) and props["distance"] == pytest.approx(truth["distance"])
    # After a reload, the saved document shows the same figures.
    page.reload()
    page.wait_for_function("() => window.__roadkit && window.__roadkit.auth && window.__roadkit.auth.isAuthenticated")
    page.click("#document-list li[data-id] .doc-show")
    assert page.text_content("#route-summary") == expected


def test_the_openapi_viewer_renders_offline_and_links_to_the_definition(page: Any, routing_service: str) -> None:
    outside: list[str] = []
    page.on("request", lambda request: outside.append(request.url) if not request.url.startswith(routing_service) else None)
    page.goto(f"{routing_service}/simple/1.0.0/openapi")
    page.wait_for_selector(".opblock-summary-path")
    paths = page.locator(".opblock-summary-path").all_text_contents()
    assert {"/route", "/nearest", "/getcapabilities"} <= {p.strip() for p in paths}
    assert page.locator(f"a[href='{routing_service}/simple/1.0.0/openapi.json']").count() >= 1
    assert outside == []
