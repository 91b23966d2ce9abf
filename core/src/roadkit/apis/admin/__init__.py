"""The admin API 1.0.0, served by the administrator on its own listener."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route

from roadkit import __version__
from roadkit.apis.admin.backend import AdminBackend
from roadkit.apis.admin.publication import publication_routes
from roadkit.apis.admin.redaction import RedactErrors
from roadkit.apis.admin.services import management_routes
from roadkit.auth.admin import AdminAuthMiddleware
from roadkit.config.secrets import redact
from roadkit.errors import ParameterInvalid
from roadkit.web.api import JSONResponse, base_url, error_response, fallback_route, http_exception_handler, server_error_handler
from roadkit.web.docs import docs_routes
from roadkit.web.security import SecurityHeaders

PREFIX = "/admin/1.0.0"
#: Prometheus's text format.
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def create_admin_app(admin: AdminBackend) -> Starlette:
    """The administrator's app: the admin API under ``/admin/1.0.0``."""

    def guarded(handler: Any) -> Any:
        async def run(request: Request) -> Response:
            try:
                response: Response = await handler(request)
                return response
            except HTTPException:
                raise  # Starlette's own answers (a 405 with its Allow header)
            except Exception as exc:
                return error_response(exc)

        return run

    def service_id(request: Request) -> str:
        sid = str(request.path_params["service"]).strip()
        if not sid:
            raise ParameterInvalid("service", "expected a service id, got an empty value")
        return sid

    async def index(request: Request) -> Response:
        base = base_url(request) + PREFIX
        return JSONResponse(
            {
                "api": {"name": "admin", "version": "1.0.0"},
                "links": [
                    {"rel": "service-desc", "href": f"{base}/openapi.json"},
                    {"rel": "service-doc", "href": f"{base}/openapi"},
                ],
            }
        )

    async def version(request: Request) -> Response:
        return JSONResponse({"version": __version__})

    async def plugins(request: Request) -> Response:
        return JSONResponse(admin.plugins.describe())

    async def health(request: Request) -> Response:
        # Road2's answer: the global state alone, every service and source with verbose=true.
        verbose = request.query_params.get("verbose", "false")
        if verbose not in ("true", "false"):
            raise ParameterInvalid("verbose", "value should be 'true' or 'false'")
        body = await admin.health()
        status = 200 if body["state"] == "green" else 503
        return JSONResponse(redact(body) if verbose == "true" else {"state": body["state"]}, status_code=status)

    async def metrics(request: Request) -> Response:
        return Response(await admin.metrics(), headers={"content-type": METRICS_TYPE, "cache-control": "no-store"})

    async def configuration(request: Request) -> Response:
        return JSONResponse(redact(admin.configuration()))

    async def services(request: Request) -> Response:
        return JSONResponse(redact(admin.services()))

    async def service(request: Request) -> Response:
        sid = service_id(request)
        description = admin.describe(sid)
        return JSONResponse(redact({**description, **await admin.describe_apis(sid)}))

    async def restart(request: Request) -> Response:
        # Road2's verb is GET. Calls made during a start or restart are merged into one next restart.
        return JSONResponse(redact(await admin.restart(service_id(request))))

    async def projection(request: Request) -> Response:
        sid = service_id(request)
        admin.describe(sid)  # 404 first
        pid = request.path_params["projection"].strip()
        if not pid:
            raise ParameterInvalid("projection", "expected a projection id, got an empty value")
        return JSONResponse(await admin.projection(sid, pid))

    def openapi(request: Request) -> dict[str, Any]:
        from roadkit.apis.admin.openapi import admin_openapi

        return admin_openapi(base_url(request) + PREFIX, admin.plugins)

    routes = [
        Route("/", guarded(index), methods=["GET"]),
        Route("/version", guarded(version), methods=["GET"]),
        Route("/health", guarded(health), methods=["GET"]),
        Route("/plugins", guarded(plugins), methods=["GET"]),
        Route("/metrics", guarded(metrics), methods=["GET"]),
        Route("/configuration", guarded(configuration), methods=["GET"]),
        Route("/services", guarded(services), methods=["GET"]),
        Route("/services/{service}", guarded(service), methods=["GET"]),
        Route("/services/{service}/restart", guarded(restart), methods=["GET"]),
        Route("/services/{service}/projections/{projection:path}", guarded(projection), methods=["GET"]),
        *publication_routes(admin, guarded, service_id),
        *management_routes(admin, guarded, service_id),
        *docs_routes("roadkit admin API 1.0.0", openapi, PREFIX),
    ]
    routes.append(fallback_route(routes))

    async def root(request: Request) -> Response:
        return PlainTextResponse("roadkit administrator")

    app = Starlette(
        routes=[Route("/", root), Mount(PREFIX, routes=routes)],
        exception_handlers={HTTPException: http_exception_handler, Exception: server_error_handler},
    )
    app.state.trusted_proxies = admin.authenticator.sites.proxies  # whose X-Forwarded-* base_url believes
    app.add_middleware(AdminAuthMiddleware, authenticator=admin.authenticator, open_paths=(f"{PREFIX}/openapi", f"{PREFIX}/openapi.json"))
    app.add_middleware(SecurityHeaders)
    app.add_middleware(RedactErrors)  # outermost: every error answer, the middlewares' own included
    return app
