"""Subscriber callbacks of asynchronous routes: a POST of the result, never to a private address unless allowed."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from urllib.parse import urlsplit

import aiohttp

log = logging.getLogger("roadkit.apis.ogcapi_routes")
TIMEOUT = aiohttp.ClientTimeout(total=10)


async def refused_address(url: str) -> str | None:
    """Why ``url``'s host may not be called (loopback, link-local, private...), or None when it is public."""
    host = urlsplit(url).hostname
    if not host:
        return "no host"
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return "the host name does not resolve"
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if not address.is_global or address.is_multicast:
            return f"{host} is at {address}, a loopback, link-local, private or reserved address"
    return None


async def notify(url: str, body: bytes, media_type: str, allow_private: bool) -> None:
    """POST ``body`` to ``url`` (through ``HTTP_PROXY``/``HTTPS_PROXY`` when set); failures are logged, not raised."""
    if not allow_private and (reason := await refused_address(url)) is not None:
        log.warning("subscriber callback not called: %s", reason)
        return
    try:
        async with (
            aiohttp.ClientSession(trust_env=True, timeout=TIMEOUT) as session,
            session.post(url, data=body, headers={"Content-Type": media_type}, allow_redirects=False) as response,
        ):
            log.debug("subscriber %s answered %s", url, response.status)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        log.warning("subscriber callback to %s failed: %r", url, exc)
