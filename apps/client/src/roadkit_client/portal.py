"""The remote-mode portal: a server-side authorization code flow (confidential client + PKCE).

``GET /login?app=NAME`` starts the flow with a random ``state``, ``nonce`` and PKCE verifier
kept server-side and bound to a short-lived ``roadkit_login`` cookie; ``GET /login/callback``
checks them, exchanges the code, validates the tokens, opens a session behind the HttpOnly
``roadkit_session`` cookie and sends the browser to ``{app login URL}?success=1``
(``success=0`` on any failure). ``POST /logout?app=NAME`` ends both sessions; it needs the
session's CSRF token (``GET /csrf-token``) in ``X-CSRF-Token``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from .auth import SESSION_COOKIE
from .config import ClientConfig, PortalApp
from .errors import ApiError, BadRequest
from .middleware import origin_of
from .oidc import IamUnavailable, InvalidToken
from .sessions import TokenRequestFailed, hash_cookie
from .storage import LoginRequest

log = logging.getLogger("roadkit_client.portal")

LOGIN_COOKIE = "roadkit_login"
CSRF_HEADER = "X-CSRF-Token"


def _with_query(url: str, **params: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{urlencode(params)}"


def _app(config: ClientConfig, name: str | None) -> tuple[str, PortalApp]:
    if not name:
        raise BadRequest("app: missing; expected one of " + ", ".join(sorted(config.portal.apps)))
    app = config.portal.apps.get(name)
    if app is None:
        raise BadRequest(f"app: unknown application {name!r}; expected one of " + ", ".join(sorted(config.portal.apps)))
    return name, app


def _secure(config: ClientConfig) -> bool:
    return config.backend.remote_url.startswith("https://")


def _cookie_path(config: ClientConfig, below: str = "") -> str:
    """A cookie path under the portal's address as the browser sees it (a proxy may put it under ``/api``)."""
    prefix = urlsplit(config.backend.remote_url).path.rstrip("/")
    return f"{prefix}{below}" or "/"


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})


def callback_url(config: ClientConfig) -> str:
    """The portal client's registered redirect URI, at the portal's remote-mode address."""
    return f"{config.backend.remote_url}/login/callback"


async def login(request: Request) -> Response:
    """``GET /login?app=NAME``: redirect to the IAM's authorization endpoint."""
    config: ClientConfig = request.app.state.config
    name, app = _app(config, request.query_params.get("app"))
    try:
        authorize = await request.app.state.provider.endpoint("authorization_endpoint")
    except IamUnavailable as exc:
        log.warning("portal login: %s", exc)
        return _redirect(_with_query(app.login, success="0"))
    handle = secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()
    pending = LoginRequest(
        id_hash=hash_cookie(handle),
        state=secrets.token_urlsafe(24),
        code_verifier=verifier,
        nonce=secrets.token_urlsafe(24),
        app=name,
        created_at=request.app.state.now(),
    )
    await request.app.state.storage.save_login_request(
        pending, expired_before=pending.created_at - config.portal.login_timeout, max_pending=config.portal.max_pending_logins
    )
    query = {
        "client_id": config.portal.client_id,
        "response_type": "code",
        "redirect_uri": callback_url(config),
        "scope": config.portal.scope,
        "state": pending.state,
        "nonce": pending.nonce,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    response = _redirect(f"{authorize}?{urlencode(query)}")
    response.set_cookie(
        LOGIN_COOKIE,
        handle,
        max_age=config.portal.login_timeout,
        path=_cookie_path(config, "/login"),
        httponly=True,
        samesite="lax",
        secure=_secure(config),
    )
    return response


async def _complete(request: Request, pending: LoginRequest, app: PortalApp) -> str | None:
    """Check the callback and exchange the code; returns the new session cookie or None."""
    config: ClientConfig = request.app.state.config
    params = request.query_params
    provider = request.app.state.provider
    if request.app.state.now() - pending.created_at > config.portal.login_timeout:
        log.info("portal callback: login request expired")
        return None
    if not hmac.compare_digest(params.get("state", ""), pending.state):
        log.info("portal callback: state mismatch")
        return None
    if params.get("error"):
        log.info("portal callback: the IAM answered error=%s", str(params.get("error"))[:64])
        return None
    if params.get("iss") is not None and params.get("iss") != provider.issuer:
        log.info("portal callback: unexpected iss parameter")
        return None
    code = params.get("code")
    if not code:
        log.info("portal callback: no code")
        return None
    try:
        tokens = await request.app.state.portal_client.exchange_code(code, callback_url(config), pending.code_verifier)
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise InvalidToken("no ID token")
        await provider.validate_id_token(id_token, config.portal.client_id, pending.nonce)
        claims = await provider.validate_access_token(tokens["access_token"], config.authorized_parties)
    except TokenRequestFailed as failure:
        log.info("portal callback: code exchange refused: %s", failure)
        return None
    except (InvalidToken, IamUnavailable) as exc:
        log.info("portal callback: %s", exc)
        return None
    cookie: str = await request.app.state.sessions.create(str(claims["sub"]), tokens)
    return cookie


async def login_callback(request: Request) -> Response:
    """``GET /login/callback``: finish the login and send the browser back to the app."""
    config: ClientConfig = request.app.state.config
    handle = request.cookies.get(LOGIN_COOKIE)
    pending = await request.app.state.storage.take_login_request(hash_cookie(handle)) if handle else None
    if pending is None or pending.app not in config.portal.apps:
        log.info("portal callback: no login in progress for this browser")
        default_app = next(iter(config.portal.apps.values()))
        response = _redirect(_with_query(default_app.login, success="0"))
        response.delete_cookie(LOGIN_COOKIE, path=_cookie_path(config, "/login"))
        return response
    app = config.portal.apps[pending.app]
    cookie = await _complete(request, pending, app)
    response = _redirect(_with_query(app.login, success="1" if cookie else "0"))
    response.delete_cookie(LOGIN_COOKIE, path=_cookie_path(config, "/login"))
    if cookie:
        previous = request.cookies.get(SESSION_COOKIE)
        if previous:
            await request.app.state.sessions.end(previous)
        response.set_cookie(
            SESSION_COOKIE,
            cookie,
            max_age=config.portal.session_lifetime,
            path=_cookie_path(config),
            httponly=True,
            samesite="lax",
            secure=_secure(config),
        )
    return response


def csrf_token(cookie: str) -> str:
    """The CSRF token of the session behind ``cookie``.

    Derived from the HttpOnly cookie, so a page gets it only from ``GET /csrf-token``, whose
    answer only the application's origins may read (CORS).
    """
    digest = hmac.new(cookie.encode("latin-1"), b"roadkit-portal-csrf", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _check_origin(request: Request, config: ClientConfig) -> None:
    origin = request.headers.get("origin")
    allowed = {*config.backend.cors_origins, origin_of(config.backend.public_url), origin_of(config.backend.remote_url)}
    if origin is not None and origin not in allowed:
        raise ApiError(403, "forbidden_origin", f"Origin: {origin[:100]!r} is not an origin of the application (backend.cors_origins)")


async def csrf(request: Request) -> Response:
    """``GET /csrf-token``: ``{"csrfToken"}`` of the caller's portal session (401 without one)."""
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie or await request.app.state.storage.get_session(hash_cookie(cookie)) is None:
        raise ApiError(401, "unauthorized", "no portal session: sign in first")
    return JSONResponse({"csrfToken": csrf_token(cookie)}, headers={"Cache-Control": "no-store"})


async def logout(request: Request) -> Response:
    """``POST /logout?app=NAME``: end the IAM and portal sessions, clear the cookie.

    Answers ``{"redirect": "{app logout URL}?success=1"}``, where the app then goes. A request
    from another origin (403 ``forbidden_origin``) or with a session but without its token in
    ``X-CSRF-Token`` (403 ``csrf_token_invalid``) changes nothing.
    """
    config: ClientConfig = request.app.state.config
    _, app = _app(config, request.query_params.get("app"))
    _check_origin(request, config)
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        sent = request.headers.get(CSRF_HEADER, "")
        if not hmac.compare_digest(sent.encode("latin-1"), csrf_token(cookie).encode("ascii")):
            raise ApiError(403, "csrf_token_invalid", f"{CSRF_HEADER}: missing or wrong; expected the csrfToken of GET /csrf-token")
        await request.app.state.sessions.end(cookie)
    target = app.logout or f"{config.app.public_url.rstrip('/')}/"
    response = JSONResponse({"redirect": _with_query(target, success="1")}, headers={"Cache-Control": "no-store"})
    response.delete_cookie(SESSION_COOKIE, path=_cookie_path(config), httponly=True, samesite="lax", secure=_secure(config))
    return response
