"""End-session (logout), userinfo and introspection endpoints."""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from .authorize import clear_session_cookies, current_session, redirect_uri_allowed
from .config import Client
from .context import Iam
from .http import NO_STORE, add_cors, allowed_origins, error_page, oauth_error, page
from .token_endpoint import OAuthFailure, authenticate_client

_CONFIRM_TYP = "Logout-Confirm"


def _post_logout_allowed(client: Client, uri: str) -> bool:
    for allowed in client.post_logout_redirect_uris:
        if allowed == "+":
            if redirect_uri_allowed(client, uri):
                return True
        elif (allowed.endswith("*") and uri.startswith(allowed[:-1])) or uri == allowed:
            return True
    return False


def _finish_logout(iam: Iam, request: Request, session_ids: set[str], redirect: str | None, state: str | None) -> Response:
    for session_id in session_ids:
        iam.state.end_session(session_id)
    if redirect:
        query = urlencode({"state": state}) if state else ""
        target = f"{redirect}{('&' if '?' in redirect else '?') + query if query else ''}"
        response: Response = RedirectResponse(target, status_code=302, headers=NO_STORE)
    else:
        response = page("You are logged out", '<p id="kc-info-message">You are logged out</p>')
    clear_session_cookies(iam, response)
    return response


async def logout_endpoint(request: Request) -> Response:
    """``GET|POST /realms/{realm}/protocol/openid-connect/logout`` (OIDC RP-initiated logout).

    A form POST carrying ``refresh_token`` is Keycloak's back-channel logout: the client
    authenticates, the session ends and the answer is 204.
    """
    iam: Iam = request.app.state.iam
    form = await request.form() if request.method == "POST" else None
    if form is not None and form.get("refresh_token"):
        return await _backchannel_logout(iam, request)
    params = form if form is not None else request.query_params
    id_token_hint = params.get("id_token_hint")
    client_id = params.get("client_id")
    redirect = params.get("post_logout_redirect_uri")
    state = params.get("state")
    if redirect and not client_id and not id_token_hint:
        return error_page(
            "Either the parameter 'client_id' or the parameter 'id_token_hint' is required when 'post_logout_redirect_uri' is used."
        )
    hint_claims: dict[str, Any] | None = None
    if id_token_hint:
        hint_claims = iam.keys.verify(str(id_token_hint))
        if not hint_claims or hint_claims.get("typ") != "ID" or hint_claims.get("iss") != iam.config.issuer:
            return error_page("Invalid IDToken")
        if client_id and hint_claims.get("aud") != client_id:
            return error_page("Parameter client_id different than the client for which ID Token was issued")
        client_id = client_id or hint_claims.get("aud")
    client = iam.config.client(str(client_id)) if client_id else None
    if client_id and client is None:
        return error_page("Invalid parameter: client_id")
    if redirect and (client is None or not _post_logout_allowed(client, str(redirect))):
        return error_page("Invalid redirect uri")
    browser_session = current_session(iam, request)
    sessions = {browser_session.id} if browser_session else set()
    if hint_claims:
        sessions.add(str(hint_claims.get("sid")))
    if hint_claims or not sessions:
        return _finish_logout(iam, request, sessions, str(redirect) if redirect else None, str(state) if state else None)
    # No ID token hint: Keycloak asks the user to confirm.
    session_code = iam.keys.sign(
        {
            "typ": _CONFIRM_TYP,
            "sid": next(iter(sessions)),
            "redirect": redirect,
            "state": state,
            "exp": iam.clock.now_int() + iam.config.lifetimes.login_timeout,
        }
    )
    action = f"{iam.endpoint('logout')}/logout-confirm"
    body = (
        f'<p class="instruction">Do you want to log out?</p><form action="{html.escape(action)}" method="post">'
        f'<input type="hidden" name="session_code" value="{html.escape(session_code)}">'
        '<input type="submit" name="confirmLogout" id="kc-logout" value="Logout"></form>'
    )
    return page("Logging out", body)


async def logout_confirm(request: Request) -> Response:
    """``POST .../logout/logout-confirm``: the user confirmed the logout."""
    iam: Iam = request.app.state.iam
    form = await request.form()
    claims = iam.keys.verify(str(form.get("session_code") or ""))
    if not claims or claims.get("typ") != _CONFIRM_TYP or int(claims.get("exp", 0)) < iam.clock.now_int():
        return error_page("Logout failed")
    return _finish_logout(iam, request, {str(claims["sid"])}, claims.get("redirect"), claims.get("state"))


async def _backchannel_logout(iam: Iam, request: Request) -> Response:
    form = await request.form()
    try:
        client = authenticate_client(iam, request, form)
    except OAuthFailure as failure:
        return oauth_error(failure.error, failure.description, failure.status)
    claims = iam.keys.verify(str(form.get("refresh_token")))
    if not claims or claims.get("typ") != "Refresh" or claims.get("iss") != iam.config.issuer:
        return oauth_error("invalid_grant", "Invalid refresh token")
    if claims.get("azp") != client.client_id:
        return oauth_error("invalid_grant", "Invalid refresh token. Token client and authorized client don't match")
    if iam.state.active_session(claims.get("sid")) is None:
        return oauth_error("invalid_grant", "Session not active")
    iam.state.end_session(str(claims["sid"]))
    return Response(status_code=204, headers=NO_STORE)


def _bearer_error(iam: Iam, error: str, description: str) -> JSONResponse:
    header = f'Bearer realm="{iam.config.realm}", error="{error}", error_description="{description}"'
    return oauth_error(error, description, 401, {"WWW-Authenticate": header})


def validate_access_token(iam: Iam, token: str) -> dict[str, Any] | None:
    """Claims of an active access token of this realm (signature, issuer, expiry, revocation, session)."""
    claims = iam.keys.verify(token)
    if not claims or claims.get("typ") != "Bearer" or claims.get("iss") != iam.config.issuer:
        return None
    if int(claims.get("exp", 0)) < iam.clock.now_int() or claims.get("jti") in iam.state.revoked_access_jtis:
        return None
    if iam.state.active_session(claims.get("sid")) is None:
        return None
    return claims


async def userinfo_endpoint(request: Request) -> Response:
    """``GET|POST /realms/{realm}/protocol/openid-connect/userinfo``."""
    iam: Iam = request.app.state.iam
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        response: Response = _bearer_error(iam, "invalid_request", "Token not provided")
    elif (claims := validate_access_token(iam, token.strip())) is None:
        response = _bearer_error(iam, "invalid_token", "Token verification failed")
    else:
        keys = ("sub", "email_verified", "name", "preferred_username", "given_name", "family_name", "email")
        response = JSONResponse({k: claims[k] for k in keys if k in claims}, headers=NO_STORE)
        client = iam.config.client(claims.get("azp"))
        if client:
            return add_cors(response, request, allowed_origins(client.web_origins, client.redirect_uris))
    return add_cors(response, request, None)


async def introspection_endpoint(request: Request) -> Response:
    """``POST .../token/introspect``: RFC 7662 for authenticated clients."""
    iam: Iam = request.app.state.iam
    form = await request.form()
    try:
        authenticate_client(iam, request, form)
    except OAuthFailure as failure:
        return oauth_error(failure.error, failure.description, failure.status)
    token = str(form.get("token") or "")
    claims = validate_access_token(iam, token)
    if claims is None:
        refresh = iam.keys.verify(token)
        if (
            refresh
            and refresh.get("typ") == "Refresh"
            and int(refresh.get("exp", 0)) >= iam.clock.now_int()
            and iam.state.active_session(refresh.get("sid")) is not None
        ):
            claims = refresh
    if claims is None:
        return JSONResponse({"active": False}, headers=NO_STORE)
    body = {
        **claims,
        "client_id": claims.get("azp"),
        "username": claims.get("preferred_username"),
        "token_type": claims.get("typ"),
        "active": True,
    }
    return JSONResponse(body, headers=NO_STORE)
