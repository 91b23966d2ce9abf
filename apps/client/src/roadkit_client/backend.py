"""The backend API app: ``/me``, ``/documents`` and the remote-mode portal routes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable

import aiohttp
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import documents, portal
from .auth import Authenticator
from .config import ClientConfig
from .errors import ApiError, handle_api_error, handle_http_exception, handle_unexpected
from .middleware import API_SECURITY_HEADERS, BodyLimit, SecurityHeaders
from .oidc import OidcProvider
from .sessions import PortalClient, PortalSessions
from .storage import Storage, open_storage


async def health(request: Request) -> Response:
    """``GET /health``: the process answers (the IAM is not contacted)."""
    return JSONResponse({"status": "ok"})


def create_backend_app(
    config: ClientConfig,
    *,
    storage: Storage | None = None,
    now: Callable[[], float] | None = None,
) -> Starlette:
    """Build the backend for ``config``.

    ``storage`` replaces the configured database (tests); ``now`` replaces ``time.time`` for
    token expiry checks and portal sessions (tests that move time forward).
    """
    clock = now or time.time
    store = storage or open_storage(config.backend)
    portal_on = config.backend.remote_mode and config.portal.enabled

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await store.open()
        async with aiohttp.ClientSession(trust_env=True) as http:
            provider = OidcProvider(config.iam, http, now=clock)
            client = PortalClient(config, provider, http)
            sessions = PortalSessions(config, store, client, now=clock) if portal_on else None
            app.state.provider = provider
            app.state.portal_client = client
            app.state.sessions = sessions
            app.state.auth = Authenticator(config, provider, sessions)
            try:
                yield
            finally:
                await store.close()

    routes = [
        Route("/health", health),
        Route("/me", documents.me),
        Route("/documents", documents.list_documents, methods=["GET"]),
        Route("/documents", documents.create_document, methods=["POST"]),
        Route("/documents/{document_id}", documents.delete_document, methods=["DELETE"]),
    ]
    if portal_on:
        routes += [
            Route("/login", portal.login),
            Route("/login/callback", portal.login_callback),
            Route("/csrf-token", portal.csrf),
            Route("/logout", portal.logout, methods=["POST"]),
        ]
    middleware = [
        Middleware(
            CORSMiddleware,
            allow_origins=list(config.backend.cors_origins),
            allow_credentials=True,
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "X-Requested-With", "Accept", portal.CSRF_HEADER],
            expose_headers=["Content-Range", "WWW-Authenticate", "Link"],
            max_age=600,
        ),
        Middleware(SecurityHeaders, headers=API_SECURITY_HEADERS, hsts=config.backend.public_url.startswith("https://")),
        Middleware(BodyLimit, max_bytes=config.backend.max_body_bytes),
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            ApiError: handle_api_error,
            HTTPException: handle_http_exception,
            Exception: handle_unexpected,
        },
    )
    app.state.config = config
    app.state.storage = store
    app.state.now = clock
    app.state.max_body_bytes = config.backend.max_body_bytes
    return app
