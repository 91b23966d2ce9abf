"""Listening sockets held across restarts, and an HTTP server on such sockets that drains on stop.

The handle of a managed service binds its listeners once (:class:`ListeningSockets`) and keeps
them while its workers come and go: every worker, in this process or in a child process, accepts
on the same kernel socket (one accept queue), so a restart starts the new workers on the socket
the old ones still serve, and a connection waiting in the queue is taken by whoever accepts next.
Each worker takes one connection at a time from the queue (:mod:`roadkit.process.accept`), so that the
connections of a client that opens many at once spread over the workers.

:class:`SocketServer` serves an ASGI app on such sockets with hypercorn's HTTP machinery, or with
uvicorn's (httptools) protocol, the service file's ``[http] server`` (uvicorn is
measurably faster, so it is the default). Its stop
is a drain: stop accepting, answer for a moment with ``Connection: close`` (connections accepted
just before send their request, keep-alive clients move to the new workers), then close idle
connections and finish the requests in flight.

A connection its client closes is closed at once on either server (hypercorn on its own keeps it,
task and socket, until its keep-alive time-out: see :class:`_ClientStream`). Both hold the service's
``[http]`` limits: deadlines, head sizes and a cap of connections (:mod:`roadkit.process.bounds`).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import logging
import os
import socket
import ssl
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hypercorn.asyncio.lifespan import Lifespan
from hypercorn.asyncio.worker_context import WorkerContext
from hypercorn.config import Config
from hypercorn.utils import wrap_app
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roadkit.config.models import Http, Listener
from roadkit.process.accept import NOT_ACCEPTING, Acceptor, Share
from roadkit.process.bounds import BoundedHttpTools, BoundedTCPServer, connection_cap, too_many_connections

log = logging.getLogger(__name__)

BACKLOG = 1024
#: The buffer limit of a hypercorn connection's stream reader (asyncio.start_server's default).
STREAM_LIMIT = 2**16


def bind_listener(listener: Listener) -> socket.socket:
    """A listening socket for ``listener``; an OSError naming the address when it is taken."""
    family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
    # IPPROTO_TCP, not 0: accepted sockets inherit it, and asyncio sets TCP_NODELAY only on sockets whose proto
    # says TCP; without it Nagle holds a response's second write for the client's delayed ACK (~40 ms per request).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((listener.host, listener.port))
        sock.listen(BACKLOG)
        sock.setblocking(False)  # the file's mode, shared by every copy in every worker: never blocking
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {listener.bind}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


def _nonblocking_copy(sock: socket.socket) -> socket.socket:
    copy = socket.socket(sock.family, sock.type, sock.proto, fileno=os.dup(sock.fileno()))
    copy.setblocking(False)
    return copy


class Rebind:
    """The sockets of a new configuration's listeners while it starts: those bound already, and new ones.

    ``commit`` once the new configuration serves: the new sockets join the kept ones, and the sockets
    no longer listed are returned (closed by the caller once the workers that used them stopped).
    ``rollback`` when it does not start: the new sockets close, the serving ones stay as they were.
    """

    def __init__(self, owner: ListeningSockets, wanted: Iterable[str], new: dict[str, socket.socket]) -> None:
        self.owner = owner
        self.wanted = list(wanted)
        self.new = new

    @property
    def sockets(self) -> dict[str, socket.socket]:
        """The new configuration's sockets by address."""
        return {bind: self.new.get(bind) or self.owner.sockets[bind] for bind in self.wanted}

    def fds(self) -> dict[str, int]:
        """``{"127.0.0.1:8080": fd}`` of the new configuration: what its worker processes inherit."""
        return {bind: sock.fileno() for bind, sock in self.sockets.items()}

    def commit(self) -> list[socket.socket]:
        """The new configuration serves: keep its sockets; return those no longer listed."""
        self.owner.sockets.update(self.new)
        self.new = {}
        return [self.owner.sockets.pop(bind) for bind in list(self.owner.sockets) if bind not in self.wanted]

    def rollback(self) -> None:
        """The new configuration did not start: close its new sockets (the serving ones stay)."""
        for sock in self.new.values():
            sock.close()
        self.new = {}


class ListeningSockets:
    """The bound sockets of a service's listeners, by address; kept until the service stops."""

    def __init__(self) -> None:
        self.sockets: dict[str, socket.socket] = {}

    def update(self, listeners: Iterable[Listener]) -> Rebind:
        """Bind the listeners not bound yet (all or nothing); the Rebind to commit or roll back.

        Until then the sockets the running workers accept on stay as they are, so a configuration
        that fails to start leaves the service serving on them (and can be restarted on them).
        """
        wanted = {listener.bind: listener for listener in listeners}
        new: dict[str, socket.socket] = {}
        try:
            for bind, listener in wanted.items():
                if bind not in self.sockets:
                    new[bind] = bind_listener(listener)
        except OSError:
            for sock in new.values():
                sock.close()
            raise
        return Rebind(self, wanted, new)

    def fds(self) -> dict[str, int]:
        """``{"127.0.0.1:8080": fd}``: what a worker process inherits."""
        return {bind: sock.fileno() for bind, sock in self.sockets.items()}

    def close(self) -> None:
        """Close every socket (workers must be gone: the port is free afterwards)."""
        for sock in self.sockets.values():
            sock.close()
        self.sockets.clear()


def server_config(listeners: Sequence[Listener], *, graceful_timeout: float = 10.0, http: Http | None = None) -> Config:
    """The hypercorn settings of a service's HTTP server (certificates are per listener, see SocketServer)."""
    http = http or Http()
    config = Config()
    config.accesslog = None  # a service's access log is its app's (roadkit.serving.accesslog), in JSON lines
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = graceful_timeout
    config.keep_alive_timeout = http.keep_alive_timeout
    # BoundedTCPServer answers a head over the limits first: h11's own limit (a bare 431) only backs it up.
    config.h11_max_incomplete_size = http.max_url_bytes + http.max_header_bytes + 4096
    config.alpn_protocols = ["http/1.1"]  # as uvicorn: the limits are those of HTTP/1.1
    config.ssl_handshake_timeout = http.head_timeout  # a TLS client that never finishes its handshake holds no more
    config.backlog = BACKLOG
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


class SocketServer:
    """An ASGI app served on already listening sockets (``(listener, socket)`` pairs, sockets dup'ed)."""

    #: How long a stopping server answers with ``Connection: close`` before it closes idle connections.
    drain_grace = 0.5

    def __init__(
        self,
        app: ASGIApp,
        bound: Sequence[tuple[Listener, socket.socket]],
        *,
        graceful_timeout: float = 10.0,
        http_server: str = "hypercorn",
        share: Share | None = None,
        http: Http | None = None,
    ) -> None:
        if http_server not in ("hypercorn", "uvicorn"):
            raise ValueError(f"unknown HTTP server {http_server!r}: expected hypercorn or uvicorn")
        self.http_server = http_server
        self.listeners = [listener for listener, _ in bound]
        #: The ``[http]`` limits (``http_server`` chooses the server).
        self.limits = http or Http()
        self.config = server_config(self.listeners, graceful_timeout=graceful_timeout, http=self.limits)
        #: The most connections this server holds (set at start: the open-file limit is raised then).
        self.max_connections = 0
        self._full_answer = b""
        self.draining = Draining(app)
        self.app = wrap_app(self.draining, self.config.wsgi_max_body_size, None)  # type: ignore[arg-type]
        # Each server gets its own descriptors: closing them on stop leaves the shared socket open.
        # Not sock.dup(): it sets the copy's blocking mode, which is the shared file's, and a blocking
        # accept in a server still running (here or in another worker process) freezes its loop.
        self._bound = [(listener, _nonblocking_copy(sock)) for listener, sock in bound]
        self._acceptors: list[Acceptor] = []
        #: This worker's slot among its service's workers, where it says how many connections it holds.
        self.share = share
        self._tasks: set[asyncio.Task[Any]] = set()
        #: hypercorn's connections whose client has not closed.
        self._clients: set[asyncio.StreamReaderProtocol] = _Counted(self._publish)
        #: hypercorn's context of each connection (see _ClientStream; gone with its connection), and whether the server stops.
        self._contexts: weakref.WeakSet[_ConnectionContext] = weakref.WeakSet()
        self._terminated = False
        self._state: dict[str, Any] = {}
        self._lifespan: Lifespan | None = None
        self._lifespan_task: asyncio.Task[None] | None = None
        self._uvicorn: _Uvicorn | None = None
        #: Connections accepted since the start (the administrator shows each worker's share).
        self.accepted = 0

    def connections(self) -> dict[str, int]:
        """``{"open": n, "accepted": m}``: connections open now, and accepted since the start."""
        return {"open": self._open(), "accepted": self.accepted}

    def _open(self) -> int:
        connections: set[Any] = self._uvicorn.state.connections if self._uvicorn is not None else self._clients
        # A connection made is in its server's set a moment before its acceptor's task ends: counted once.
        return len(connections) + sum(
            protocol is None or protocol not in connections for acceptor in self._acceptors for protocol in acceptor.connecting.values()
        )

    def _publish(self) -> None:
        if self.share is not None and self._acceptors:
            self.share.publish(self._open())

    async def start(self) -> None:
        """Run the app's start-up, then accept on every socket; on failure, undo what started (copies closed)."""
        try:
            await self._start()
        except BaseException:
            with contextlib.suppress(Exception):
                await self.stop()
            for _, sock in self._bound:
                sock.close()
            raise

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        factory: Callable[[], asyncio.BaseProtocol]
        self.max_connections = connection_cap(self.limits.max_connections)
        self._full_answer = too_many_connections(self.max_connections)
        if self.http_server == "uvicorn":
            self._uvicorn = _Uvicorn(self.draining, limits=self.limits)
            self._uvicorn.state.connections = _Counted(self._publish)  # before any protocol holds the set
            await self._uvicorn.startup()
            factory = self._uvicorn.protocol
        else:
            self._lifespan = Lifespan(self.app, self.config, loop, self._state)  # type: ignore[arg-type]
            self._lifespan_task = loop.create_task(self._lifespan.handle_lifespan())
            await self._lifespan.wait_for_startup()

            async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                assert isinstance(reader, _ClientStream)
                task = asyncio.current_task()
                assert task is not None
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                await BoundedTCPServer(self.app, loop, self.config, reader.context, self._state, reader, writer, limits=self.limits)

            def factory() -> asyncio.BaseProtocol:  # what asyncio.start_server makes for each connection
                context = _ConnectionContext()
                self._contexts.add(context)
                if self._terminated:  # accepted while the server stops: served like the others, then closed
                    context.terminated.now()
                return _CountedStreamProtocol(_ClientStream(context, limit=STREAM_LIMIT, loop=loop), connection, loop, self._clients)

        for listener, sock in self._bound:
            # Not loop.create_server: it takes every waiting connection at once (see roadkit.process.accept).
            acceptor = Acceptor(
                sock,
                factory,
                ssl_context=self._ssl_context(listener),
                ssl_handshake_timeout=self.config.ssl_handshake_timeout,
                on_accept=self._accepted,
                on_connected=self._publish,
                my_turn=self.share.my_turn if self.share is not None else None,
                refuse=self._when_full,
            )
            acceptor.start()
            self._acceptors.append(acceptor)
        self._publish()

    def _when_full(self) -> bytes | None:
        """The 503 to answer a new connection with while this server holds all it may, else None."""
        return self._full_answer if self._open() >= self.max_connections else None

    def _accepted(self) -> None:
        self.accepted += 1
        self._publish()

    def _ssl_context(self, listener: Listener) -> ssl.SSLContext | None:
        """Each HTTPS listener presents its own certificate (hypercorn's settings, that file)."""
        if not listener.https:
            return None
        config = copy.copy(self.config)
        config.certfile, config.keyfile = str(listener.certfile), str(listener.keyfile)
        try:
            context = config.create_ssl_context()
        except ssl.SSLError as exc:
            raise OSError(
                f"{listener.bind}: can't load the certificate {listener.certfile} with the key {listener.keyfile}: {exc}"
            ) from None
        _warn_out_of_dates(listener)
        return context

    async def stop(self) -> None:
        """Stop accepting, let just-accepted connections send their request, finish what is in flight."""
        acceptors, self._acceptors = self._acceptors, []
        for acceptor in acceptors:
            acceptor.close()
        if self.share is not None:
            self.share.publish(NOT_ACCEPTING)  # the other workers no longer leave connections to this one
        # Connections accepted just before get to send their request, and keep-alive clients are told
        # (Connection: close) to open their next connection elsewhere, before idle connections close.
        self.draining.draining = True
        if acceptors:
            await asyncio.sleep(self.drain_grace)
        # Connections still in their TLS handshake join the others before those are shut down.
        connecting = {task for acceptor in acceptors for task in acceptor.connecting}
        if connecting:
            _, pending = await asyncio.wait(connecting, timeout=self.config.graceful_timeout)
            for task in pending:
                task.cancel()
        if self._uvicorn is not None:
            await self._uvicorn.shutdown(self.config.graceful_timeout)
            self._uvicorn = None
            return
        # hypercorn closes idle connections now, and the others once their response is sent.
        self._terminated = True
        for context in self._contexts:
            context.terminated.now()
        if self._tasks:
            _, pending_tasks = await asyncio.wait(set(self._tasks), timeout=self.config.graceful_timeout)
            for task in pending_tasks:
                task.cancel()
        if self._lifespan is not None and self._lifespan_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._lifespan.wait_for_shutdown(), 5.0)
            self._lifespan_task.cancel()
            with contextlib.suppress(BaseException):
                await self._lifespan_task
            self._lifespan = None


class _Counted(set[Any]):
    """A set of connections that calls ``changed`` when one is added or removed."""

    def __init__(self, changed: Callable[[], None]) -> None:
        super().__init__()
        self.changed = changed

    def add(self, item: Any) -> None:
        super().add(item)
        self.changed()

    def discard(self, item: Any) -> None:
        super().discard(item)
        self.changed()


class _Flag:
    """hypercorn's event interface (``hypercorn.typing.Event``) on an asyncio.Event, which :meth:`now` sets at once."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def now(self) -> None:
        self.event.set()

    async def set(self) -> None:
        self.event.set()

    async def clear(self) -> None:
        self.event.clear()

    async def wait(self) -> None:
        await self.event.wait()

    def is_set(self) -> bool:
        return self.event.is_set()


class _ConnectionContext(WorkerContext):
    """hypercorn's worker context for ONE connection: ``terminated`` when the server stops or the client closed.

    With ``terminated`` set, hypercorn closes the connection at once if it is idle (its keep-alive
    timer waits on it), or once the response in flight is sent (it does not wait for another request).
    """

    def __init__(self) -> None:
        super().__init__(None)
        self.terminated: _Flag = _Flag()


class _ClientStream(asyncio.StreamReader):
    """What hypercorn reads a connection from; sets its context's ``terminated`` once all the client sent is read.

    hypercorn's TCPServer (0.18) stops reading when the client closes its side (it reads until
    ``at_eof()``, or an empty read), but then waits for its keep-alive timer before it closes the
    connection: the connection's task, and its socket in CLOSE_WAIT, stayed 75 s after the client
    left (hypercorn's own ``serve`` does the same). Setting ``terminated`` only once everything was
    read (not when the end arrives, maybe behind a request) leaves a request sent just before the
    end (a half-closing client) served, then the connection closed.
    """

    def __init__(self, context: _ConnectionContext, *, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.context = context

    def at_eof(self) -> bool:
        ended = super().at_eof()
        if ended:
            self.context.terminated.now()
        return ended

    async def read(self, n: int = -1) -> bytes:
        data = await super().read(n)
        if not data and n != 0:
            self.context.terminated.now()
        return data


class _CountedStreamProtocol(asyncio.StreamReaderProtocol):
    """asyncio.start_server's protocol, in ``clients`` from its connection until the client closes it."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        connected: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any],
        loop: asyncio.AbstractEventLoop,
        clients: set[asyncio.StreamReaderProtocol],
    ) -> None:
        super().__init__(reader, connected, loop=loop)
        self._clients = clients

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._clients.add(self)

    def eof_received(self) -> bool | None:
        self._clients.discard(self)
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._clients.discard(self)
        super().connection_lost(exc)


class _AnswersHalfClosed:
    """uvicorn's HTTP protocols answer the requests a client sent before closing its side (a half-close).

    uvicorn's own ``eof_received`` lets asyncio close the connection at the client's end, so a
    request sent just before it (``printf 'GET ...' | nc -N``, two pipelined requests then the end)
    was never answered (uvicorn#1264). Here, with a request still in flight, the write side stays
    open and the last request is answered with ``Connection: close`` (as uvicorn's own graceful
    shutdown does); with nothing in flight, the connection closes at once as before. Over TLS the
    connection closes as before: asyncio's SSL transport does not keep a half-closed one open.
    """

    cycle: Any
    scheme: str

    def eof_received(self) -> bool | None:
        cycle = self.cycle  # the last request read; pipelined ones before it are answered first
        if cycle is None or cycle.response_complete or self.scheme == "https":
            return None
        cycle.keep_alive = False
        return True


class _Uvicorn:
    """uvicorn's HTTP protocol (httptools when installed) and lifespan for :class:`SocketServer`.

    uvicorn's own ``Server`` binds, handles signals and exits the process on a failed start-up; the
    worker or administrator does all that here, so only its protocol and lifespan are used.
    """

    def __init__(self, app: ASGIApp, *, limits: Http) -> None:
        import uvicorn
        from uvicorn.server import ServerState

        self.config = uvicorn.Config(
            app,
            http="httptools",  # a dependency of roadkit; BoundedHttpTools holds its protocol to the limits
            lifespan="on",
            log_config=None,  # roadkit configures logging
            access_log=False,  # the app writes the access log (roadkit.serving.accesslog)
            proxy_headers=False,  # as hypercorn: the APIs read X-Forwarded-* themselves (roadkit.web.api.base_url)
            server_header=False,
            timeout_keep_alive=max(1, round(limits.keep_alive_timeout)),  # BoundedHttpTools's clock closes idle connections
        )
        self.config.load()
        base = self.config.http_protocol_class
        self._protocol_class = type(f"Bounded{base.__name__}", (_AnswersHalfClosed, BoundedHttpTools, base), {"limits": limits})
        self.state = ServerState()
        self.lifespan = self.config.lifespan_class(self.config)
        self._clock: asyncio.Task[None] | None = None

    def protocol(self) -> asyncio.Protocol:
        protocol: asyncio.Protocol = self._protocol_class(  # type: ignore[call-arg]
            config=self.config, server_state=self.state, app_state=self.lifespan.state
        )
        return protocol

    async def startup(self) -> None:
        await self.lifespan.startup()
        if self.lifespan.should_exit:
            raise RuntimeError("the app's start-up failed")
        self._clock = asyncio.create_task(self._date_header())

    async def _date_header(self) -> None:
        # uvicorn's Server refreshes the Date header once a second: the same here.
        from email.utils import formatdate

        while True:
            self.state.default_headers = [(b"date", formatdate(usegmt=True).encode())]
            await asyncio.sleep(1.0)

    async def shutdown(self, graceful_timeout: float) -> None:
        """Close idle connections, let the others finish their response (at most ``graceful_timeout``)."""
        for connection in list(self.state.connections):
            connection.shutdown()
        deadline = asyncio.get_running_loop().time() + graceful_timeout
        while (self.state.connections or self.state.tasks) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        for task in list(self.state.tasks):
            task.cancel()
        if self._clock is not None:
            self._clock.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.lifespan.shutdown(), 5.0)


def _warn_out_of_dates(listener: Listener) -> None:
    """A warning for a certificate outside its validity dates, which is served all the same.

    Refusing to start would take the admin API down with the service, though it is how a new
    certificate is put in place; clients that check certificates refuse this one meanwhile.
    """
    from cryptography import x509

    try:
        with open(str(listener.certfile), "rb") as file:
            cert = x509.load_pem_x509_certificate(file.read())
    except (OSError, ValueError):
        return  # loaded by OpenSSL all the same (another encoding): nothing to say about its dates
    now = datetime.datetime.now(datetime.UTC)
    if cert.not_valid_after_utc < now:
        log.warning(
            "%s: the certificate %s expired on %s: clients that check certificates refuse it",
            listener.bind,
            listener.certfile,
            cert.not_valid_after_utc.isoformat(),
        )
    elif cert.not_valid_before_utc > now:
        log.warning(
            "%s: the certificate %s is valid only from %s: clients that check certificates refuse it until then",
            listener.bind,
            listener.certfile,
            cert.not_valid_before_utc.isoformat(),
        )
