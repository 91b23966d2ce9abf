"""The thinnest Python HTTP server over the Valhalla Actor: the ceiling of any Python front end.

    python bench/ceiling_valhalla.py <valhalla.json> <port> [--workers N] [--allocator auto]

Not roadkit, and not for serving: a measuring instrument for ``bench/thread_cpu.py --ceiling``.
It answers valhalla_service's own requests (``GET /route?json=<body>``, ``GET /isochrone?json=<body>``,
the sweep's URLs) with the Actor's text as it is (200), or the Actor's error (400), and does
nothing else: no parameter check, no reading or checking of the answer, no response model, no
headers but the length. It runs the way roadkit's workers do on the whole machine: ``N`` forked
processes (one per core by default), each with its own ``SO_REUSEPORT`` listening socket (the
kernel spreads the connections), uvloop, one Actor called on the event loop's thread, and the
allocator roadkit's workers preload by default. What roadkit does beyond this server is what its
features cost; what this server does beyond valhalla_service is the most a Python server built on
the Actor can gain.
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

from roadkit import allocator

ACTIONS = (b"/route", b"/isochrone")


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
            status, answer = self.answer(path, query)
            assert self.transport is not None
            self.transport.write(
                b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(answer) + answer
            )

    def answer(self, path: bytes, query: bytes) -> tuple[bytes, bytes]:
        if path not in ACTIONS or not query:
            return b"404 Not Found", b'{"error":"GET /route?json= or /isochrone?json="}'
        try:
            return b"200 OK", getattr(self.actor, path[1:].decode())(unquote(query.decode())).encode()
        except RuntimeError as exc:  # the Actor's refusal (no route, a point off the roads...)
            return b"400 Bad Request", str(exc).encode()


def listening_socket(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def serve(config: Path, port: int) -> None:
    import uvloop
    import valhalla

    actor = valhalla.Actor(str(config))
    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(loop.create_server(lambda: Ceiling(actor), sock=listening_socket(port)))
    loop.run_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="the tiles' valhalla.json")
    parser.add_argument("port", type=int)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--allocator", default="auto", help="as roadkit's workers' setting (default: theirs)")
    args = parser.parse_args()
    library = allocator.preload(args.allocator)
    env = allocator.environment(library)
    if env.get("LD_PRELOAD") != os.environ.get("LD_PRELOAD"):
        # Not started with the allocator preloaded: start again with it, as the administrator starts a worker.
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    children = []
    for _ in range(args.workers):
        pid = os.fork()
        if pid == 0:
            serve(args.config, args.port)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
