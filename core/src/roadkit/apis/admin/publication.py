"""Admin API routes of publication: a service's sources and resources read, written and removed.

``PUT`` validates the whole document, writes the file atomically, then tells the service's handle
to (re)load that id from disk; ``DELETE`` takes it out of the running service, then removes the file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from roadkit.api import JSONResponse, read_json_body
from roadkit.config.files import read_document
from roadkit.config.writer import atomic_remove, atomic_write
from roadkit.publication import Kind, ServiceFiles, check_id

if TYPE_CHECKING:
    from roadkit.administrator import Administrator

#: The largest source or resource document accepted.
MAX_BODY_BYTES = 1_000_000

Handler = Callable[[Request], Awaitable[Response]]


def publication_routes(admin: Administrator, guarded: Callable[[Handler], Handler], service_id: Callable[[Request], str]) -> list[Route]:
    """``/services/{service}/sources[/{source}]`` and ``/services/{service}/resources[/{resource}]``."""

    def files(request: Request) -> tuple[Any, ServiceFiles]:
        handle = admin.handle(service_id(request))
        return handle, ServiceFiles(handle.managed.configuration, admin.plugins)

    def listing(kind: Kind) -> Handler:
        async def run(request: Request) -> Response:
            _, service_files = files(request)
            return JSONResponse(service_files.documents(kind))

        return run

    def one(kind: Kind) -> Handler:
        async def run(request: Request) -> Response:
            oid = check_id(kind, str(request.path_params[kind]))
            _, service_files = files(request)
            return JSONResponse(service_files.document(kind, oid))

        return run

    def put(kind: Kind) -> Handler:
        async def run(request: Request) -> Response:
            oid = check_id(kind, str(request.path_params[kind]))
            admin.handle(service_id(request))  # 404 before the body is read
            body = await read_json_body(request, MAX_BODY_BYTES)
            async with admin.writes:
                # Under the lock: a concurrent PUT /services/{id} may have replaced the handle meanwhile.
                handle, service_files = files(request)
                check = service_files.check_source if kind == "source" else service_files.check_resource
                path, text, created = check(oid, body)
                previous = path.read_text(encoding="utf-8") if path.exists() else None
                atomic_write(path, text)
                try:
                    await (handle.publish_source(oid) if kind == "source" else handle.publish_resource(oid))
                except Exception:
                    # The service refused it: the file goes back to what it was, so disk and memory agree.
                    if previous is None:
                        atomic_remove(path)
                    else:
                        atomic_write(path, previous)
                    raise
                return JSONResponse(read_document(path), status_code=201 if created else 200)

        return run

    def delete(kind: Kind) -> Handler:
        async def run(request: Request) -> Response:
            oid = check_id(kind, str(request.path_params[kind]))
            async with admin.writes:
                handle, service_files = files(request)
                path = service_files.check_removal(kind, oid)
                await (handle.remove_source(oid) if kind == "source" else handle.remove_resource(oid))
                atomic_remove(path)
            return Response(status_code=204)

        return run

    routes: list[Route] = []
    for kind in ("source", "resource"):
        # ``:path``: an id holding an (encoded) "/" such as ``..%2F..%2Fx`` reaches check_id and is a
        # 400 naming the parameter, not a 404 from the catch-all.
        one_path = f"/services/{{service}}/{kind}s/{{{kind}:path}}"
        routes.append(Route(f"/services/{{service}}/{kind}s", guarded(listing(kind)), methods=["GET"]))
        routes.append(Route(one_path, guarded(one(kind)), methods=["GET"]))
        routes.append(Route(one_path, guarded(put(kind)), methods=["PUT"]))
        routes.append(Route(one_path, guarded(delete(kind)), methods=["DELETE"]))
    return routes
