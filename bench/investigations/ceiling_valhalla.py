"""The thinnest Python HTTP server over the Valhalla Actor: the ceiling of any Python front end.

    python -m bench.investigations.ceiling_valhalla <valhalla.json> <port> [--workers N] [--allocator auto] [--http raw|uvicorn]

Not roadkit, and not for serving: a measuring instrument for ``bench.investigations.thread_cpu --ceiling``.
It answers valhalla_service's own requests (``GET /route?json=<body>``, ``GET /isochrone?json=<body>``,
the sweep's URLs) with the Actor's text as it is (200), or the Actor's error (400), and does
nothing else: no parameter check, no reading or checking of the answer, no response model, no
headers but the length. It runs much as roadkit's workers do on the whole machine: ``N`` forked
processes (one per core by default), uvloop, one Actor called on the event loop's thread, and the
allocator roadkit's workers preload by default; unlike them (one shared socket, ``roadkit.process.accept``),
each process has its own ``SO_REUSEPORT`` listening socket and the kernel spreads the connections.
What roadkit does beyond this server is what its features cost; what this server does beyond
valhalla_service is the most a Python server built on the Actor can gain. ``--http uvicorn`` serves
the same answers as an ASGI app under uvicorn (httptools, as roadkit's default HTTP server): the
difference between the two is what the HTTP server and ASGI cost. It imports nothing of the benchmarks,
so it also runs as a file (``python bench/investigations/ceiling_valhalla.py``, as its test runs it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote

from roadkit.config.allocator import preload
from roadkit.process.allocator import environment

ACTIONS = (b"/route", b"/isochrone")


def answer(actor: Any, path: bytes, query: bytes) -> tuple[bytes, bytes]:
    """(status line, body) for ``GET path?json=query``: the Actor's text, or its refusal."""
    if path not in ACTIONS or not query:
        return b"404 Not Found", b'{"error":"GET /route?json= or /isochrone?json="}'
    try:
        return b"200 OK", getattr(actor, path[1:].decode())(unquote(query.decode())).encode()
    except RuntimeError as exc:  # the Actor's refusal (no route, a point off the roads...)
        return b"400 Bad Request", str(exc).encode()


class Ceiling(asyncio.Protocol):
    """HTTP/1.1 keep-alive GET requests without a body, answered in order on the loop's thread."""

    def __init__(self, actor: Any) -> None:
        self.actor, self.buffer = actor, b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's classes
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            path, _, query = head.split(b" ", 2)[1].partition(b"?json=")
            status, body = answer(self.actor, path, query)
            assert self.transport is not None
            self.transport.write(
                b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
            )


def listening_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def asgi_app(actor: Any) -> Any:
    """The same answers as an ASGI app: what uvicorn's HTTP and ASGI layers add to the raw server."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        status, body = answer(actor, scope["path"].encode(), scope["query_string"].partition(b"json=")[2])
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": int(status[:3]), "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def serve(config: Path, port: int, http: str) -> None:
    import uvloop
    import valhalla

    actor = valhalla.Actor(str(config))
    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    if http == "uvicorn":
        import uvicorn

        settings = uvicorn.Config(asgi_app(actor), http="httptools", loop="none", lifespan="off", access_log=False, log_level="warning")
        loop.run_until_complete(uvicorn.Server(settings).serve(sockets=[listening_socket(port)]))
        return
    loop.run_until_complete(loop.create_server(lambda: Ceiling(actor), sock=listening_socket(port)))
    loop.run_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="the tiles' valhalla.json")
    parser.add_argument("port", type=int)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--allocator", default="auto", help="as roadkit's workers' setting (default: theirs)")
    parser.add_argument("--http", default="raw", choices=["raw", "uvicorn"], help="raw: the protocol above; uvicorn: as an ASGI app")
    args = parser.parse_args()
    library = preload(args.allocator)
    env = environment(library)
    if env.get("LD_PRELOAD") != os.environ.get("LD_PRELOAD"):
        # Not started with the allocator preloaded: start again with it, as the administrator starts a worker
        # (the same way: as a module with ``-m``, or as a file).
        module = ["-m", __spec__.name] if __spec__ is not None else [sys.argv[0]]
        os.execve(sys.executable, [sys.executable, *module, *sys.argv[1:]], env)
    children = []
    for _ in range(args.workers):
        pid = os.fork()
        if pid == 0:
            serve(args.config, args.port, args.http)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
