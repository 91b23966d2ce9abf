"""Serving helpers for the apps, tests and tools: ASGI apps on pre-bound sockets, in a thread, until up.

Apart from the routing core's serving code (``roadkit.process.listen``) and importing
nothing of roadkit, so that an app that is no routing service (the development IAM) serves itself
with these and nothing more.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from hypercorn.asyncio import serve
from hypercorn.config import Config

__all__ = ["ACCESS_LOG_FORMAT", "ServerThread", "bound_socket", "reserve_port", "serve_all", "socket_config", "wait_until_up"]


#: Access-log format without the query string: codes, states and tokens never reach the log.
ACCESS_LOG_FORMAT = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(L)ss'


def bound_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0 = a free port), not listening yet."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


def reserve_port(host: str = "127.0.0.1") -> int:
    """A port for a server that binds it itself later (a configuration file names it), kept from others.

    Binding port 0 and closing gives a port anyone may be handed next (tests running in parallel
    race for it). Here the port is bound (:func:`bound_socket`) and a connection to it is accepted
    and closed by the listening side, which leaves the port in TIME_WAIT for a minute: the kernel
    hands it to no other ``bind`` (port 0 or not), while a server setting SO_REUSEADDR (roadkit's,
    hypercorn's, the engines') binds it at once.
    """
    with bound_socket(host, 0) as listener:
        listener.listen(1)
        port = int(listener.getsockname()[1])
        with socket.create_connection((host, port), timeout=5):
            accepted, _ = listener.accept()
            accepted.close()  # the listening side closes first: TIME_WAIT is on the reserved port
    return port


def socket_config(sock: socket.socket, *, access_log: bool = False) -> Config:
    """A hypercorn config that serves on an already bound socket (its file descriptor moves to hypercorn)."""
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = logging.getLogger("hypercorn.access") if access_log else None
    config.errorlog = logging.getLogger("hypercorn.error")  # through the app's logging, not a second handler
    config.access_log_format = ACCESS_LOG_FORMAT
    config.graceful_timeout = 1.0
    return config


async def serve_all(apps: Sequence[tuple[Any, Config]], stop: asyncio.Event | None = None) -> None:
    """Serve every (app, config) pair on the running loop until ``stop`` is set (or SIGINT/SIGTERM).

    One shared event stops every server: hypercorn's own signal handling would only stop the
    last server started, since a loop has one handler per signal.
    """
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    await asyncio.gather(*(serve(app, config, shutdown_trigger=stop.wait) for app, config in apps))


def wait_until_up(url: str, timeout: float = 15.0, *, alive: Callable[[], bool] | None = None) -> None:
    """Poll ``url`` until the server answers with any HTTP status.

    ``alive`` (e.g. ``lambda: process.poll() is None``) is asked before each try: a server that
    died is a RuntimeError at once, not a time-out later.
    """
    deadline = time.monotonic() + timeout
    while True:
        if alive is not None and not alive():
            raise RuntimeError(f"the server for {url} exited before it answered")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"server at {url} did not start within {timeout} s") from None
            time.sleep(0.05)


class ServerThread:
    """Serve ASGI apps on pre-bound sockets in a daemon thread with its own event loop."""

    def __init__(self, apps: Sequence[tuple[Any, socket.socket]], *, access_log: bool = False) -> None:
        self._configs = [(app, socket_config(sock, access_log=access_log)) for app, sock in apps]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="roadkit-server-thread", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._started.set()
            await serve_all(self._configs, self._stop)

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported to the thread that waits for start-up
            self._error = exc
            self._started.set()

    def start(self, ready_url: str) -> None:
        """Start serving and return once ``ready_url`` answers."""
        self._thread.start()
        self._started.wait(10)
        if self._error is not None:
            raise RuntimeError("test server failed to start") from self._error
        wait_until_up(ready_url)

    def stop(self) -> None:
        """Shut the servers down gracefully and wait for the thread."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
