"""CORS, security headers, the static app and its public settings."""

from __future__ import annotations

import httpx

from .apps_support import Stack


def test_cors_preflight_allows_authorization_from_app_origin(stack: Stack) -> None:
    response = httpx.options(
        f"{stack.backend_url}/documents",
        headers={
            "Origin": stack.app_url,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, x-requested-with",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == stack.app_url
    assert response.headers["access-control-allow-credentials"] == "true"
    allowed = response.headers["access-control-allow-headers"].lower()
    assert "authorization" in allowed and "content-type" in allowed and "x-requested-with" in allowed
    assert "DELETE" in response.headers["access-control-allow-methods"]


def test_cors_preflight_refuses_other_origins(stack: Stack) -> None:
    response = httpx.options(
        f"{stack.backend_url}/me",
        headers={"Origin": "http://evil.test", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"},
    )
    assert response.status_code == 400 and "access-control-allow-origin" not in response.headers


def test_cors_on_actual_responses_with_credentials_and_exposed_headers(stack: Stack) -> None:
    response = httpx.get(f"{stack.backend_url}/me", headers={"Origin": stack.app_url})
    assert response.status_code == 401
    assert response.headers["access-control-allow-origin"] == stack.app_url
    assert response.headers["access-control-allow-credentials"] == "true"
    exposed = response.headers["access-control-expose-headers"].lower()
    assert "www-authenticate" in exposed and "content-range" in exposed


def test_backend_security_headers(stack: Stack) -> None:
    response = httpx.get(f"{stack.backend_url}/me")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["cache-control"] == "no-store"


def test_unknown_route_and_method_are_json_errors(stack: Stack) -> None:
    missing = httpx.get(f"{stack.backend_url}/nope")
    assert missing.status_code == 404 and missing.json()["error"]["errorType"] == "not_found"
    wrong = httpx.put(f"{stack.backend_url}/documents")
    assert wrong.status_code == 405


def test_settings_json_is_public_and_never_has_the_secret(stack: Stack) -> None:
    response = httpx.get(f"{stack.app_url}/settings.json")
    settings = response.json()
    assert settings["mode"] == "local" and settings["IamUrl"] == stack.iam.url and settings["IamRealm"] == "roadkit"
    assert settings["IamClientId"] == "roadkit-app" and settings["IamScope"] == "openid"
    assert settings["IamEntrepotApiUrl"] == stack.backend_url == settings["IamEntrepotApiUrlRemote"]
    assert settings["RoutingUrl"] and settings["RoutingResource"] == "monaco-osrm"
    assert "roadkit-portal-dev-secret" not in response.text and "IamClientSecret" not in settings
    assert httpx.get(f"{stack.app_url}/settings.json", params={"mode": "remote"}).json()["mode"] == "remote"
    assert httpx.get(f"{stack.app_url}/settings.json", params={"mode": "bogus"}).status_code == 400


def test_mode_override_is_ignored_unless_allowed() -> None:
    from .apps_support import running_stack

    with running_stack({"allow_mode_override": False}) as stack:
        assert httpx.get(f"{stack.app_url}/settings.json", params={"mode": "remote"}).json()["mode"] == "local"


def test_static_app_serves_pages_with_csp(stack: Stack) -> None:
    index = httpx.get(f"{stack.app_url}/")
    assert index.status_code == 200 and "text/html" in index.headers["content-type"]
    csp = index.headers["content-security-policy"]
    assert f"frame-src 'self' {stack.iam.url}" in csp and stack.backend_url in csp
    assert httpx.get(f"{stack.app_url}/login").status_code == 200
    assert httpx.get(f"{stack.app_url}/silent-check.html").status_code == 200
    assert httpx.get(f"{stack.app_url}/modules/service.js").status_code == 200
