"""Admin API routes that create, change and delete managed services (``POST``/``PUT``/``DELETE``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from roadkit.api import JSONResponse, read_json_body
from roadkit.management import Management

if TYPE_CHECKING:
    from roadkit.administrator import Administrator

#: The largest service document accepted.
MAX_BODY_BYTES = 1_000_000

Handler = Callable[[Request], Awaitable[Response]]


def management_routes(admin: Administrator, guarded: Callable[[Handler], Handler], service_id: Callable[[Request], str]) -> list[Route]:
    """``POST /services``, ``PUT /services/{service}``, ``DELETE /services/{service}``."""
    management = Management(admin)

    async def create(request: Request) -> Response:
        body = await read_json_body(request, MAX_BODY_BYTES)
        async with admin.writes:
            handle = await management.create(body)
        return JSONResponse(handle.describe(), status_code=201)

    async def modify(request: Request) -> Response:
        sid = service_id(request)
        admin.handle(sid)  # 404 before reading a body
        body = await read_json_body(request, MAX_BODY_BYTES)
        async with admin.writes:
            handle = await management.modify(sid, body)
        return JSONResponse(handle.describe())

    async def delete(request: Request) -> Response:
        sid = service_id(request)
        async with admin.writes:
            await management.delete(sid)
        return Response(status_code=204)

    return [
        Route("/services", guarded(create), methods=["POST"]),
        Route("/services/{service}", guarded(modify), methods=["PUT"]),
        Route("/services/{service}", guarded(delete), methods=["DELETE"]),
    ]
