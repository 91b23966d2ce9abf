"""The token endpoint (authorization code and refresh token grants) and token revocation.

Error codes, descriptions and statuses are Keycloak's (auth-reference §10): 400
``invalid_grant``/``invalid_request`` for grant problems, 401 ``invalid_client`` for client
authentication failures.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from typing import Any
from urllib.parse import unquote

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .config import Client
from .context import Iam
from .http import NO_STORE, add_cors, allowed_origins, oauth_error
from .pkce import check_token_verifier
from .tokens import granted_scope


class OAuthFailure(Exception):
    """An OAuth error response to send: ``error``, ``error_description`` and HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


def _basic_credentials(request: Request) -> tuple[str, str] | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic" or not value:
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthFailure("invalid_client", "Invalid client or Invalid client credentials", 401) from None
    client_id, sep, secret = decoded.partition(":")
    if not sep:
        raise OAuthFailure("invalid_client", "Invalid client or Invalid client credentials", 401)
    # RFC 6749 §2.3.1: both parts are form-urlencoded before Basic encoding.
    return unquote(client_id.replace("+", " ")), unquote(secret.replace("+", " "))


def authenticate_client(iam: Iam, request: Request, form: FormData) -> Client:
    """Identify the calling client (``client_id`` for public, Basic or ``client_secret`` for confidential)."""
    basic = _basic_credentials(request)
    client_id, secret = basic if basic else (form.get("client_id"), form.get("client_secret"))
    if not client_id:
        raise OAuthFailure("invalid_client", "Missing client_id parameter", 400)
    client = iam.config.client(str(client_id))
    if client is None:
        raise OAuthFailure("invalid_client", "Invalid client or Invalid client credentials", 401)
    if not client.public and not hmac.compare_digest(str(secret or "").encode(), client.secret.encode()):
        raise OAuthFailure("invalid_client", "Invalid client or Invalid client credentials", 401)
    return client


def _authorization_code_grant(iam: Iam, client: Client, form: FormData) -> dict[str, Any]:
    value = form.get("code")
    if not value:
        raise OAuthFailure("invalid_request", "Missing parameter: code")
    code = iam.state.consume_code(str(value))
    if code is None:
        raise OAuthFailure("invalid_grant", "Code not valid")
    if iam.clock.now() > code.expires_at:
        raise OAuthFailure("invalid_grant", "Code is expired")
    session = iam.state.active_session(code.session_id)
    if session is None:
        raise OAuthFailure("invalid_grant", "User session not found")
    user = iam.config.user_by_id(code.user_id)
    if user is None or not user.enabled:
        raise OAuthFailure("invalid_grant", "User disabled")
    if form.get("redirect_uri") != code.redirect_uri:
        raise OAuthFailure("invalid_grant", "Incorrect redirect_uri")
    if client.client_id != code.client_id:
        raise OAuthFailure("invalid_grant", "Auth error")
    verifier = form.get("code_verifier")
    if problem := check_token_verifier(code.code_challenge, code.code_challenge_method, str(verifier) if verifier else None):
        raise OAuthFailure("invalid_grant", problem)
    body = iam.issuer.token_response(user, client, session, granted_scope(code.scope), code.nonce)
    client_session = session.clients[client.client_id]
    client_session.current_refresh_jti = None
    client_session.refresh_use_count = 0
    return body


def _refresh_token_grant(iam: Iam, client: Client, form: FormData) -> dict[str, Any]:
    value = form.get("refresh_token")
    if not value:
        raise OAuthFailure("invalid_request", "Missing parameter: refresh_token")
    claims = iam.keys.verify(str(value))
    if claims is None or claims.get("typ") != "Refresh" or claims.get("iss") != iam.config.issuer:
        raise OAuthFailure("invalid_grant", "Invalid refresh token")
    if int(claims.get("exp", 0)) < iam.clock.now_int():
        raise OAuthFailure("invalid_grant", "Token is not active")
    if claims.get("azp") != client.client_id:
        raise OAuthFailure("invalid_grant", "Invalid refresh token. Token client and authorized client don't match")
    session = iam.state.active_session(claims.get("sid"))
    if session is None:
        raise OAuthFailure("invalid_grant", "Session not active")
    user = iam.config.user_by_id(session.user_id)
    if user is None or not user.enabled:
        raise OAuthFailure("invalid_grant", "User disabled")
    client_session = session.clients.get(client.client_id)
    if client_session is None:
        raise OAuthFailure("invalid_grant", "Session doesn't have required client")
    policy = iam.config.refresh
    if policy.revoke_refresh_token:
        jti = str(claims.get("jti"))
        if jti in client_session.used_refresh_jtis and jti != client_session.current_refresh_jti:
            raise OAuthFailure("invalid_grant", "Stale token")
        if jti != client_session.current_refresh_jti:
            client_session.current_refresh_jti = jti
            client_session.refresh_use_count = 0
            client_session.used_refresh_jtis.add(jti)
        if client_session.refresh_use_count > policy.max_reuse:
            # Keycloak ends the client session: a leaked refresh token cannot outlive its reuse.
            session.clients.pop(client.client_id, None)
            raise OAuthFailure("invalid_grant", "Maximum allowed refresh token reuse exceeded")
        client_session.refresh_use_count += 1
    return iam.issuer.token_response(user, client, session, str(claims.get("scope", "")), None)


async def token_endpoint(request: Request) -> Response:
    """``POST /realms/{realm}/protocol/openid-connect/token``."""
    iam: Iam = request.app.state.iam
    client: Client | None = None
    try:
        form = await _read_form(request)
        grant_type = form.get("grant_type")
        if not grant_type:
            raise OAuthFailure("invalid_request", "Missing form parameter: grant_type")
        client = authenticate_client(iam, request, form)
        if grant_type == "authorization_code":
            body = _authorization_code_grant(iam, client, form)
        elif grant_type == "refresh_token":
            body = _refresh_token_grant(iam, client, form)
        else:
            raise OAuthFailure("unsupported_grant_type", "Unsupported grant_type")
        response: Response = JSONResponse(body, headers=NO_STORE)
    except OAuthFailure as failure:
        response = oauth_error(failure.error, failure.description, failure.status)
    origins = allowed_origins(client.web_origins, client.redirect_uris) if client else set()
    return add_cors(response, request, origins)


async def _read_form(request: Request) -> FormData:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise OAuthFailure("invalid_request", "Unsupported content type; use application/x-www-form-urlencoded")
    return await request.form()


async def revocation_endpoint(request: Request) -> Response:
    """``POST /realms/{realm}/protocol/openid-connect/revoke`` (RFC 7009, Keycloak's behaviour)."""
    iam: Iam = request.app.state.iam
    client: Client | None = None
    try:
        form = await _read_form(request)
        client = authenticate_client(iam, request, form)
        token = form.get("token")
        if not token:
            raise OAuthFailure("invalid_request", "Token not provided")
        hint = form.get("token_type_hint")
        if hint not in (None, "", "access_token", "refresh_token"):
            raise OAuthFailure("unsupported_token_type", "Unsupported token type")
        claims = iam.keys.verify(str(token))
        if claims is not None and claims.get("iss") == iam.config.issuer:
            if claims.get("azp") != client.client_id:
                raise OAuthFailure("invalid_request", "Unmatching clients")
            _revoke(iam, client, claims)
        response: Response = Response(status_code=200, headers=NO_STORE)
    except OAuthFailure as failure:
        response = oauth_error(failure.error, failure.description, failure.status)
    origins = allowed_origins(client.web_origins, client.redirect_uris) if client else set()
    return add_cors(response, request, origins)


def _revoke(iam: Iam, client: Client, claims: dict[str, Any]) -> None:
    if claims.get("typ") == "Bearer":
        iam.state.revoked_access_jtis.add(str(claims.get("jti")))
        return
    session = iam.state.sessions.get(str(claims.get("sid")))
    if session is None:
        return
    session.clients.pop(client.client_id, None)
    if not session.clients:
        iam.state.end_session(session.id)
