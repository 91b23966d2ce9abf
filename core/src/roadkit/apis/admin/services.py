"""Admin API routes that create, change and delete managed services (``POST``/``PUT``/``DELETE``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from roadkit.apis.admin.backend import AdminBackend
from roadkit.config.secrets import redact
from roadkit.web.api import JSONResponse, read_json_body

#: The largest service document accepted.
MAX_BODY_BYTES = 1_000_000

Handler = Callable[[Request], Awaitable[Response]]


def management_routes(admin: AdminBackend, guarded: Callable[[Handler], Handler], service_id: Callable[[Request], str]) -> list[Route]:
    """``POST /services``, ``PUT /services/{service}``, ``DELETE /services/{service}``."""

    async def create(request: Request) -> Response:
        body = await read_json_body(request, MAX_BODY_BYTES)
        return JSONResponse(redact(await admin.create(body)), status_code=201)

    async def modify(request: Request) -> Response:
        sid = service_id(request)
        admin.describe(sid)  # 404 before reading a body
        body = await read_json_body(request, MAX_BODY_BYTES)
        return JSONResponse(redact(await admin.modify(sid, body)))

    async def delete(request: Request) -> Response:
        await admin.delete(service_id(request))
        return Response(status_code=204)

    return [
        Route("/services", guarded(create), methods=["POST"]),
        Route("/services/{service}", guarded(modify), methods=["PUT"]),
        Route("/services/{service}", guarded(delete), methods=["DELETE"]),
    ]
