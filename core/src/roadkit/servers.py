"""The routing core's serving code: an app on its configured listeners with hypercorn or uvicorn.

``hypercorn`` is the design's server and stays supported; ``uvicorn`` (httptools parser) serves the
same listeners, certificates, shared sockets and graceful stop, faster (bench/README.md has the
figures). A service file picks one with ``[http] server = "..."``.

The helpers the apps, tests and tools use (an app on a pre-bound socket, in a thread, waiting until
it answers) are in :mod:`roadkit_support.serving`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
from collections.abc import Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs
from hypercorn.asyncio import serve
from hypercorn.config import Config
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roadkit.config.models import Listener

log = logging.getLogger(__name__)

HttpServer = Literal["hypercorn", "uvicorn"]
#: The HTTP servers a service may run on (``[http] server`` of a service file).
HTTP_SERVERS: tuple[HttpServer, ...] = ("hypercorn", "uvicorn")


def hypercorn_config(
    *, certfile: Path | None = None, keyfile: Path | None = None, access_log: bool = False, startup_timeout: float = 120.0
) -> Config:
    """A hypercorn configuration for listeners that share one certificate (none: plain HTTP).

    It binds nothing: :meth:`Server._bind` gives it the listening sockets, and is the only place
    that sets ``bind``.
    """
    config = Config()
    config.bind = []
    config.insecure_bind = []
    if certfile is not None:
        config.certfile = str(certfile)
        config.keyfile = str(keyfile) if keyfile is not None else None
    config.accesslog = logging.getLogger("roadkit.access") if access_log else None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.startup_timeout = startup_timeout
    config.graceful_timeout = 5.0
    config.keep_alive_timeout = 75.0
    return config


@attrs.define
class ListenerGroup:
    """Listeners served by one hypercorn ``serve``: plain HTTP ones, or HTTPS ones with one certificate."""

    config: Config
    listeners: list[Listener]


def listener_groups(listeners: Sequence[Listener], *, access_log: bool = False, startup_timeout: float = 120.0) -> list[ListenerGroup]:
    """The listeners grouped by certificate: hypercorn serves one certificate per ``serve``, so each
    HTTPS certificate gets its own, and every listener presents the certificate it was configured with.
    """
    groups: dict[tuple[Path | None, Path | None], ListenerGroup] = {}
    for listener in listeners:
        key = (listener.certfile, listener.keyfile)
        if key not in groups:
            config = hypercorn_config(
                certfile=listener.certfile, keyfile=listener.keyfile, access_log=access_log, startup_timeout=startup_timeout
            )
            groups[key] = ListenerGroup(config, [])
        groups[key].listeners.append(listener)
    return list(groups.values())


class NoLifespan:
    """ASGI wrapper for the second and later ``serve`` of one app: the app's start-up and shutdown run once."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


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
    """One app served on its listeners; ``start`` returns once every listener accepts connections.

    Each HTTPS certificate gets its own hypercorn ``serve`` (hypercorn presents one certificate per
    configuration); the app's lifespan runs once, in the first.
    """

    def __init__(
        self,
        app: ASGIApp,
        listeners: Sequence[Listener],
        *,
        access_log: bool = False,
        startup_timeout: float = 120.0,
        sockets: dict[str, socket.socket] | None = None,
        http_server: HttpServer = "hypercorn",
    ) -> None:
        if http_server not in HTTP_SERVERS:
            raise ValueError(f"unknown HTTP server {http_server!r}: expected one of {', '.join(HTTP_SERVERS)}")
        self.http_server = http_server
        self.access_log = access_log
        self.app = Draining(app)
        self.listeners = list(listeners)
        self.groups = listener_groups(self.listeners, access_log=access_log, startup_timeout=startup_timeout)
        self._shutdown = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []
        self._uvicorns: list[Any] = []
        #: The listening sockets by bind address, kept by roadkit (hypercorn serves on duplicates), so
        #: that a replacing server can accept on the very same sockets: no moment without a listener.
        self.sockets: dict[str, socket.socket] = dict(sockets or {})

    def _bind(self) -> None:
        """Bind every listener now, so that a port in use is an immediate OSError naming it."""
        duplicates: list[int] = []
        created: list[str] = []  # sockets bound by this call: closed again if a later listener fails
        binds: list[list[str]] = []
        for group in self.groups:
            binds.append([])
            for listener in group.listeners:
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
                        for address in created:
                            self.sockets.pop(address).close()
                        raise OSError(exc.errno, f"cannot listen on {listener.bind}: {exc.strerror}") from None
                    self.sockets[listener.bind] = sock
                    created.append(listener.bind)
                if self.http_server == "hypercorn":
                    # hypercorn closes its duplicate when it stops; this server closes the original in stop().
                    duplicates.append(os.dup(sock.fileno()))
                    binds[-1].append(f"fd://{duplicates[-1]}")
        # Set only once every socket is bound: a failure above leaves the configurations untouched.
        for group, bind in zip(self.groups, binds, strict=True):
            group.config.bind = bind

    def hand_over(self) -> dict[str, socket.socket]:
        """Give the listening sockets to the server that replaces this one; ``stop`` then leaves them open."""
        sockets, self.sockets = self.sockets, {}
        return sockets

    async def start(self, timeout: float = 120.0) -> None:
        """Bind, serve in the background, and return once every listener accepts connections."""
        self._shutdown.clear()
        self._bind()
        deadline = asyncio.get_running_loop().time() + timeout
        # The first group runs the app's start-up; the others begin once it accepts, so that no
        # listener answers before the app has started.
        for index, group in enumerate(self.groups):
            app: ASGIApp = self.app if index == 0 else NoLifespan(self.app)
            task = asyncio.create_task(self._serve(app, group))
            self.tasks.append(task)
            for listener in group.listeners:
                await self._wait_accepting(task, listener, deadline, timeout)

    def _serve(self, app: ASGIApp, group: ListenerGroup) -> Coroutine[Any, Any, None]:
        if self.http_server == "hypercorn":
            return serve(app, group.config, shutdown_trigger=self._shutdown.wait)  # type: ignore[arg-type]
        # uvicorn closes the sockets it serves when it stops: it gets duplicates, as hypercorn does.
        # Non-blocking first: socket.dup() copies the original's time-out onto the file description
        # the duplicates share, and a blocking one would make a server still serving it (the one
        # being replaced) block in accept() when another server takes the connection.
        sockets = []
        for listener in group.listeners:
            original = self.sockets[listener.bind]
            original.setblocking(False)
            sockets.append(original.dup())
        server = uvicorn_server(app, group.config, access_log=self.access_log)
        self._uvicorns.append(server)
        return _run_uvicorn(server, sockets)

    async def _wait_accepting(self, task: asyncio.Task[None], listener: Listener, deadline: float, timeout: float) -> None:
        while True:
            if task.done():
                exc = task.exception()
                raise OSError(f"server on {listener.bind} stopped before it was ready: {exc!r}")
            if await _accepts(listener):
                return
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
        for server in self._uvicorns:
            server.should_exit = True
        self._uvicorns = []
        # The later groups first: the first one runs the app's shutdown, once nothing else serves it.
        for task in reversed(self.tasks):
            try:
                await task
            except Exception:
                log.exception("server stopped with an error")
        self.tasks = []
        for sock in self.sockets.values():
            sock.close()
        self.sockets = {}


def uvicorn_server(app: ASGIApp, config: Config, *, access_log: bool = False) -> Any:
    """A uvicorn server for one listener group, configured like :func:`hypercorn_config` configures hypercorn.

    ``config`` is the group's hypercorn configuration (its certificate is the group's); the app's
    lifespan is expected (the later groups get :class:`NoLifespan`, as with hypercorn).
    """
    import uvicorn

    class Uvicorn(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # The administrator handles SIGINT/SIGTERM and stops its servers itself.
            yield

    settings = uvicorn.Config(
        app,
        http="auto",  # httptools when installed (it is a dependency), h11 otherwise
        lifespan="on",
        log_config=None,  # roadkit configures logging
        access_log=access_log,
        proxy_headers=False,  # as hypercorn: the APIs read X-Forwarded-* themselves (roadkit.api.base_url)
        server_header=False,
        timeout_keep_alive=int(config.keep_alive_timeout),
        timeout_graceful_shutdown=int(config.graceful_timeout),
        ssl_certfile=config.certfile,
        ssl_keyfile=config.keyfile,
    )
    return Uvicorn(settings)


async def _run_uvicorn(server: Any, sockets: list[socket.socket]) -> None:
    try:
        await server.serve(sockets=sockets)
    except SystemExit:
        # uvicorn exits the process when the app's start-up fails: here it only ends this server.
        raise OSError("the app's start-up failed (uvicorn)") from None
    finally:
        for sock in sockets:
            sock.close()


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
