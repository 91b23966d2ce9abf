"""The signed-in app: route drawing, routing errors, documents saved, listed and deleted."""

from __future__ import annotations

from typing import Any

from .helpers import login_local


def test_routing_failure_is_shown_not_crashing(page: Any, stack: Any) -> None:
    login_local(page, stack)
    page.click("#route-compute")
    page.wait_for_selector("#route-error:not([hidden])")
    assert "unreachable" in page.text_content("#route-error")
    assert page.evaluate("() => window.__roadkit.auth.isAuthenticated") is True


def test_route_is_drawn_saved_listed_and_deleted(page: Any, stack: Any) -> None:
    login_local(page, stack, "alice", "alice-password")
    page.wait_for_selector("#document-list li.empty")
    page.click("#route-straight")
    page.wait_for_selector("#route-drawing polyline.route-line")
    assert page.locator("#route-drawing circle").count() == 2
    page.fill("#save-title", "Palace to casino")
    page.click("#save")
    item = page.locator("#document-list li[data-id]")
    item.wait_for()
    assert item.locator(".doc-title").text_content() == "Palace to casino"
    assert item.locator(".doc-type").text_content() == "route"
    docs = page.evaluate("() => window.__roadkit.service.api.listDocuments()")
    assert [d["title"] for d in docs] == ["Palace to casino"]
    assert docs[0]["geojson"]["geometry"]["type"] == "LineString"
    # Redraw from the saved document, then delete it.
    item.locator(".doc-show").click()
    page.wait_for_selector("#route-drawing polyline.route-line")
    item.locator(".doc-delete").click()
    page.wait_for_selector("#document-list li.empty")
    assert page.evaluate("() => window.__roadkit.service.api.listDocuments()") == []
