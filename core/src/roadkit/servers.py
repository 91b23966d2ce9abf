"""Running ASGI apps with hypercorn: on listeners, on pre-bound sockets, in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

from hypercorn.asyncio import serve
from hypercorn.config import Config
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roadkit.config.models import Listener

log = logging.getLogger(__name__)


def hypercorn_config(listeners: Sequence[Listener], *, access_log: bool = False, startup_timeout: float = 120.0) -> Config:
    """A hypercorn configuration binding every listener (HTTPS where a certificate is given)."""
    config = Config()
    plain = [listener.bind for listener in listeners if not listener.https]
    secure = [listener for listener in listeners if listener.https]
    config.bind = plain
    if secure:
        # hypercorn serves one certificate: every HTTPS listener of a service shares the first one's.
        config.insecure_bind = plain
        config.bind = [listener.bind for listener in secure]
        config.certfile = str(secure[0].certfile)
        config.keyfile = str(secure[0].keyfile)
    config.accesslog = logging.getLogger("roadkit.access") if access_log else None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.startup_timeout = startup_timeout
    config.graceful_timeout = 5.0
    config.keep_alive_timeout = 75.0
    return config


class Draining:
    """ASGI wrapper: once ``draining`` is set, every response asks the client to close its connection.

    A server being replaced answers its keep-alive clients this way for a moment before it stops, so
    that they open their next connection to the new server instead of sending a request on a
    connection the old one is closing.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.draining = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and self.draining:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, send_closing)


class Server:
    """One hypercorn server for an app; ``start`` returns once every listener accepts connections."""

    def __init__(
        self,
        app: ASGIApp,
        listeners: Sequence[Listener],
        *,
        access_log: bool = False,
        startup_timeout: float = 120.0,
        sockets: dict[str, socket.socket] | None = None,
    ) -> None:
        self.app = Draining(app)
        self.listeners = list(listeners)
        self.config = hypercorn_config(self.listeners, access_log=access_log, startup_timeout=startup_timeout)
        self._shutdown = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        #: The listening sockets by bind address, kept by roadkit (hypercorn serves on duplicates), so
        #: that a replacing server can accept on the very same sockets: no moment without a listener.
        self.sockets: dict[str, socket.socket] = dict(sockets or {})

    def _bind(self) -> None:
        """Bind every listener now, so that a port in use is an immediate OSError naming it."""
        plain: list[str] = []
        secure: list[str] = []
        duplicates: list[int] = []
        for listener in self.listeners:
            sock = self.sockets.get(listener.bind)
            if sock is None:
                family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
                sock = socket.socket(family, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sock.bind((listener.host, listener.port))
                except OSError as exc:
                    sock.close()
                    for fd in duplicates:
                        os.close(fd)
                    raise OSError(exc.errno, f"cannot listen on {listener.bind}: {exc.strerror}") from None
                self.sockets[listener.bind] = sock
            # hypercorn closes its duplicate when it stops; this server closes the original in stop().
            duplicates.append(os.dup(sock.fileno()))
            (secure if listener.https else plain).append(f"fd://{duplicates[-1]}")
        self.config.bind = secure or plain
        self.config.insecure_bind = plain if secure else []

    def hand_over(self) -> dict[str, socket.socket]:
        """Give the listening sockets to the server that replaces this one; ``stop`` then leaves them open."""
        sockets, self.sockets = self.sockets, {}
        return sockets

    async def start(self, timeout: float = 120.0) -> None:
        """Bind, serve in the background, and return once every listener accepts connections."""
        self._shutdown.clear()
        self._bind()
        self.task = asyncio.create_task(serve(self.app, self.config, shutdown_trigger=self._shutdown.wait))  # type: ignore[arg-type]
        deadline = asyncio.get_running_loop().time() + timeout
        for listener in self.listeners:
            while True:
                if self.task.done():
                    exc = self.task.exception()
                    raise OSError(f"server on {listener.bind} stopped before it was ready: {exc!r}")
                if await _accepts(listener):
                    break
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"server on {listener.bind} not ready after {timeout:g} s")
                await asyncio.sleep(0.05)

    async def drain(self, seconds: float) -> None:
        """For ``seconds``, answer every request with ``Connection: close``; then stop."""
        self.app.draining = True
        await asyncio.sleep(seconds)
        await self.stop()

    async def stop(self) -> None:
        """Stop accepting, finish the requests in flight, run the app's shutdown."""
        self._shutdown.set()
        if self.task is not None:
            try:
                await self.task
            except Exception:
                log.exception("server stopped with an error")
            self.task = None
        for sock in self.sockets.values():
            sock.close()
        self.sockets = {}


async def _accepts(listener: Listener) -> bool:
    host = "127.0.0.1" if listener.host in ("0.0.0.0", "") else ("::1" if listener.host == "::" else listener.host)
    try:
        context = None
        if listener.https:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, listener.port, ssl=context), 1.0)
    except (OSError, TimeoutError, ssl.SSLError):
        return False
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()
    return True


#: Access-log format without the query string: codes, states and tokens never reach the log.
ACCESS_LOG_FORMAT = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(L)ss'


def bound_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0 = a free port), not listening yet."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


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
