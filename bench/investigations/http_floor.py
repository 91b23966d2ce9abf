"""The HTTP server's own CPU per request: uvicorn (httptools, uvloop) with a trivial ASGI app against a bare
httptools protocol on uvloop that writes the same fixed answer (the floor any Python HTTP server on
this stack could reach). Both answer a 2.9 kB JSON body (the size of a Monaco isochrone) to a GET.

    python -m bench.investigations.http_floor [--concurrency 16] [--duration 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

from bench.common import free_port, load, session_cpu_seconds, wait_http

BODY_SIZE = 2900

UVICORN = """
import uvicorn
BODY = b'[' + b'1' * ({size} - 2) + b']'
HEADERS = [(b"content-length", str(len(BODY)).encode()), (b"content-type", b"application/json")]
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({{"type": "http.response.start", "status": 200, "headers": HEADERS}})
    await send({{"type": "http.response.body", "body": BODY}})
uvicorn.run(app, host="127.0.0.1", port={port}, loop="uvloop", http="httptools", access_log=False, log_level="warning", lifespan="off")
"""

BARE = """
import asyncio, httptools, uvloop
BODY = b'[' + b'1' * ({size} - 2) + b']'
ANSWER = b"HTTP/1.1 200 OK\\r\\ncontent-length: %d\\r\\ncontent-type: application/json\\r\\n\\r\\n" % len(BODY) + BODY
class Bare(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.parser = httptools.HttpRequestParser(self)
    def data_received(self, data):
        self.parser.feed_data(data)
    def on_message_complete(self):
        self.transport.write(ANSWER)
async def main():
    server = await asyncio.get_running_loop().create_server(Bare, "127.0.0.1", {port})
    await server.serve_forever()
uvloop.run(main())
"""


def _whole(status: int, body: bytes) -> bool:
    return status == 200 and len(body) == BODY_SIZE


def serve(code: str, port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-c", code.format(port=port, size=BODY_SIZE)], start_new_session=True)
    wait_http(f"http://127.0.0.1:{port}/x")
    return process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    servers = {"uvicorn": UVICORN, "bare httptools protocol": BARE}
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(args.rounds):
        for name, code in servers.items():
            port = free_port()
            process = serve(code, port)
            try:
                before = session_cpu_seconds(process.pid)
                urls = [f"http://127.0.0.1:{port}/x"] * 100
                result = load(name, urls, concurrency=args.concurrency, duration=args.duration, check=_whole)
                used = session_cpu_seconds(process.pid) - before
                per = used / max(1, result.requests) * 1000
                cpu[name].append(per)
                print(f"{name:24s} {result.rps:9.0f} req/s  errors {result.errors}  cpu {per:.4f} ms/req", flush=True)
            finally:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=10)
            time.sleep(0.5)
    for name, values in cpu.items():
        print(f"median {name}: {statistics.median(values):.4f} ms of CPU a request")


if __name__ == "__main__":
    main()
