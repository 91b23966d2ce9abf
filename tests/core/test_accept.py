"""The workers' acceptor (roadkit.process.accept): one connection at a time, left to a less loaded worker for a moment.

On asyncio's loop and on uvloop's (the workers' loop), with real sockets; and the connections it
hands to either HTTP server (roadkit.process.listen.SocketServer) close when their client closes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
import uvloop
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from roadkit.config.models import Listener
from roadkit.process.accept import NOT_ACCEPTING, Acceptor, ConnectionTable, Share, connection_waiting
from roadkit.process.listen import SocketServer, bind_listener
from tests.core.test_children import _self_signed

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


def run(loop: str, coroutine: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coroutine, loop_factory=LOOPS[loop])


class Recorder(asyncio.Protocol):
    """Records each connection's transport."""

    def __init__(self, made: list[asyncio.BaseTransport]) -> None:
        self.made = made

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.made.append(transport)


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


def listening() -> socket.socket:
    return bind_listener(Listener(host="127.0.0.1", port=0))


@pytest.mark.parametrize("loop", LOOPS)
def test_accepted_connections_have_tcp_nodelay(loop: str) -> None:
    async def main() -> None:
        made: list[asyncio.BaseTransport] = []
        accepted: list[int] = []
        sock = listening()
        acceptor = Acceptor(sock, lambda: Recorder(made), on_accept=lambda: accepted.append(1))
        acceptor.start()
        clients = [await asyncio.open_connection(*sock.getsockname()[:2]) for _ in range(8)]
        await until(lambda: len(made) == 8)
        # Without TCP_NODELAY a keep-alive client waits for its delayed ACK (~40 ms) between a response's writes.
        assert all(t.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for t in made)
        await until(lambda: not acceptor.connecting)
        assert len(accepted) == 8
        acceptor.close()
        for _, writer in clients:
            writer.close()
            await writer.wait_closed()
        for transport in made:
            transport.close()

    run(loop, main())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_worker_holding_more_connections_still_accepts_what_a_frozen_one_leaves(loop: str) -> None:
    # Another worker says it accepts and holds fewer connections, but never takes any (stopped, or busy).
    table = ConnectionTable.create()
    assert table is not None
    try:
        mine, other = table.allocate(), table.allocate()
        assert mine is not None and other is not None
        share = Share(table, mine)
        share.publish(5)
        table.set(other, 0)
        turns: list[bool] = []

        def my_turn() -> bool:
            turns.append(share.my_turn())
            return turns[-1]

        async def main() -> None:
            made: list[asyncio.BaseTransport] = []
            sock = listening()
            acceptor = Acceptor(sock, lambda: Recorder(made), my_turn=my_turn)
            acceptor.start()
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            await until(lambda: len(made) == 1)
            assert turns[0] is False  # it was left to the other worker first
            writer.close()
            acceptor.close()
            made[0].close()

        run(loop, main())
        table.set(other, 7)
        assert share.my_turn()  # the other one holds more now
        table.release(other)
        assert table.get(other) == NOT_ACCEPTING and share.my_turn()
        assert table.allocate() == other  # a freed slot is handed out again
    finally:
        table.close()


@pytest.mark.parametrize("loop", LOOPS)
def test_a_tls_client_that_never_says_hello_is_dropped_after_the_handshake_timeout(loop: str, tmp_path: Path) -> None:
    _self_signed(tmp_path, "site")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "site.pem", tmp_path / "site.key")

    async def main() -> None:
        made: list[asyncio.BaseTransport] = []
        sock = listening()
        acceptor = Acceptor(sock, lambda: Recorder(made), ssl_context=context, ssl_handshake_timeout=0.2)
        acceptor.start()
        reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        await until(lambda: bool(acceptor.connecting))
        # Its handshake under way does not count as a connection waiting: that may take round trips.
        assert not connection_waiting()
        # Silent client: the server closes the connection once the handshake time-out has passed (the default is 60 s).
        assert await asyncio.wait_for(reader.read(), 10) == b""
        await until(lambda: not acceptor.connecting)
        assert made == []
        writer.close()
        # A client that does say hello is served over TLS.
        client = ssl.create_default_context()
        client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2], ssl=client)
        await until(lambda: len(made) == 1)
        assert made[0].get_extra_info("ssl_object") is not None
        writer.close()
        made[0].close()
        acceptor.close()

    run(loop, main())


def _server_side(port: int) -> list[str]:
    """The states of this machine's TCP sockets on local port ``port`` that the server has not closed.

    ESTABLISHED, or CLOSE_WAIT once the client closed its side; once the server closed a socket, the
    kernel alone finishes the connection (TIME_WAIT, LAST_ACK...): not listed.
    """
    states = {"01": "ESTABLISHED", "08": "CLOSE_WAIT"}
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] in states:
            found.append(states[fields[3]])
    return found


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("http_server", ["hypercorn", "uvicorn"])
def test_a_keep_alive_connection_the_client_closes_is_closed_and_no_longer_counted(
    http_server: str, scheme: str, loop: str, tmp_path: Path
) -> None:
    # hypercorn kept each such connection (its task, and its socket in CLOSE_WAIT) until its keep-alive
    # time-out, 75 s: a client opening and closing connections piled up descriptors (issue 11).
    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    certificate: dict[str, Any] = {}
    client: ssl.SSLContext | None = None
    if scheme == "https":
        _self_signed(tmp_path, "site")
        certificate = {"certfile": tmp_path / "site.pem", "keyfile": tmp_path / "site.key"}
        client = ssl.create_default_context()
        client.check_hostname, client.verify_mode = False, ssl.CERT_NONE

    async def main() -> None:
        sock = listening()
        host, port = sock.getsockname()[:2]
        listener = Listener(host=host, port=port, **certificate)
        server = SocketServer(Starlette(routes=[Route("/", hello)]), [(listener, sock)], http_server=http_server)
        await server.start()
        try:
            idle = len(asyncio.all_tasks())
            clients = [await asyncio.open_connection(host, port, ssl=client) for _ in range(8)]
            for reader, writer in clients:
                writer.write(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
                head = await reader.readuntil(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 200") and await reader.readexactly(5) == b"hello"
            assert server.connections() == {"open": 8, "accepted": 8}
            assert _server_side(port) == ["ESTABLISHED"] * 8
            for _, writer in clients:
                writer.close()
                await writer.wait_closed()
            # Far below the 75 s keep-alive time-out: the server closes its end once it reads the client's.
            with contextlib.suppress(TimeoutError):
                await until(lambda: (server.connections()["open"], _server_side(port), len(asyncio.all_tasks())) == (0, [], idle))
            left = len(asyncio.all_tasks()) - idle  # hypercorn's task of each connection, and its keep-alive timer
            assert (server.connections()["open"], _server_side(port), left) == (0, [], 0)
        finally:
            await server.stop()
            sock.close()

    run(loop, main())


@pytest.mark.parametrize("requests", [1, 2])
@pytest.mark.parametrize("http_server", ["hypercorn", "uvicorn"])
@pytest.mark.parametrize("loop", LOOPS)
def test_a_client_that_half_closes_after_its_requests_is_answered_then_closed(loop: str, http_server: str, requests: int) -> None:
    # The requests and the client's end arrive together: they are answered first, then the connection
    # closes (hypercorn kept it, the socket in CLOSE_WAIT, for its 75 s keep-alive time-out; uvicorn
    # closed it at the client's end without answering).
    async def hello(request: Request) -> PlainTextResponse:
        await asyncio.sleep(0.05)  # the end arrives while the request is in flight
        return PlainTextResponse("hello")

    async def main() -> None:
        sock = listening()
        host, port = sock.getsockname()[:2]
        server = SocketServer(Starlette(routes=[Route("/", hello)]), [(Listener(host=host, port=port), sock)], http_server=http_server)
        await server.start()
        try:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n" * requests)
            writer.write_eof()
            answer, closed = b"", False
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    while chunk := await reader.read(65536):
                        answer += chunk
                    closed = True  # by the server
            assert (answer.count(b"HTTP/1.1 200"), answer.endswith(b"hello"), closed) == (requests, True, True), answer
            writer.close()
            await until(lambda: _server_side(port) == [])
        finally:
            await server.stop()
            sock.close()

    run(loop, main())


@pytest.mark.parametrize("loop", LOOPS)
def test_connection_waiting_says_whether_a_connection_waits_for_this_process_to_accept_it(loop: str) -> None:
    async def main() -> None:
        made: list[asyncio.BaseTransport] = []
        clients: list[socket.socket] = []
        sock = listening()
        assert not connection_waiting()  # no acceptor in this process
        refuse = True
        acceptor = Acceptor(sock, lambda: Recorder(made), my_turn=lambda: not refuse)
        acceptor.start()
        try:
            assert not connection_waiting()
            clients.append(socket.create_connection(sock.getsockname()[:2]))  # the kernel completes it; nobody accepted it
            assert connection_waiting()
            acceptor._ready()  # what the loop calls now: not this worker's turn, so it defers for DEFER
            assert not made and not connection_waiting()  # left to another worker meanwhile: not waiting for this one
            refuse = False
            await until(lambda: len(made) == 1 and not acceptor.connecting)  # taken after DEFER all the same
            assert not connection_waiting()
            clients.append(socket.create_connection(sock.getsockname()[:2]))
            assert connection_waiting()
        finally:
            acceptor.close()
            assert not connection_waiting()  # closed: this process accepts no more
            for client in clients:
                client.close()
            for transport in made:
                transport.close()

    run(loop, main())
