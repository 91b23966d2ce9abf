"""The Starlette application: Keycloak's realm paths, discovery, JWKS and the test-only controls."""

from __future__ import annotations

import html
import json
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from roadkit_support.security import SecurityHeaders

from .authorize import authorization_endpoint, login_action
from .config import IamConfig
from .context import Iam
from .http import SECURITY_HEADERS, add_cors, content_security_policy, page, preflight
from .session_endpoints import introspection_endpoint, logout_confirm, logout_endpoint, userinfo_endpoint
from .token_endpoint import revocation_endpoint, token_endpoint


def discovery_document(iam: Iam) -> dict[str, Any]:
    """The OpenID Provider metadata, with Keycloak's field names and endpoint paths."""
    issuer = iam.config.issuer
    return {
        "issuer": issuer,
        "authorization_endpoint": iam.endpoint("auth"),
        "token_endpoint": iam.endpoint("token"),
        "introspection_endpoint": iam.endpoint("token/introspect"),
        "userinfo_endpoint": iam.endpoint("userinfo"),
        "end_session_endpoint": iam.endpoint("logout"),
        "frontchannel_logout_session_supported": True,
        "frontchannel_logout_supported": True,
        "jwks_uri": iam.endpoint("certs"),
        "check_session_iframe": iam.endpoint("login-status-iframe.html"),
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "response_types_supported": ["code"],
        "subject_types_supported": ["public", "pairwise"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "userinfo_signing_alg_values_supported": ["none"],
        "request_object_signing_alg_values_supported": ["none"],
        "response_modes_supported": ["query", "fragment", "form_post"],
        "registration_endpoint": f"{issuer}/clients-registrations/openid-connect",
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "claims_supported": [
            "aud",
            "sub",
            "iss",
            "auth_time",
            "name",
            "given_name",
            "family_name",
            "preferred_username",
            "email",
            "acr",
            "sid",
            "email_verified",
        ],
        "claim_types_supported": ["normal"],
        "claims_parameter_supported": True,
        "scopes_supported": ["openid", "profile", "email", "roles", "web-origins", "acr", "basic", "address", "phone"],
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
        "require_request_uri_registration": False,
        "code_challenge_methods_supported": ["plain", "S256"],
        "tls_client_certificate_bound_access_tokens": False,
        "revocation_endpoint": iam.endpoint("revoke"),
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "backchannel_logout_supported": True,
        "backchannel_logout_session_supported": True,
        "authorization_response_iss_parameter_supported": True,
    }


async def discovery(request: Request) -> Response:
    """``GET /realms/{realm}/.well-known/openid-configuration``."""
    iam: Iam = request.app.state.iam
    return add_cors(JSONResponse(discovery_document(iam)), request, {"*"})


async def certs(request: Request) -> Response:
    """``GET /realms/{realm}/protocol/openid-connect/certs``: the public JWKS."""
    iam: Iam = request.app.state.iam
    return add_cors(JSONResponse(iam.keys.jwks(), headers={"Cache-Control": "no-cache"}), request, {"*"})


async def realm_info(request: Request) -> Response:
    """``GET /realms/{realm}``: Keycloak's public realm description."""
    iam: Iam = request.app.state.iam
    return JSONResponse(
        {
            "realm": iam.config.realm,
            "token-service": f"{iam.config.issuer}/protocol/openid-connect",
            "account-service": f"{iam.config.issuer}/account",
            "tokens-not-before": 0,
        }
    )


_STEP_SCRIPTS = {
    "step1": """
document.cookie = "KEYCLOAK_3P_COOKIE_SAMESITE=supported; max-age=60; samesite=none; secure";
document.cookie = "KEYCLOAK_3P_COOKIE=supported; max-age=60";
window.location = "step2.html";
""",
    "step2": """
var ok = document.cookie.indexOf("KEYCLOAK_3P_COOKIE") !== -1;
document.cookie = "KEYCLOAK_3P_COOKIE_SAMESITE=; max-age=0; samesite=none; secure";
document.cookie = "KEYCLOAK_3P_COOKIE=; max-age=0";
window.parent.postMessage(ok ? "supported" : "unsupported", "*");
""",
}


async def third_party_cookies(request: Request) -> Response:
    """keycloak-js's third-party cookie check pages (``3p-cookies/step1.html``, ``step2.html``)."""
    step = request.path_params["step"]
    script = _STEP_SCRIPTS.get(step)
    if script is None:
        return Response(status_code=404)
    # keycloak-js loads these in a hidden iframe of the application, whatever its origin.
    csp = content_security_policy(script=script, frame_ancestors="*")
    return HTMLResponse(f"<!doctype html><html><body><script>{script}</script></body></html>", headers={"Content-Security-Policy": csp})


async def account(request: Request) -> Response:
    """``GET /realms/{realm}/account``: a minimal stand-in for the account console."""
    from .authorize import current_session

    iam: Iam = request.app.state.iam
    session = current_session(iam, request)
    user = iam.config.user_by_id(session.user_id) if session else None
    text = f"Signed in as {user.username} ({user.email})" if user else "Not signed in."
    return page("Account", f'<p id="account-info">{html.escape(text)}</p>')


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {"__invalid__": True}
    return data if isinstance(data, dict) else {"__invalid__": True}


async def testing_clock(request: Request) -> Response:
    """``POST /_testing/clock`` ``{"advance": seconds}``: move the IAM's clock forward."""
    iam: Iam = request.app.state.iam
    data = await _json_body(request)
    advance = data.get("advance")
    if isinstance(advance, bool) or not isinstance(advance, (int, float)) or advance < 0:
        return JSONResponse({"error": "advance: expected a number of seconds >= 0"}, status_code=400)
    return JSONResponse({"offset": iam.clock.advance(float(advance)), "now": iam.clock.now()})


async def testing_end_sessions(request: Request) -> Response:
    """``POST /_testing/sessions/end`` ``{"username": "demo"}`` or ``{}`` for every session."""
    iam: Iam = request.app.state.iam
    data = await _json_body(request)
    username = data.get("username")
    if "__invalid__" in data or (username is not None and not isinstance(username, str)):
        return JSONResponse({"error": "expected a JSON object with an optional string 'username'"}, status_code=400)
    user_id = None
    if username is not None:
        user = iam.config.user_by_name(username)
        if user is None:
            return JSONResponse({"error": f"username: no user {username!r}"}, status_code=404)
        user_id = user.id
    return JSONResponse({"ended": iam.state.end_sessions_of(user_id)})


async def testing_rotate_keys(request: Request) -> Response:
    """``POST /_testing/keys/rotate`` ``{"keep_previous": true}``: switch to a new signing key."""
    iam: Iam = request.app.state.iam
    data = await _json_body(request)
    return JSONResponse({"kid": iam.keys.rotate(keep_previous=bool(data.get("keep_previous", True)))})


async def testing_state(request: Request) -> Response:
    """``GET /_testing/state``: sessions and counters (no token or code values)."""
    iam: Iam = request.app.state.iam
    return JSONResponse({**iam.state.diagnostics(), "kid": iam.keys.kid, "issuer": iam.config.issuer})


def _options(methods: str) -> Any:
    async def handler(request: Request) -> Response:
        return preflight(request, methods)

    return handler


def create_app(config: IamConfig) -> Starlette:
    """Build the development IAM for ``config``; test-only routes exist only when ``config.testing``."""
    iam = Iam.build(config)
    oidc = f"/realms/{config.realm}/protocol/openid-connect"
    routes = [
        Route(f"/realms/{config.realm}", realm_info),
        Route(f"/realms/{config.realm}/.well-known/openid-configuration", discovery),
        Route(f"{oidc}/auth", authorization_endpoint, methods=["GET", "POST"]),
        Route(f"/realms/{config.realm}/login-actions/authenticate", login_action, methods=["POST"]),
        Route(f"{oidc}/token", token_endpoint, methods=["POST"]),
        Route(f"{oidc}/token", _options("POST, OPTIONS"), methods=["OPTIONS"]),
        Route(f"{oidc}/token/introspect", introspection_endpoint, methods=["POST"]),
        Route(f"{oidc}/certs", certs),
        Route(f"{oidc}/userinfo", userinfo_endpoint, methods=["GET", "POST"]),
        Route(f"{oidc}/userinfo", _options("GET, POST, OPTIONS"), methods=["OPTIONS"]),
        Route(f"{oidc}/revoke", revocation_endpoint, methods=["POST"]),
        Route(f"{oidc}/revoke", _options("POST, OPTIONS"), methods=["OPTIONS"]),
        Route(f"{oidc}/logout", logout_endpoint, methods=["GET", "POST"]),
        Route(f"{oidc}/logout/logout-confirm", logout_confirm, methods=["POST"]),
        Route(f"{oidc}/3p-cookies/{{step:str}}.html", third_party_cookies),
        Route(f"/realms/{config.realm}/account", account),
    ]
    if config.testing:
        routes += [
            Route("/_testing/clock", testing_clock, methods=["POST"]),
            Route("/_testing/sessions/end", testing_end_sessions, methods=["POST"]),
            Route("/_testing/keys/rotate", testing_rotate_keys, methods=["POST"]),
            Route("/_testing/state", testing_state),
        ]
    hsts = config.public_url.startswith("https://")
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders, headers=SECURITY_HEADERS, hsts=hsts)])
    app.state.iam = iam
    return app
