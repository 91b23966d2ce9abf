"""Bounded connections (roadkit.process.bounds): deadlines, head sizes and the cap, on both HTTP servers.

A service of the ``straight`` test kind served by :class:`SocketServer` on a real socket, as a worker
serves it; hostile clients are raw sockets that send what a real one would not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvloop

from roadkit.config import load_service
from roadkit.errors import ConfigurationError
from roadkit.process.listen import ListeningSockets, SocketServer
from roadkit.serving.app import create_app
from roadkit.testing import straight_plugins, write_service
from roadkit.testing.services import SERVICE
from roadkit_support.serving import reserve_port
from tests.core.test_children import ROUTE as CHILD_ROUTE
from tests.core.test_children import Example, green, wait_for

SERVERS = ["uvicorn", "hypercorn"]


Runner = Callable[[Coroutine[Any, Any, None]], None]
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture(params=list(LOOPS))
def run(request: pytest.FixtureRequest) -> Runner:
    """Runs a test's coroutine on asyncio's loop, then (a second test) on uvloop's, the workers'."""
    return lambda coroutine: asyncio.run(coroutine, loop_factory=LOOPS[request.param])


ROUTE = "/simple/1.0.0/route?resource=straight&start=7.41337,43.72956&end=7.41983,43.73115"


@contextlib.asynccontextmanager
async def serving(folder: Path, http_server: str, **http: Any) -> AsyncIterator[tuple[SocketServer, int]]:
    """The straight service served on a free port with ``[http]`` settings ``http``: (server, port)."""
    port = reserve_port()
    settings = "".join(f"{key} = {json.dumps(value)}\n" for key, value in {"server": http_server, **http}.items())
    service = write_service(folder, service=SERVICE.replace("port = 8080", f"port = {port}") + f"\n[http]\n{settings}")
    config = load_service(service)
    sockets = ListeningSockets()
    sockets.update(config.listeners).commit()
    server = SocketServer(
        create_app(config, straight_plugins()),
        [(listener, sockets.sockets[listener.bind]) for listener in config.listeners],
        http_server=config.http.server,
        http=config.http,
    )
    await server.start()
    try:
        yield server, port
    finally:
        await server.stop()
        sockets.close()


async def exchange(port: int, request: bytes, timeout: float = 10.0) -> bytes:
    """Send ``request`` on a new connection; all the server sends until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        async with asyncio.timeout(timeout):
            return await reader.read(-1)
    finally:
        writer.close()


def parse(response: bytes) -> tuple[int, dict[str, str], Any]:
    """Status, headers (lower-case names) and JSON body of a whole response."""
    head, _, body = response.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, json.loads(body)


def assert_error(response: bytes, status: int, code: str) -> dict[str, str]:
    got, headers, body = parse(response)
    assert (got, body["error"]["errorType"]) == (status, code), response[:500]
    assert headers["connection"] == "close" and headers["x-content-type-options"] == "nosniff"
    assert headers["content-type"] == "application/json"
    return headers


@pytest.mark.parametrize("http_server", SERVERS)
def test_half_sent_request_lines_are_closed_at_the_deadline_while_others_are_answered(
    tmp_path: Path, http_server: str, run: Runner
) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server, head_timeout=3.0) as (server, port):
            opened = time.monotonic()
            slow = [await asyncio.open_connection("127.0.0.1", port) for _ in range(300)]
            for _, writer in slow:
                writer.write(b"GET /simple/1.0.0/route?resou")
            async with httpx.AsyncClient(timeout=5) as client:
                for _ in range(10):
                    started = time.monotonic()
                    response = await client.get(f"http://127.0.0.1:{port}{ROUTE}")
                    assert response.status_code == 200 and time.monotonic() - started < 1.0
            assert time.monotonic() - opened < 2.8, "too slow to check that the deadline had not passed yet"
            assert server.connections()["open"] >= 300  # before the deadline, they are all open

            async def answer(reader: asyncio.StreamReader) -> tuple[bytes, float]:
                data = await reader.read(-1)
                return data, time.monotonic() - opened

            async with asyncio.timeout(10):
                answers = await asyncio.gather(*(answer(reader) for reader, _ in slow))
            for _, writer in slow:
                writer.close()
            for data, _ in answers:
                assert_error(data, 408, "request_timeout")
            closed_at = sorted(at for _, at in answers)
            assert closed_at[0] > 2.9 and closed_at[-1] < 7.0, (closed_at[0], closed_at[-1])

    run(main())


@pytest.mark.parametrize("http_server", SERVERS)
def test_a_connection_that_sends_nothing_is_closed_at_the_head_deadline_without_an_answer(
    tmp_path: Path, http_server: str, run: Runner
) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server, head_timeout=0.5) as (_, port):
            started = time.monotonic()
            assert await exchange(port, b"") == b""
            assert 0.45 < time.monotonic() - started < 3.0

    run(main())


@pytest.mark.parametrize("http_server", SERVERS)
def test_a_slow_body_is_answered_408_at_the_body_deadline(tmp_path: Path, http_server: str, run: Runner) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server, body_timeout=1.0) as (_, port):
            head = b"POST /simple/1.0.0/route HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            started = time.monotonic()
            response = await exchange(port, head + b'{"resource": ')
            assert 0.95 < time.monotonic() - started < 4.0
            assert_error(response, 408, "request_timeout")
            # The whole body in time: answered.
            body = json.dumps({"resource": "straight", "start": "7.41337,43.72956", "end": "7.41983,43.73115"}).encode()
            request = head.replace(b"100", str(len(body)).encode()).replace(b"Host: t", b"Host: t\r\nConnection: close") + body
            assert (await exchange(port, request)).startswith(b"HTTP/1.1 200")

    run(main())


@pytest.mark.parametrize("http_server", SERVERS)
def test_a_20_kb_url_is_answered_414_and_a_long_one_within_the_limit_is_served(tmp_path: Path, http_server: str, run: Runner) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server) as (_, port):  # the defaults: 16384 bytes
            padding = "&x=" + "a" * 20_000
            response = await exchange(port, f"GET {ROUTE}{padding} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
            assert "16384 bytes" in parse(response)[2]["error"]["message"]
            assert_error(response, 414, "url_too_long")
            within = f"GET {ROUTE}{padding[:15_000]} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode()
            assert (await exchange(port, within)).startswith(b"HTTP/1.1 200")

    run(main())


@pytest.mark.parametrize("shape", ["many", "one"])
@pytest.mark.parametrize("http_server", SERVERS)
def test_100_kb_of_headers_are_answered_431(tmp_path: Path, http_server: str, shape: str, run: Runner) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server) as (_, port):  # the defaults: 32768 bytes
            lines = [f"X-Filler-{i}: {'b' * 1000}" for i in range(100)] if shape == "many" else [f"X-Filler: {'b' * 100_000}"]
            headers = "\r\n".join(lines)
            response = await exchange(port, f"GET {ROUTE} HTTP/1.1\r\nHost: t\r\n{headers}\r\n\r\n".encode())
            assert_error(response, 431, "headers_too_large")
            within = "\r\n".join(lines[:20] if shape == "many" else [f"X-Filler: {'b' * 20_000}"])
            served = await exchange(port, f"GET {ROUTE} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{within}\r\n\r\n".encode())
            assert served.startswith(b"HTTP/1.1 200")

    run(main())


@pytest.mark.parametrize("http_server", SERVERS)
def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(tmp_path: Path, http_server: str, run: Runner) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server, keep_alive_timeout=1.0, head_timeout=10.0) as (server, port):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                for _ in range(2):  # kept alive between the two
                    writer.write(f"GET {ROUTE} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
                    head = await reader.readuntil(b"\r\n\r\n")
                    assert head.startswith(b"HTTP/1.1 200")
                    length = int(parse(head + b"{}")[1]["content-length"])
                    await reader.readexactly(length)
                    answered = time.monotonic()
                    await asyncio.sleep(0.5)
                async with asyncio.timeout(5):
                    assert await reader.read(-1) == b""  # closed by the server, without an answer
                assert 0.95 < time.monotonic() - answered < 3.0
                assert server.connections()["open"] == 0
            finally:
                writer.close()

    run(main())


@pytest.mark.parametrize("http_server", SERVERS)
def test_half_a_request_on_a_kept_alive_connection_has_the_head_deadline(tmp_path: Path, http_server: str, run: Runner) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server, keep_alive_timeout=0.5, head_timeout=1.5) as (_, port):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(f"GET {ROUTE} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(int(parse(head + b"{}")[1]["content-length"]))
                await asyncio.sleep(0.2)
                writer.write(b"GET /simple/1.0.0/ro")  # the keep-alive time-out no longer applies
                started = time.monotonic()
                async with asyncio.timeout(5):
                    assert_error(await reader.read(-1), 408, "request_timeout")
                assert 1.45 < time.monotonic() - started < 4.0
            finally:
                writer.close()

    run(main())


@pytest.mark.parametrize("request_line", [b"GET / HTTP/1.1 extra\r\n\r\n", b"\x00\x01\x02 garbage\r\n\r\n"])
@pytest.mark.parametrize("http_server", SERVERS)
def test_bytes_that_are_no_request_get_a_json_400(tmp_path: Path, http_server: str, request_line: bytes, run: Runner) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server) as (_, port):
            assert_error(await exchange(port, request_line), 400, "invalid_request")

    run(main())


@pytest.mark.parametrize("http_server", SERVERS)
def test_a_connection_over_the_cap_is_answered_503_with_retry_after(tmp_path: Path, http_server: str, run: Runner) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server, max_connections=5) as (server, port):
            held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(5)]
            async with asyncio.timeout(5):
                while server.connections()["open"] < 5:
                    await asyncio.sleep(0.01)
            response = await exchange(port, f"GET {ROUTE} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
            headers = assert_error(response, 503, "too_many_connections")
            assert headers["retry-after"] == "1"
            assert server.max_connections == 5 and server.connections()["open"] == 5
            _, writer = held.pop()
            writer.close()
            async with asyncio.timeout(5):
                while server.connections()["open"] > 4:
                    await asyncio.sleep(0.01)
            served = await exchange(port, f"GET {ROUTE} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
            assert served.startswith(b"HTTP/1.1 200")
            for _, writer in held:
                writer.close()

    run(main())


async def stalled_reader(port: int, request: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection with a tiny receive buffer that sends ``request`` (and reads nothing)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window stays small
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    writer.write(request)
    return reader, writer


@pytest.mark.parametrize("http_server", SERVERS)
def test_a_client_that_stops_reading_is_cut_at_the_send_deadline_while_others_are_answered(
    tmp_path: Path, http_server: str, run: Runner
) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server, send_timeout=2.0) as (server, port):
            assert (await exchange(port, f"GET {ROUTE} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())).startswith(
                b"HTTP/1.1 200"
            )
            async with asyncio.timeout(2):
                while server.connections()["open"] > 0:
                    await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)  # its task ends too
            tasks = len(asyncio.all_tasks())
            # 100 OpenAPI documents of 115 kB, pipelined: far more than the socket buffers hold.
            _, writer = await stalled_reader(port, b"GET /simple/1.0.0/openapi.json HTTP/1.1\r\nHost: t\r\n\r\n" * 100)
            started = time.monotonic()
            try:
                async with httpx.AsyncClient(timeout=5) as client:
                    while time.monotonic() - started < 1.5:  # the worker answers the others meanwhile
                        answered = time.monotonic()
                        response = await client.get(f"http://127.0.0.1:{port}{ROUTE}")
                        assert response.status_code == 200 and time.monotonic() - answered < 1.0
                        await asyncio.sleep(0.1)
                async with asyncio.timeout(0.3):
                    while server.connections()["open"] > 1:  # the other clients' connection closes
                        await asyncio.sleep(0.01)
                assert server.connections()["open"] == 1, "the stalled connection was closed before the deadline"
                assert len(asyncio.all_tasks()) > tasks, "no task waits on the stalled connection"
                async with asyncio.timeout(8):
                    while server.connections()["open"] > 0:
                        await asyncio.sleep(0.05)
                assert 1.9 < time.monotonic() - started < 7.0
                async with asyncio.timeout(2):
                    while len(asyncio.all_tasks()) > tasks:  # the app's task blocked on the stalled connection ended too
                        await asyncio.sleep(0.05)
            finally:
                writer.close()
            served = await exchange(port, f"GET {ROUTE} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
            assert served.startswith(b"HTTP/1.1 200")

    run(main())


@pytest.mark.parametrize("http_server", SERVERS)
def test_a_slow_reader_that_keeps_taking_bytes_gets_its_whole_answer(tmp_path: Path, http_server: str, run: Runner) -> None:
    async def main() -> None:
        async with serving(tmp_path, http_server, send_timeout=1.0) as (_, port):
            request = b"GET /simple/1.0.0/openapi.json HTTP/1.1\r\nHost: t\r\n\r\n"
            reader, writer = await stalled_reader(port, request * 4 + request.replace(b"Host: t", b"Host: t\r\nConnection: close"))
            started = time.monotonic()
            received = b""
            try:
                async with asyncio.timeout(30):
                    while chunk := await reader.read(65536):
                        received += chunk
                        await asyncio.sleep(0.3)  # slower than the server writes, never still for a whole second
            finally:
                writer.close()
            assert time.monotonic() - started > 1.5, "too fast to show that the deadline is not for a whole answer"
            assert received.count(b"HTTP/1.1 200") == 5 and received.endswith(b"}")

    run(main())


@pytest.mark.parametrize("http_server", SERVERS)
async def test_child_process_workers_hold_the_service_files_http_limits(tmp_path: Path, osrm_example: Path, http_server: str) -> None:
    example = Example(tmp_path / "monaco", osrm_example)
    service = example.root / "service.toml"
    limits = f'server = "{http_server}"\nhead_timeout = 1.0\nmax_url_bytes = 2048\nmax_header_bytes = 4096\n'
    service.write_text(service.read_text() + f"\n[http]\n{limits}")
    admin = example.administrator()
    await admin.start()
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            await wait_for(lambda: green(client, example))
            workers = (await client.get(f"{example.admin}/services/main")).json()["processes"]
            assert len(workers) == 2 and os.getpid() not in [worker["pid"] for worker in workers]
        port = example.service_port
        query = "&".join(f"{key}={value}" for key, value in CHILD_ROUTE.items())
        started = time.monotonic()
        assert_error(await exchange(port, b"GET /simple/1.0.0/rou"), 408, "request_timeout")
        assert 0.95 < time.monotonic() - started < 4.0  # the file's 1 s, not the default 10 s
        response = await exchange(port, f"GET /simple/1.0.0/route?{query}&x={'a' * 3000} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        assert_error(response, 414, "url_too_long")
        assert "at most 2048 bytes" in parse(response)[2]["error"]["message"]
        response = await exchange(port, f"GET /simple/1.0.0/route?{query} HTTP/1.1\r\nHost: t\r\nX-Filler: {'b' * 5000}\r\n\r\n".encode())
        assert_error(response, 431, "headers_too_large")
        served = await exchange(
            port, f"GET /simple/1.0.0/route?{query}&x={'a' * 1500} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode()
        )
        assert served.startswith(b"HTTP/1.1 200")
    finally:
        await admin.stop()


def _in_a_process(soft: int, hard: int, code: str) -> str:
    """What ``code`` prints in a Python process whose open-file limit starts at (soft, hard)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    result = subprocess.run([sys.executable, "-c", code], preexec_fn=limit, capture_output=True, text=True, check=True, timeout=60)
    return result.stdout.strip()


def test_the_open_file_limit_is_raised_and_the_cap_derived_from_it() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard < 2000:
        pytest.skip(f"a hard open-file limit of {hard}")
    code = "from roadkit.process.bounds import connection_cap as c; import resource as r; print(c({}), r.getrlimit(r.RLIMIT_NOFILE)[0])"
    assert _in_a_process(1000, hard, code.format("None")) == f"{min(10_000, hard // 2)} {hard}"
    assert _in_a_process(1000, 1000, code.format("None")) == "500 1000"  # not raised: the cap is half of it
    assert _in_a_process(1000, 1000, code.format("5000")) == "744 1000"  # lowered below the limit
    assert _in_a_process(1000, 1000, code.format("300")) == "300 1000"


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("head_timeout = 0", "http.head_timeout: expected a number of seconds from 0.05 to 3600, got 0.0"),
        ("body_timeout = nan", "http.body_timeout: expected a number of seconds from 0.05 to 3600, got nan"),
        ('keep_alive_timeout = "5"', "http.keep_alive_timeout: expected a number"),
        ("send_timeout = 1e999", "http.send_timeout: expected a number of seconds from 0.05 to 3600, got inf"),
        ("max_url_bytes = 10", "http.max_url_bytes: expected 1024 to 1048576 bytes, got 10"),
        ("max_header_bytes = 1.5", "http.max_header_bytes: expected an integer"),
        ("max_connections = 0", "http.max_connections: expected 1 to 1000000 connections, got 0"),
    ],
)
def test_the_connection_limits_are_checked_in_the_service_file(tmp_path: Path, setting: str, message: str) -> None:
    service = write_service(tmp_path, service=SERVICE + f"\n[http]\n{setting}\n")
    with pytest.raises(ConfigurationError) as error:
        load_service(service)
    assert f"{service}: {message}" in str(error.value)
