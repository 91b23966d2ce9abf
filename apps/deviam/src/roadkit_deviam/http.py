"""Response helpers shared by the endpoints: OAuth errors, CORS, no-store and security headers, HTML pages.

Every HTML page is built here, and everything it shows that is not a constant goes through
``html.escape``.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}

#: The style sheet of every page, inline: the Content-Security-Policy allows it by its hash.
PAGE_STYLE = """body{font-family:system-ui,sans-serif;background:#f2f4f7;margin:0}
main{max-width:26rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002}
.dev{background:#fff3cd;color:#664d03;padding:.4rem .6rem;border-radius:4px;font-size:.85rem}
label{display:block;margin-top:1rem}input[type=text],input[type=password]{width:100%;padding:.5rem;box-sizing:border-box}
input[type=submit],button{margin-top:1.2rem;padding:.5rem 1.2rem}.alert-error{color:#a00;margin-top:1rem}"""


def csp_hash(text: str) -> str:
    """The CSP source (``'sha256-...'``) that allows exactly this inline script or style."""
    return f"'sha256-{base64.b64encode(hashlib.sha256(text.encode('utf-8')).digest()).decode()}'"


def content_security_policy(*, script: str | None = None, frame_ancestors: str = "'self'") -> str:
    """Nothing but the page's own style (and ``script`` when given); framed only by ``frame_ancestors``."""
    scripts = f"; script-src {csp_hash(script)}" if script is not None else ""
    return f"default-src 'none'; style-src {csp_hash(PAGE_STYLE)}{scripts}; base-uri 'none'; frame-ancestors {frame_ancestors}"


#: On every answer (the middleware of the app), as the other roadkit apps send them; framing as
#: Keycloak allows it: by the IAM's own pages only.
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "SAMEORIGIN",
    "Referrer-Policy": "no-referrer",
    "X-Permitted-Cross-Domain-Policies": "none",
    "Content-Security-Policy": content_security_policy(),
}

#: Login, error and information pages (also when a page is built outside the app's middleware).
PAGE_HEADERS = {**NO_STORE, **SECURITY_HEADERS}


def oauth_error(error: str, description: str | None = None, status: int = 400, headers: dict[str, str] | None = None) -> JSONResponse:
    """Keycloak's JSON error body ``{"error", "error_description"}``."""
    body: dict[str, Any] = {"error": error}
    if description is not None:
        body["error_description"] = description
    return JSONResponse(body, status_code=status, headers={**NO_STORE, **(headers or {})})


def page(title: str, body_html: str, status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    """A minimal HTML page in the IAM's look (no external assets); ``body_html`` must be escaped already."""
    document = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{PAGE_STYLE}</style>
</head><body><main><p class="dev">roadkit development IAM &mdash; for development and tests only</p>
<h1 id="kc-page-title">{html.escape(title)}</h1>{body_html}</main></body></html>"""
    return HTMLResponse(document, status_code=status, headers={**PAGE_HEADERS, **(headers or {})})


def error_page(message: str, status: int = 400) -> HTMLResponse:
    """Keycloak's error page (used when it cannot redirect back, e.g. a bad ``redirect_uri``)."""
    return page("We are sorry...", f'<p id="kc-error-message" class="instruction">{html.escape(message)}</p>', status)


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL (Keycloak derives web origins from redirect URIs so)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}" if rest else ""


def allowed_origins(web_origins: Iterable[str], redirect_uris: Iterable[str]) -> set[str]:
    """Expand Keycloak's ``+`` (origins of the redirect URIs) in a client's web origins."""
    result: set[str] = set()
    for value in web_origins:
        if value == "+":
            result.update(origin_of(uri) for uri in redirect_uris if "://" in uri)
        else:
            result.add(value.rstrip("/"))
    return result


def add_cors(response: Response, request: Request, origins: set[str] | None) -> Response:
    """Add ``Access-Control-Allow-Origin`` when the request's Origin is allowed (``None`` = any)."""
    origin = request.headers.get("origin")
    if origin and (origins is None or origin in origins or "*" in origins):
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Access-Control-Allow-Credentials"] = "true"
        response.headers["Access-Control-Expose-Headers"] = "WWW-Authenticate"
        response.headers.append("Vary", "Origin")
    return response


def preflight(request: Request, methods: str) -> Response:
    """Answer a CORS preflight like Keycloak: any origin, the client is only known on the real call."""
    response = Response(status_code=200)
    origin = request.headers.get("origin")
    if origin:
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Access-Control-Allow-Credentials"] = "true"
        response.headers["Access-Control-Allow-Methods"] = methods
        response.headers["Access-Control-Allow-Headers"] = "Origin, Accept, X-Requested-With, Content-Type, Authorization, DPoP"
        response.headers["Access-Control-Max-Age"] = "3600"
        response.headers["Vary"] = "Origin"
    return response
