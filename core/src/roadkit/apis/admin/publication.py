"""Admin API routes of publication: a service's sources and resources read, written and removed.

``PUT`` gives the whole document to the administrator, which checks it completely before writing
anything, then loads it into the running service; ``DELETE`` takes it out, then removes the file.
Answers show documents with their passwords (DSNs, URLs, ``password`` keys) as ``***``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from roadkit.apis.admin.backend import AdminBackend
from roadkit.config.secrets import redact
from roadkit.serving.documents import Kind, check_id
from roadkit.web.api import JSONResponse, read_json_body

#: The largest source or resource document accepted.
MAX_BODY_BYTES = 1_000_000

Handler = Callable[[Request], Awaitable[Response]]


def publication_routes(admin: AdminBackend, guarded: Callable[[Handler], Handler], service_id: Callable[[Request], str]) -> list[Route]:
    """``/services/{service}/sources[/{source}]`` and ``/services/{service}/resources[/{resource}]``."""

    def listing(kind: Kind) -> Handler:
        async def run(request: Request) -> Response:
            return JSONResponse(redact(admin.documents(service_id(request), kind)))

        return run

    def one(kind: Kind) -> Handler:
        async def run(request: Request) -> Response:
            oid = check_id(kind, str(request.path_params[kind]))
            return JSONResponse(redact(admin.document(service_id(request), kind, oid)))

        return run

    def put(kind: Kind) -> Handler:
        async def run(request: Request) -> Response:
            oid = check_id(kind, str(request.path_params[kind]))
            sid = service_id(request)
            admin.describe(sid)  # 404 before the body is read
            body = await read_json_body(request, MAX_BODY_BYTES)
            document, created = await admin.publish(sid, kind, oid, body)
            return JSONResponse(redact(document), status_code=201 if created else 200)

        return run

    def delete(kind: Kind) -> Handler:
        async def run(request: Request) -> Response:
            oid = check_id(kind, str(request.path_params[kind]))
            await admin.unpublish(service_id(request), kind, oid)
            return Response(status_code=204)

        return run

    async def switch_version(request: Request) -> Response:
        oid = check_id("source", str(request.path_params["source"]))
        sid = service_id(request)
        admin.document(sid, "source", oid)  # 404 (service or source) before the body is read
        body = await read_json_body(request, MAX_BODY_BYTES)
        return JSONResponse(redact(await admin.switch_version(sid, oid, body)))

    async def not_allowed(request: Request) -> Response:
        raise HTTPException(405, headers={"Allow": "POST"})

    version = "/services/{service}/sources/{source}/version"
    routes = [
        Route(version, guarded(switch_version), methods=["POST"]),
        # Every other method, before the ``{source:path}`` routes below take "a/version" for a source id.
        Route(version, not_allowed, methods=["GET", "PUT", "PATCH", "DELETE", "OPTIONS"]),
    ]
    for kind in ("source", "resource"):
        # ``:path``: an id holding an (encoded) "/" such as ``..%2F..%2Fx`` reaches check_id and is a
        # 400 naming the parameter, not a 404 from the catch-all.
        one_path = f"/services/{{service}}/{kind}s/{{{kind}:path}}"
        routes.append(Route(f"/services/{{service}}/{kind}s", guarded(listing(kind)), methods=["GET"]))
        routes.append(Route(one_path, guarded(one(kind)), methods=["GET"]))
        routes.append(Route(one_path, guarded(put(kind)), methods=["PUT"]))
        routes.append(Route(one_path, guarded(delete(kind)), methods=["DELETE"]))
    return routes
