"""The authorization endpoint, the login form and the SSO session cookies.

Checks run in Keycloak's order: client, then ``redirect_uri`` (both answered with an error
page), then response type, response mode, scope and PKCE (answered by redirecting back with
``error``, ``error_description``, ``state`` and ``iss``).
"""

from __future__ import annotations

import hmac
import html
import secrets
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from .config import Client
from .context import AUTH_SESSION_COOKIE, IDENTITY_COOKIE, SESSION_COOKIE, Iam
from .http import NO_STORE, content_security_policy, error_page, page
from .pkce import check_authorization_params
from .state import UserSession
from .tokens import unknown_scopes

_KEPT_PARAMS = (
    "client_id",
    "redirect_uri",
    "response_type",
    "response_mode",
    "scope",
    "state",
    "nonce",
    "code_challenge",
    "code_challenge_method",
    "prompt",
    "login_hint",
)
_RESPONSE_MODES = ("query", "fragment", "form_post")
#: The form_post page's only script, allowed by its hash.
_AUTO_SUBMIT = "document.forms[0].submit()"


def redirect_uri_allowed(client: Client, redirect_uri: str) -> bool:
    """Exact match against the client's redirect URIs; a trailing ``*`` is a prefix wildcard (Keycloak)."""
    for allowed in client.redirect_uris:
        if allowed.endswith("*"):
            if redirect_uri.startswith(allowed[:-1]):
                return True
        elif redirect_uri == allowed:
            return True
    return False


def _respond(redirect_uri: str, mode: str, params: dict[str, str]) -> Response:
    """Send authorization response parameters back by query, fragment or auto-posted form."""
    values = {k: v for k, v in params.items() if v is not None}
    if mode == "form_post":
        inputs = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in values.items())
        body = (
            f'<form method="post" action="{html.escape(redirect_uri)}">{inputs}<noscript><button>Continue</button></noscript>'
            f"</form><script>{_AUTO_SUBMIT}</script>"
        )
        headers = {**NO_STORE, "Content-Security-Policy": content_security_policy(script=_AUTO_SUBMIT)}
        return HTMLResponse(f"<!doctype html><html><body>{body}</body></html>", headers=headers)
    if mode == "fragment":
        location = f"{redirect_uri}#{urlencode(values)}"
    else:
        location = f"{redirect_uri}{'&' if '?' in redirect_uri else '?'}{urlencode(values)}"
    return RedirectResponse(location, status_code=302, headers=NO_STORE)


def _error_redirect(iam: Iam, params: dict[str, str], error: str, description: str | None) -> Response:
    mode = params.get("response_mode") if params.get("response_mode") in _RESPONSE_MODES else "query"
    values = {"error": error, "error_description": description, "state": params.get("state"), "iss": iam.config.issuer}
    return _respond(params["redirect_uri"], mode or "query", values)  # type: ignore[arg-type]


def current_session(iam: Iam, request: Request) -> UserSession | None:
    """The active SSO session named by the browser's identity cookie, if any."""
    cookie = request.cookies.get(IDENTITY_COOKIE)
    if not cookie:
        return None
    claims = iam.keys.verify(cookie)
    if not claims or claims.get("typ") != "Serialized-ID" or claims.get("iss") != iam.config.issuer:
        return None
    session = iam.state.active_session(claims.get("sid"))
    if session is None or session.user_id != claims.get("sub"):
        return None
    user = iam.config.user_by_id(session.user_id)
    return session if user is not None and user.enabled else None


def set_session_cookies(iam: Iam, response: Response, session: UserSession) -> None:
    """Set KEYCLOAK_IDENTITY (HttpOnly, signed) and KEYCLOAK_SESSION for a new SSO session."""
    lifetime = iam.config.lifetimes.sso_session_max
    identity = iam.keys.sign(
        {
            "typ": "Serialized-ID",
            "iss": iam.config.issuer,
            "sub": session.user_id,
            "sid": session.id,
            "iat": iam.clock.now_int(),
            "exp": int(session.started) + lifetime,
        }
    )
    samesite = "none" if iam.secure_cookies else "lax"
    common = {"path": iam.cookie_path, "secure": iam.secure_cookies, "samesite": samesite}
    response.set_cookie(IDENTITY_COOKIE, identity, httponly=True, **common)  # type: ignore[arg-type]
    response.set_cookie(SESSION_COOKIE, session.id, max_age=lifetime, httponly=False, **common)  # type: ignore[arg-type]


def clear_session_cookies(iam: Iam, response: Response) -> None:
    """Expire the SSO cookies."""
    for name in (IDENTITY_COOKIE, SESSION_COOKIE):
        response.delete_cookie(name, path=iam.cookie_path)


def issue_code_redirect(iam: Iam, params: dict[str, str], session: UserSession) -> Response:
    """Success: a single-use code, with ``state``, ``session_state`` and ``iss`` (Keycloak's order)."""
    iam.state.touch(session)
    code = iam.state.issue_code(
        client_id=params["client_id"],
        redirect_uri=params["redirect_uri"],
        session_id=session.id,
        user_id=session.user_id,
        scope=params.get("scope") or "",
        nonce=params.get("nonce") or None,
        code_challenge=params.get("code_challenge") or None,
        code_challenge_method=(params.get("code_challenge_method") or ("plain" if params.get("code_challenge") else None)),
    )
    values = {"state": params.get("state"), "session_state": session.id, "iss": iam.config.issuer, "code": code.code}
    return _respond(params["redirect_uri"], params.get("response_mode") or "query", values)  # type: ignore[arg-type]


def login_form(iam: Iam, tab_id: str, client_id: str, username: str = "", error: str | None = None) -> HTMLResponse:
    """The login form with Keycloak's element ids (``username``, ``password``, ``kc-login``)."""
    action = f"{iam.realm_path}/login-actions/authenticate?{urlencode({'tab_id': tab_id, 'client_id': client_id})}"
    alert = f'<div class="alert-error" id="input-error" role="alert">{html.escape(error)}</div>' if error else ""
    body = f"""{alert}<form id="kc-form-login" action="{html.escape(action)}" method="post">
<label for="username">Username or email</label>
<input tabindex="1" id="username" name="username" type="text" value="{html.escape(username)}" autofocus autocomplete="username">
<label for="password">Password</label>
<input tabindex="2" id="password" name="password" type="password" autocomplete="current-password">
<input tabindex="4" name="login" id="kc-login" type="submit" value="Sign In">
</form>"""
    return page(f"Sign in to {iam.config.realm}", body)


async def authorization_endpoint(request: Request) -> Response:
    """``GET|POST /realms/{realm}/protocol/openid-connect/auth``."""
    iam: Iam = request.app.state.iam
    source = await request.form() if request.method == "POST" else request.query_params
    params = {k: str(source[k]) for k in _KEPT_PARAMS if source.get(k) not in (None, "")}
    client_id = params.get("client_id")
    if not client_id:
        return error_page("Missing parameter: client_id")
    client = iam.config.client(client_id)
    if client is None:
        return error_page("Client not found.")
    redirect_uri = params.get("redirect_uri")
    if not redirect_uri or not redirect_uri_allowed(client, redirect_uri):
        return error_page("Invalid parameter: redirect_uri")

    mode = params.get("response_mode")
    if mode is not None and mode not in _RESPONSE_MODES:
        params.pop("response_mode")
        return _error_redirect(iam, params, "invalid_request", "Invalid parameter: response_mode")
    response_type = params.get("response_type")
    if not response_type:
        return _error_redirect(iam, params, "invalid_request", "Missing parameter: response_type")
    if response_type != "code":
        return _error_redirect(
            iam,
            params,
            "unauthorized_client",
            "Client is not allowed to initiate browser login with given response_type. Implicit flow is disabled for the client.",
        )
    if unknown_scopes(params.get("scope", "")):
        return _error_redirect(iam, params, "invalid_scope", f"Invalid scopes: {params.get('scope')}")
    if problem := check_authorization_params(client.pkce_method, params.get("code_challenge"), params.get("code_challenge_method")):
        return _error_redirect(iam, params, "invalid_request", problem)

    prompts = params.get("prompt", "").split()
    session = current_session(iam, request)
    if "none" in prompts:
        if session is None:
            return _error_redirect(iam, params, "login_required", None)
        return issue_code_redirect(iam, params, session)
    if session is not None and "login" not in prompts:
        return issue_code_redirect(iam, params, session)

    browser_id = request.cookies.get(AUTH_SESSION_COOKIE) or secrets.token_urlsafe(16)
    tx = iam.state.create_transaction(browser_id, params)
    response = login_form(iam, tx.tab_id, client_id, params.get("login_hint", ""))
    response.set_cookie(
        AUTH_SESSION_COOKIE,
        browser_id,
        path=iam.cookie_path,
        httponly=True,
        secure=iam.secure_cookies,
        samesite="none" if iam.secure_cookies else "lax",
    )
    return response


async def login_action(request: Request) -> Response:
    """``POST /realms/{realm}/login-actions/authenticate``: check the credentials, start the SSO session."""
    iam: Iam = request.app.state.iam
    tx = iam.state.take_transaction(request.query_params.get("tab_id", ""))
    if tx is None:
        return error_page("Your login attempt timed out. Login will start from the beginning.")
    if not hmac.compare_digest(request.cookies.get(AUTH_SESSION_COOKIE, ""), tx.browser_id):
        return error_page("Cookie not found. Please make sure cookies are enabled in your browser.")
    form = await request.form()
    username = str(form.get("username") or "")
    password = str(form.get("password") or "")
    user = iam.config.user_by_name(username) or next(
        (u for u in iam.config.users if u.email and u.email.lower() == username.strip().lower()), None
    )
    valid = user is not None and hmac.compare_digest(user.password.encode(), password.encode())
    if user is None or not valid:
        return login_form(iam, tx.tab_id, tx.params["client_id"], username, "Invalid username or password.")
    if not user.enabled:
        return login_form(iam, tx.tab_id, tx.params["client_id"], username, "Account is disabled, contact your administrator.")
    iam.state.transactions.pop(tx.tab_id, None)
    session = iam.state.create_session(user.id)
    response = issue_code_redirect(iam, tx.params, session)
    set_session_cookies(iam, response, session)
    return response
