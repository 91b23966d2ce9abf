"""OpenAPI documents served with an offline Swagger UI (vendored in ``static/swagger-ui``, pinned by version and hash)."""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from roadkit.web.api import JSONResponse, base_url

#: swagger-ui-dist's files as ``tools/vendor_swagger_ui.py`` copied them, with manifest.json (version, SHA-384s).
SWAGGER_UI = Path(__file__).with_name("static") / "swagger-ui"

# Every value put into the page is HTML-escaped by ``viewer`` (the spec URL comes from the request's headers).
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="{assets}/swagger-ui.css" integrity="{css}"></head>
<body><p style="font-family:sans-serif;margin:1em">OpenAPI definition: <a href="{spec}">{spec}</a></p>
<div id="swagger-ui"></div>
<script src="{assets}/swagger-ui-bundle.js" integrity="{bundle}"></script>
<script src="{assets}/swagger-ui-standalone-preset.js" integrity="{preset}"></script>
<script src="{assets}/viewer.js" integrity="{viewer}" data-spec="{spec}"></script>
</body></html>
"""

# validatorUrl null: Swagger UI would otherwise load a badge from swagger.io's validator.
_VIEWER_JS = """const spec = document.currentScript.dataset.spec;
window.ui = SwaggerUIBundle({url: spec, dom_id: '#swagger-ui', deepLinking: true, validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout'});
"""


def integrity(data: bytes) -> str:
    """The subresource-integrity value (``sha384-<base64>``) of ``data``."""
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


@cache
def swagger_ui_integrity() -> dict[str, str]:
    """The SHA-384 of each vendored Swagger UI file, as recorded when it was vendored (manifest.json)."""
    files: dict[str, str] = json.loads((SWAGGER_UI / "manifest.json").read_text())["files"]
    return files


def docs_routes(title: str, document: Callable[[Request], dict[str, Any]], prefix: str) -> list[BaseRoute]:
    """``/openapi`` (viewer), ``/openapi.json`` (definition) and the viewer's assets, under ``prefix``."""

    async def viewer(request: Request) -> Response:
        spec = f"{base_url(request)}{prefix}/openapi.json"
        if not spec.startswith(("http://", "https://")):
            spec = f"{prefix}/openapi.json"  # a forwarded scheme such as javascript: never reaches a link
        hashes = swagger_ui_integrity()
        page = _PAGE.format(
            title=html.escape(title),
            assets=html.escape(f"{prefix}/openapi/assets"),
            spec=html.escape(spec),
            css=hashes["swagger-ui.css"],
            bundle=hashes["swagger-ui-bundle.js"],
            preset=hashes["swagger-ui-standalone-preset.js"],
            viewer=integrity(_VIEWER_JS.encode()),
        )
        # The page runs only its own scripts: a strict policy that still lets Swagger UI work.
        return HTMLResponse(
            page, headers={"content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'"}
        )

    async def viewer_js(request: Request) -> Response:
        return Response(_VIEWER_JS, media_type="text/javascript")

    async def definition(request: Request) -> Response:
        return JSONResponse(document(request))

    return [
        Route("/openapi", viewer, methods=["GET"]),
        Route("/openapi.json", definition, methods=["GET"]),
        Route("/openapi/swagger.json", definition, methods=["GET"]),
        Route("/openapi/assets/viewer.js", viewer_js, methods=["GET"]),
        Mount("/openapi/assets", app=StaticFiles(directory=SWAGGER_UI)),
    ]
