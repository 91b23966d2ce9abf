"""The static browser application and its public settings (``/settings.json``)."""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from .config import ClientConfig
from .middleware import SecurityHeaders, origin_of

_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.DOTALL | re.IGNORECASE)
#: Tells app.js to expose ``window.__roadkit`` (only under ``app.test_hooks = true``).
TEST_HOOKS_META = '<meta name="roadkit-test-hooks" content="1" />'


def static_dir() -> Path:
    """The packaged ``roadkit_client/static`` folder."""
    return Path(str(resources.files("roadkit_client").joinpath("static")))


def public_settings(config: ClientConfig, mode: str | None = None) -> dict[str, Any]:
    """The browser's IamSettings. Never the portal's client secret: the browser client is public."""
    backend, remote = config.backend.public_url.rstrip("/"), config.backend.remote_url
    return {
        "mode": mode or config.mode,
        "IamUrl": config.iam.url.rstrip("/"),
        "IamRealm": config.iam.realm,
        "IamClientId": config.iam.client_id,
        "IamEntrepotApiUrl": backend,
        "IamEntrepotApiUrlRemote": remote,
        "IamRedirectRemote": remote,
        "IamScope": config.iam.scope,
        "AppName": config.app.portal_app,
        "RoutingUrl": config.app.routing_url,
        "RoutingResource": config.app.routing_resource,
    }


def content_security_policy(config: ClientConfig, folder: Path) -> str:
    """A CSP allowing the app's own scripts (plus the hashes of inline scripts in its pages),
    the IAM (token calls, the silent-check frame), the backend and the routing service."""
    hashes: set[str] = set()
    if folder.is_dir():
        for page in folder.rglob("*.html"):
            for script in _INLINE_SCRIPT.findall(page.read_text(encoding="utf-8", errors="replace")):
                digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
                hashes.add(f"'sha256-{digest}'")
    iam, routing = origin_of(config.iam.url), origin_of(config.app.routing_url)
    # Both addresses of the backend: local mode's and remote mode's (the same origin unless configured apart).
    backend = " ".join(dict.fromkeys((origin_of(config.backend.public_url), origin_of(config.backend.remote_url))))
    return "; ".join(
        [
            "default-src 'self'",
            " ".join(["script-src 'self'", *sorted(hashes)]),
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data: blob: https:",
            f"connect-src 'self' {iam} {backend} {routing}",
            f"frame-src 'self' {iam}",
            "frame-ancestors 'self'",
            f"form-action 'self' {iam} {backend}",
            "base-uri 'self'",
            "object-src 'none'",
        ]
    )


HOOKED_PAGES = ("index.html", "login.html")


def create_static_app(config: ClientConfig, *, directory: Path | None = None) -> Starlette:
    """Serve the browser app: ``/`` (index.html), ``/login`` (login.html), static files, ``/settings.json``."""
    folder = directory or static_dir()

    def page(name: str) -> Any:
        async def handler(request: Request) -> Response:
            file = folder / name
            if not file.is_file():
                return JSONResponse({"error": {"errorType": "not_found", "message": f"{name} is missing"}}, 404)
            if config.app.test_hooks and name in HOOKED_PAGES:
                text = file.read_text(encoding="utf-8").replace("</head>", f"  {TEST_HOOKS_META}\n  </head>", 1)
                return HTMLResponse(text, headers={"Cache-Control": "no-store"})
            return FileResponse(file, headers={"Cache-Control": "no-cache"})

        return handler

    async def settings(request: Request) -> Response:
        mode = request.query_params.get("mode")
        if mode is not None:
            if not config.allow_mode_override:
                mode = None
            elif mode not in ("local", "remote"):
                return JSONResponse({"error": {"errorType": "invalid_request", "message": "mode: expected 'local' or 'remote'"}}, 400)
        return JSONResponse(public_settings(config, mode), headers={"Cache-Control": "no-store"})

    routes: list[BaseRoute] = [
        Route("/settings.json", settings),
        Route("/", page("index.html")),
        Route("/login", page("login.html")),
        Route("/silent-check.html", page("silent-check.html")),
    ]
    if folder.is_dir():
        routes.append(Mount("/", StaticFiles(directory=folder, html=True)))
    headers = {
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "SAMEORIGIN",
        "Referrer-Policy": "no-referrer",
        "Content-Security-Policy": content_security_policy(config, folder),
    }
    hsts = config.app.public_url.startswith("https://")
    return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders, headers=headers, hsts=hsts)])
