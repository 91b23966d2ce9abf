"""``roadkit.testing.asgi``: a request reaches the app as it was written, past what an HTTP client would send."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from roadkit.testing import asgi_messages, http_scope


async def echo(request: Request) -> JSONResponse:
    body = await request.body()
    return JSONResponse({"query": request.scope["query_string"].decode("latin-1"), "host": request.headers["host"], "body": len(body)})


APP = Starlette(routes=[Route("/echo", echo, methods=["GET", "POST"])])


def test_the_query_reaches_the_app_unchanged_past_a_clients_limit() -> None:
    query = b"start=%zz&end=%ff&n=" + b"9" * 100_000  # bad percent-encoding, and longer than httpx's 64 kB
    start, body = asyncio.run(asgi_messages(APP, http_scope("/echo", query)))
    assert start["status"] == 200
    assert body["body"] == f'{{"query":"{query.decode()}","host":"testserver","body":0}}'.encode()


def test_a_text_query_a_method_a_host_and_a_body() -> None:
    scope = http_scope("/echo", "a=é", method="POST", host="127.0.0.1", headers=[(b"content-type", b"text/plain")])
    assert scope["query_string"] == b"a=\xe9" and (b"content-type", b"text/plain") in scope["headers"]
    start, body = asyncio.run(asgi_messages(APP, scope, b"x" * 10))
    assert start["status"] == 200
    assert body["body"] == '{"query":"a=é","host":"127.0.0.1","body":10}'.encode()
