"""Service listeners answer without Nagle's delay: accepted connections get TCP_NODELAY."""

from __future__ import annotations

import asyncio
import socket

from roadkit.config.models import Listener
from roadkit.process.listen import bind_listener


async def test_accepted_connections_have_tcp_nodelay() -> None:
    # Without it a keep-alive client waits for its delayed ACK (~40 ms) between a response's writes.
    sock = bind_listener(Listener(host="127.0.0.1", port=0))
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(connection, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        assert await asyncio.wait_for(accepted, 10) != 0
        writer.close()
        await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()
