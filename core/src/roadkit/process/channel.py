"""The private channel between the administrator and a service's worker process.

One end of a ``socketpair``; each message is a 4-byte big-endian length then that many bytes of
JSON (an object). The worker sends events (``{"event": "ready"}``, ``{"event": "failed",
"reason": ...}``) and answers (``{"id": n, "result": ...}`` or ``{"id": n, "error": {...}}``); the
administrator sends requests (``{"id": n, "op": "health"}``...). Anything else is a
:class:`ChannelError`: the reader never trusts the other side.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

import orjson

#: Larger frames are refused: a health answer is a few kilobytes, garbage often looks huge.
MAX_FRAME = 16 * 1024 * 1024
_HEADER = struct.Struct(">I")


class ChannelError(Exception):
    """The other side sent something that is not a frame of a JSON object."""


class ChannelClosed(ChannelError):
    """The other side closed the channel (it exited, or closed it on purpose)."""


def encode(message: dict[str, Any]) -> bytes:
    """One frame: the length, then the JSON."""
    body = orjson.dumps(message)
    return _HEADER.pack(len(body)) + body


def decode(body: bytes) -> dict[str, Any]:
    """The JSON object of a frame's body (a ChannelError for anything else)."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ChannelError(f"a frame that is not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise ChannelError(f"a frame that is not a JSON object (a {type(message).__name__})")
    return message


class Channel:
    """Frames over a connected stream socket, read and written on the running event loop."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, sock: socket.socket) -> Channel:
        """A channel over ``sock`` (which it now owns)."""
        reader, writer = await asyncio.open_connection(sock=sock, limit=MAX_FRAME)
        return cls(reader, writer)

    async def receive(self) -> dict[str, Any]:
        """The next message; ChannelClosed at the end of the stream, ChannelError on garbage."""
        try:
            header = await self.reader.readexactly(_HEADER.size)
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise ChannelError("the channel closed inside a frame header") from None
            raise ChannelClosed("the channel was closed") from None
        except ConnectionError as exc:
            raise ChannelClosed(f"the channel was closed ({exc})") from None
        (length,) = _HEADER.unpack(header)
        if length > MAX_FRAME:
            raise ChannelError(f"a frame of {length} bytes (at most {MAX_FRAME})")
        try:
            body = await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError):
            raise ChannelError("the channel closed inside a frame") from None
        return decode(body)

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message (ChannelClosed when the other side is gone)."""
        try:
            self.writer.write(encode(message))
            await self.writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            raise ChannelClosed(f"the channel was closed ({exc})") from None

    def close(self) -> None:
        """Close this end (the other side reads the end of the stream)."""
        self.writer.close()
