"""OpenAPI documents served with an offline Swagger UI (assets from the swagger-ui-bundle package)."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

from roadkit.web.api import JSONResponse, base_url

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="{assets}/swagger-ui.css"></head>
<body><p style="font-family:sans-serif;margin:1em">OpenAPI definition: <a href="{spec}">{spec}</a></p>
<div id="swagger-ui"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script src="{assets}/swagger-ui-standalone-preset.js"></script>
<script src="{assets}/viewer.js" data-spec="{spec}"></script>
</body></html>
"""

_VIEWER_JS = """const spec = document.currentScript.dataset.spec;
window.ui = SwaggerUIBundle({url: spec, dom_id: '#swagger-ui', deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout'});
"""


def docs_routes(title: str, document: Callable[[Request], dict[str, Any]], prefix: str) -> list[BaseRoute]:
    """``/openapi`` (viewer), ``/openapi.json`` (definition) and the viewer's assets, under ``prefix``."""

    async def viewer(request: Request) -> Response:
        base = base_url(request) + prefix
        page = _PAGE.format(title=html.escape(title), assets=f"{prefix}/openapi/assets", spec=f"{base}/openapi.json")
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
        Mount("/openapi/assets", app=StaticFiles(directory=swagger_ui_path)),
    ]
