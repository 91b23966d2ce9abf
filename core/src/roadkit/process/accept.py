"""Fair accepting on a listening socket shared by several worker processes.

Every worker of a service accepts on the same kernel socket (one accept queue, :mod:`roadkit.process.listen`).
asyncio's server accepts up to ``backlog`` connections each time the socket is readable, and uvloop's
(libuv) until the queue is empty: when a client opens its keep-alive connections in a burst, the
first worker to wake up takes most of them, and a kept-alive connection stays with the worker that
accepted it, so the other workers idle.

An :class:`Acceptor` takes at most ONE connection each time its loop finds the socket readable.
That alone is not enough on a busy machine: the other workers are woken too, but may not get a
core before the first has taken the whole burst. So the workers of a service also publish how many
connections each holds in a :class:`ConnectionTable` (memory shared with the administrator), and a
worker that holds more than another accepting worker lets the connection wait for
:data:`DEFER` seconds before it takes it after all (the others may all be busy).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import mmap
import os
import select
import socket
import ssl
from collections.abc import Callable
from typing import cast

log = logging.getLogger(__name__)

#: Errors of accept() that a later accept may not have (out of descriptors or memory): as asyncio does, wait a moment.
_RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
ACCEPT_RETRY_DELAY = 1.0
#: How long a worker holding more connections than another lets a waiting connection to that other.
DEFER = 0.005
#: A slot's value when its worker does not accept (starting, draining, gone).
NOT_ACCEPTING = -1
#: Seconds a refused connection's bytes are read and dropped before it closes (closing a socket with
#: unread bytes resets the connection, and the client may lose the answer with them).
REFUSAL_LINGER = 2.0

#: The acceptors of this process reading their socket now (not closed, deferring or pausing).
_reading: set[Acceptor] = set()


def connection_waiting() -> bool:
    """Whether a connection waits on a socket this process accepts on and would take now (a zero-time
    poll), or was accepted without TLS and has no transport yet (a turn or two of the loop; a TLS
    handshake's round trips are not waited for).

    For work that holds the event loop's thread for a while (an engine called on it, as the Valhalla
    plugin's ``engine_calls = "inline"``): one turn of the loop first accepts that connection, which
    would otherwise wait for the work to end. False when this process accepts on no socket of its own
    (same-process mode: the HTTP server's own accepting).
    """
    if not _reading:
        return False
    if any(acceptor.connecting for acceptor in _reading if acceptor.ssl_context is None):
        return True
    poll = select.poll()
    for acceptor in _reading:
        poll.register(acceptor.sock.fileno(), select.POLLIN)
    try:
        return bool(poll.poll(0))
    except OSError:
        return False


class ConnectionTable:
    """The open connections of each worker process of a service: one signed 64-bit slot per process.

    The administrator creates it (:meth:`create`, a memfd), hands a free slot and the descriptor to
    each worker it starts, and frees the slot when the process exits; the worker maps it
    (:meth:`attach`) and writes its count, or :data:`NOT_ACCEPTING`. Slots are written by one
    process each; a reader may see a count a moment old, which only makes a worker wait or not.
    """

    SLOTS = 64

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._map = mmap.mmap(fd, self.SLOTS * 8)
        self._slots = memoryview(self._map).cast("q")
        self._free = list(range(self.SLOTS))
        self.closed = False

    @classmethod
    def create(cls) -> ConnectionTable | None:
        """A new table, every slot :data:`NOT_ACCEPTING`; None where memfd is missing (no balance then)."""
        if not hasattr(os, "memfd_create"):
            return None
        fd = os.memfd_create("roadkit-connections", 0)  # not inheritable: passed to each worker explicitly
        os.ftruncate(fd, cls.SLOTS * 8)
        table = cls(fd)
        for slot in range(cls.SLOTS):
            table.set(slot, NOT_ACCEPTING)
        return table

    @classmethod
    def attach(cls, fd: int) -> ConnectionTable:
        """A worker's view of its administrator's table (the descriptor it inherited)."""
        return cls(fd)

    def allocate(self) -> int | None:
        """A free slot for a new worker process (None when all are taken: that worker is not balanced)."""
        return self._free.pop(0) if self._free else None

    def release(self, slot: int) -> None:
        """The process of ``slot`` is gone: it no longer counts, and the slot may be handed out again."""
        if self.closed:  # the service stopped meanwhile
            return
        self.set(slot, NOT_ACCEPTING)
        if slot not in self._free:
            self._free.append(slot)
            self._free.sort()

    def set(self, slot: int, value: int) -> None:
        self._slots[slot] = value

    def get(self, slot: int) -> int:
        return int(self._slots[slot])

    def fewest_elsewhere(self, slot: int) -> int | None:
        """The fewest connections an accepting worker other than ``slot`` holds (None: no other accepts)."""
        counts = [value for index, value in enumerate(self._slots) if value >= 0 and index != slot]
        return min(counts) if counts else None

    def close(self) -> None:
        self.closed = True
        self._slots.release()
        self._map.close()
        os.close(self.fd)


class Share:
    """One worker's slot in its service's :class:`ConnectionTable`."""

    def __init__(self, table: ConnectionTable, slot: int) -> None:
        self.table = table
        self.slot = slot

    def publish(self, count: int) -> None:
        """This worker now holds ``count`` connections (or :data:`NOT_ACCEPTING`)."""
        self.table.set(self.slot, count)

    def my_turn(self) -> bool:
        """True unless another accepting worker holds fewer connections than this one."""
        fewest = self.table.fewest_elsewhere(self.slot)
        return fewest is None or self.table.get(self.slot) <= fewest


class Acceptor:
    """Accepts connections on a non-blocking listening socket, one per readiness of the socket.

    Each connection gets a transport from ``loop.connect_accepted_socket`` (TLS with ``ssl_context``
    and its handshake time-out) and a protocol from ``protocol_factory``. ``on_accept`` is called when
    a connection is accepted, ``on_connected`` once its transport is made (or the client gave up);
    with ``my_turn``, a waiting connection is left to other workers for :data:`DEFER` seconds
    whenever it says False. When ``refuse`` returns an answer (the worker holds all the connections
    it may), the connection is accepted, given that answer and closed (:class:`Refusal`) instead.
    The socket is this acceptor's own descriptor (a dup): :meth:`close` closes it, never the shared one.
    """

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        *,
        ssl_context: ssl.SSLContext | None = None,
        ssl_handshake_timeout: float | None = None,
        on_accept: Callable[[], None] | None = None,
        on_connected: Callable[[], None] | None = None,
        my_turn: Callable[[], bool] | None = None,
        refuse: Callable[[], bytes | None] | None = None,
    ) -> None:
        self.sock = sock
        self.protocol_factory = protocol_factory
        self.ssl_context = ssl_context
        self.ssl_handshake_timeout = ssl_handshake_timeout if ssl_context is not None else None
        self.on_accept = on_accept
        self.on_connected = on_connected
        self.my_turn = my_turn
        self.refuse = refuse
        #: Connections refused since the start, and those being refused now.
        self.refused = 0
        self._refusing: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._retry: asyncio.TimerHandle | None = None
        #: Transports being made (a TLS handshake takes several round trips), and the protocol of each once made.
        self.connecting: dict[asyncio.Task[None], asyncio.BaseProtocol | None] = {}

    def start(self) -> None:
        """Accept from now on (the socket listens already: its backlog is the administrator's)."""
        self._loop = asyncio.get_running_loop()
        self._retry = None
        self._loop.add_reader(self.sock.fileno(), self._ready)
        _reading.add(self)

    def _ready(self) -> None:
        assert self._loop is not None
        if self.my_turn is not None and not self.my_turn():
            # Another worker holds fewer connections: it takes this one if it can within DEFER.
            self._loop.remove_reader(self.sock.fileno())
            _reading.discard(self)
            self._retry = self._loop.call_later(DEFER, self._deferred)
            return
        self._accept()

    def _deferred(self) -> None:
        self.start()
        self._accept()  # the connection still waiting, if any: nobody else took it

    def _accept(self) -> None:
        assert self._loop is not None
        try:
            conn, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return  # another worker took it, or the client gave up
        except OSError as exc:
            if exc.errno not in _RESOURCE_ERRORS:
                log.error("accept on %s failed: %s", self._name(), exc)
                return
            # Level-triggered readiness would call again at once: pause instead of spinning.
            log.error("accept on %s failed (%s): accepting again in %g s", self._name(), exc, ACCEPT_RETRY_DELAY)
            self._loop.remove_reader(self.sock.fileno())
            _reading.discard(self)
            self._retry = self._loop.call_later(ACCEPT_RETRY_DELAY, self.start)
            return
        conn.setblocking(False)
        refusal = self.refuse() if self.refuse is not None else None
        if refusal is not None:
            self.refused += 1
            refusing = self._loop.create_task(self._connect(conn, lambda: Refusal(refusal)))
            self._refusing.add(refusing)
            refusing.add_done_callback(self._refusing.discard)
            return
        task = self._loop.create_task(self._connect(conn))
        self.connecting[task] = None
        task.add_done_callback(self._connected)
        if self.on_accept is not None:
            self.on_accept()

    def _connected(self, task: asyncio.Task[None]) -> None:
        self.connecting.pop(task, None)
        if self.on_connected is not None:
            self.on_connected()

    async def _connect(self, conn: socket.socket, factory: Callable[[], asyncio.BaseProtocol] | None = None) -> None:
        assert self._loop is not None
        task = asyncio.current_task()

        def made() -> asyncio.BaseProtocol:
            protocol = (factory or self.protocol_factory)()
            if task in self.connecting:
                self.connecting[task] = protocol  # its server may count it already (connection_made) while the task ends
            return protocol

        try:
            await self._loop.connect_accepted_socket(made, conn, ssl=self.ssl_context, ssl_handshake_timeout=self.ssl_handshake_timeout)
        except OSError as exc:  # TLS errors and the handshake time-out too
            # As asyncio's own server: a client that fails its TLS handshake or goes away is not an error of ours.
            # The transport owns the socket and closed it (closing it here could close a descriptor reused since).
            log.debug("connection on %s dropped before it was served: %r", self._name(), exc)
        except Exception:
            log.exception("connection on %s could not be served", self._name())

    def _name(self) -> str:
        try:
            host, port = self.sock.getsockname()[:2]
        except OSError:
            return "a listener"
        return f"{host}:{port}"

    def close(self) -> None:
        """Stop accepting and close this acceptor's descriptor (the connections accepted stay open)."""
        _reading.discard(self)
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._loop is not None and self.sock.fileno() >= 0:
            self._loop.remove_reader(self.sock.fileno())
        self.sock.close()


class Refusal(asyncio.Protocol):
    """A connection answered at once with a whole response (``answer``), then closed.

    What the client sends meanwhile is read and dropped until it closes its side, for at most
    :data:`REFUSAL_LINGER` seconds (TLS: closed at once, asyncio's TLS transports do not half-close).
    """

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses
        transport.write(self.answer)
        if not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        self._timer = asyncio.get_running_loop().call_later(REFUSAL_LINGER, transport.close)

    def data_received(self, data: bytes) -> None:
        pass

    def eof_received(self) -> bool | None:
        return None  # the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
