"""Error answers of the admin API without passwords.

A refused document may be quoted back in the error's message (a DSN with its password in a wrong
key, a stored file changed by hand): every error answer of the admin listener goes through
:func:`roadkit.config.secrets.redact` as its other answers do. Only the admin app has this
middleware: the routing APIs' answers never hold a configuration document.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roadkit.config.secrets import redact, redact_text


def redacted_body(body: bytes) -> bytes:
    """An error body with every password it holds replaced by ``***`` (JSON kept JSON)."""
    try:
        content: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return redact_text(body.decode("utf-8", errors="replace")).encode()
    return orjson.dumps(redact(content))


class RedactErrors:
    """ASGI middleware: the body of every answer of status 400 or more, passwords hidden (its length set again)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def redacting_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if message["status"] < 400:
                    await send(message)
                    return
                start = message  # held until the whole body is there
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            whole = b"".join(chunks)
            if not whole:  # a HEAD: nothing to hide, the length stays the GET's
                await send(start)
                await send(message)
                return
            body = redacted_body(whole)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, redacting_send)
