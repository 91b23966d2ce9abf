"""Bounded connections: what one client's connections may take of a worker (the service file's ``[http]``).

Each HTTP/1.1 connection runs on one :class:`Clock` whose deadline depends on what the server waits for:

- the request's head (request line and headers): ``head_timeout`` from the connection's start or, on
  a kept-alive connection, from the request's first byte; then a 408 (nothing if no byte came) and close;
- its body: ``body_timeout`` once the head arrived; then a 408 if no response started, and close;
- the next request on a kept-alive connection: ``keep_alive_timeout``; then close;
- nothing while the app works on a request (the engines' time-outs bound that).

Apart from the clock, a connection whose response bytes wait for the client (it stopped reading: the
transport's buffer is full and writing paused, or a close waits for the buffer to empty) gets
``send_timeout`` for the client to take them; then it is cut (aborted), and its app tasks end (uvicorn:
their receive() sees the disconnect and what they send is dropped; hypercorn: they are cancelled with
the connection's task). As nginx's ``send_timeout``, the deadline runs while the client takes nothing
(until writing resumes), not for the whole response.

A head whose URL is longer than ``max_url_bytes`` is answered 414, one whose header lines take more
than ``max_header_bytes`` 431, both before the app sees it. Each worker holds at most
:func:`connection_cap` connections; the acceptor answers one more with a 503 (``Retry-After``).
Both HTTP servers hold these: uvicorn's httptools protocol with :class:`BoundedHttpTools`, hypercorn's
connections with :class:`BoundedTCPServer` (HTTP/1.1 only: HTTP/2 is not offered).
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import json
import logging
import re
import resource
from collections.abc import Callable
from enum import Enum
from ssl import SSLError
from typing import Any

import h11
from hypercorn.asyncio.tcp_server import MAX_RECV, TCPServer
from hypercorn.events import Closed, Event, RawData, Updated
from hypercorn.protocol.h11 import H11Protocol

from roadkit.config.models import Http
from roadkit.process.accept import REFUSAL_LINGER
from roadkit.requestid import new_id
from roadkit.web.security import DEFAULT_SECURITY_HEADERS

log = logging.getLogger(__name__)

#: The default cap of a worker's connections never exceeds this, whatever the open-file limit.
DEFAULT_MAX_CONNECTIONS = 10_000
#: Descriptors a worker keeps for itself (engine files, database pools, logs) when the cap is set higher.
RESERVED_FILES = 256
#: What a client refused for the cap is told to wait, in seconds.
RETRY_AFTER = 1
#: The end of a request's head: an empty line (h11 also accepts bare LF line ends).
_HEAD_END = re.compile(rb"\n\r?\n")


class Phase(Enum):
    """What a connection's server waits for from the client."""

    HEAD = "head"
    BODY = "body"
    IDLE = "idle"


def answer(
    status: int, reason: str, code: str, message: str, *, headers: tuple[tuple[str, str], ...] = (), request_id: bool = True
) -> bytes:
    """A whole HTTP/1.1 response that closes its connection: a roadkit JSON error, with the security headers.

    ``request_id``: with a new ``X-Request-ID`` (the request's own was not read), as every answer of a service has.
    """
    body = json.dumps({"error": {"errorType": code, "message": message}}).encode()
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
        *((f"X-Request-ID: {new_id()}",) if request_id else ()),
        *(f"{name}: {value}" for name, value in headers),
        *(f"{name}: {value}" for name, value in DEFAULT_SECURITY_HEADERS.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def invalid_request(status: int = 400) -> bytes:
    """The answer to bytes that are no HTTP/1.1 request (the servers' own is bare text, or empty)."""
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        status, reason = 400, "Bad Request"
    return answer(status, reason, "invalid_request", "Invalid HTTP request")


def head_timed_out(limits: Http) -> bytes:
    return answer(408, "Request Timeout", "request_timeout", f"The request's head did not arrive within {limits.head_timeout:g} s")


def body_timed_out(limits: Http) -> bytes:
    return answer(408, "Request Timeout", "request_timeout", f"The request's body did not arrive within {limits.body_timeout:g} s")


def url_too_long(limits: Http) -> bytes:
    return answer(414, "URI Too Long", "url_too_long", f"URL too long: at most {limits.max_url_bytes} bytes")


def headers_too_large(limits: Http) -> bytes:
    return answer(
        431, "Request Header Fields Too Large", "headers_too_large", f"Request headers too large: at most {limits.max_header_bytes} bytes"
    )


def too_many_connections(cap: int) -> bytes:
    """The answer to a connection over a worker's cap."""
    return answer(
        503,
        "Service Unavailable",
        "too_many_connections",
        f"Too many connections: this server holds its maximum of {cap}; try again in a moment",
        headers=(("Retry-After", str(RETRY_AFTER)),),
        request_id=False,  # made once and sent to every connection over the cap: one id would be shared
    )


def head_refusal(start: bytes, limits: Http) -> bytes | None:
    """The answer to a request whose first bytes so far (``start``, its head and maybe more) are over a limit, or None."""
    end = _HEAD_END.search(start)
    head = start[: end.end()] if end else start
    line_end = head.find(b"\n")
    line = head if line_end < 0 else head[:line_end]
    _, space, rest = line.partition(b" ")
    url = rest.partition(b" ")[0] if space else line  # no space yet: all of it may still be the URL
    if len(url) > limits.max_url_bytes:
        return url_too_long(limits)
    if line_end >= 0 and len(head) - line_end - 1 > limits.max_header_bytes:
        return headers_too_large(limits)
    return None


def open_file_limit() -> int:
    """The process's open-file limit, its soft limit first raised to the hard one where the system allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:  # macOS: an infinite hard limit, soft at most OPEN_MAX
            log.debug("the open-file limit stays %d: %s", soft, exc)
    return DEFAULT_MAX_CONNECTIONS * 4 if soft == resource.RLIM_INFINITY else soft


def connection_cap(configured: int | None) -> int:
    """The most connections a worker holds: ``configured``, else derived from the open-file limit (raised first).

    The default is half the limit, at most :data:`DEFAULT_MAX_CONNECTIONS`; a configured cap is lowered
    to leave :data:`RESERVED_FILES` descriptors (half the limit when it is small) to the rest of the process.
    """
    limit = open_file_limit()
    if configured is None:
        return max(1, min(DEFAULT_MAX_CONNECTIONS, limit // 2))
    ceiling = max(1, limit // 2, limit - RESERVED_FILES)
    if configured > ceiling:
        log.warning("http.max_connections %d is lowered to %d: the open-file limit is %d", configured, ceiling, limit)
        return ceiling
    return configured


class Clock:
    """One connection's deadline: the :class:`Phase` it waits in, and a timer that calls ``expired(phase)`` at its end."""

    def __init__(self, limits: Http, expired: Callable[[Phase], None]) -> None:
        self.limits = limits
        self.expired = expired
        self.phase: Phase | None = None
        self._timer: asyncio.TimerHandle | None = None

    def arm(self, phase: Phase) -> None:
        """Wait in ``phase`` from now on, for its whole time-out."""
        self.cancel()
        seconds = {Phase.HEAD: self.limits.head_timeout, Phase.BODY: self.limits.body_timeout, Phase.IDLE: self.limits.keep_alive_timeout}
        self.phase = phase
        self._timer = asyncio.get_running_loop().call_later(seconds[phase], self._end)

    def cancel(self) -> None:
        """No deadline (the app works on a request, or the connection is gone)."""
        self.phase = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _end(self) -> None:
        phase, self.phase, self._timer = self.phase, None, None
        if phase is not None:
            self.expired(phase)


class _Refused(Exception):
    """Raised in a parser callback to stop parsing a head over a limit (httptools re-raises it as its context)."""


class BoundedHttpTools(asyncio.Protocol):
    """A mixin of uvicorn's httptools protocol that holds it to :attr:`limits` (see the module).

    httptools has no size limit of its own: the URL's length is checked as it arrives (``on_url``),
    the header lines' as each completes, and the bytes of a head not complete yet after each read
    (one endless header line). A refused head is answered by uvicorn's path for parse errors
    (:meth:`send_400_response`), with the 414 or 431 instead. Only the clock here closes idle
    kept-alive connections (uvicorn's own timer is cancelled as soon as it is set).
    """

    #: The service's ``[http]`` settings (set on the class made for a server).
    limits: Http = Http()
    # uvicorn's HttpToolsProtocol's
    transport: asyncio.Transport
    flow: Any
    url: bytes
    cycle: Any
    pipeline: Any
    _unset_keepalive_if_required: Callable[[], None]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._clock = Clock(self.limits, self._expired)
        self._in_head = False  # from a request's first byte to its head's end
        self._head_bytes = 0
        self._header_bytes = 0
        self._chunk = 0
        self._refusal: bytes | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._stalled: asyncio.TimerHandle | None = None  # the send deadline, while bytes wait for the client
        super().connection_made(transport)
        self._clock.arm(Phase.HEAD)

    def connection_lost(self, exc: Exception | None) -> None:
        self._clock.cancel()
        if self._linger is not None:
            self._linger.cancel()
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        self._watch_send()

    def resume_writing(self) -> None:
        if self._stalled is not None:  # the client takes bytes again
            self._stalled.cancel()
            self._stalled = None
        super().resume_writing()  # type: ignore[misc]

    def _watch_send(self) -> None:
        if self._stalled is not None:
            self._stalled.cancel()
        self._stalled = asyncio.get_running_loop().call_later(self.limits.send_timeout, self._send_expired)

    def _send_expired(self) -> None:
        self._stalled = None
        if self.transport.get_write_buffer_size() == 0:
            return
        if self.flow.write_paused or self.transport.is_closing():
            # The client took nothing for send_timeout: connection_lost ends the app's sends and tells it.
            self.transport.abort()
        else:  # bytes below the high-water mark still wait on an open connection: watched until they go
            self._watch_send()

    def data_received(self, data: bytes) -> None:
        if self._linger is not None:
            return  # refused: dropped until the client closes or REFUSAL_LINGER ends
        self._chunk = len(data)
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._refusal is None and self._head_bytes > self.limits.max_url_bytes + self.limits.max_header_bytes:
            self._refuse(headers_too_large(self.limits))  # one header line that does not end

    def on_message_begin(self) -> None:
        super().on_message_begin()  # type: ignore[misc]
        if self._clock.phase is not Phase.HEAD:  # a new connection's deadline runs from its start
            self._clock.arm(Phase.HEAD)
        self._in_head = True
        self._head_bytes = self._chunk  # this read may also hold the end of the previous request: counted too
        self._header_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)  # type: ignore[misc]
        if len(self.url) > self.limits.max_url_bytes:
            self._refusal = url_too_long(self.limits)
            raise _Refused

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value) + 4  # "name: value\r\n"
        if self._header_bytes > self.limits.max_header_bytes:
            self._refusal = headers_too_large(self.limits)
            raise _Refused
        super().on_header(name, value)  # type: ignore[misc]

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._clock.arm(Phase.BODY)
        super().on_headers_complete()  # type: ignore[misc]

    def on_message_complete(self) -> None:
        self._clock.cancel()
        super().on_message_complete()  # type: ignore[misc]

    def on_response_complete(self) -> None:
        queued = bool(self.pipeline)
        super().on_response_complete()  # type: ignore[misc]
        self._unset_keepalive_if_required()  # uvicorn's keep-alive timer: the clock's IDLE instead
        if not queued and self._clock.phase is None and not self.transport.is_closing():
            self._clock.arm(Phase.IDLE)
        if self._stalled is None and self.transport.get_write_buffer_size() > 0:
            self._watch_send()  # a close (Connection: close, the keep-alive time-out) waits for these bytes

    def send_400_response(self, msg: str) -> None:
        self._refuse(self._refusal or invalid_request())

    def _refuse(self, response: bytes) -> None:
        self._refusal = response
        self._clock.cancel()
        if self.transport.is_closing():
            return
        self.transport.write(response)
        if not self.transport.can_write_eof():  # TLS
            self.transport.close()
            return
        self.transport.write_eof()
        self._linger = asyncio.get_running_loop().call_later(REFUSAL_LINGER, self.transport.close)

    def _expired(self, phase: Phase) -> None:
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and phase is not Phase.BODY:
            cycle.keep_alive = False  # a pipelined head behind a request in flight: closed after its response
            return
        if phase is Phase.HEAD and self._in_head:
            self.transport.write(head_timed_out(self.limits))
        elif phase is Phase.BODY and cycle is not None:
            if not cycle.response_started:
                self.transport.write(body_timed_out(self.limits))
            cycle.disconnected = True  # the app's receive() returns http.disconnect; what it sends is dropped
            cycle.message_event.set()
        self.transport.close()


class BoundedTCPServer(TCPServer):
    """hypercorn's connection (HTTP/1.1, h11) held to ``limits`` (see the module).

    The head's limits are checked on h11's buffer before each read is handed to it, the clock follows
    hypercorn's ``Updated`` events (a request received, a response done) and h11's state (the body
    read). hypercorn's idle task no longer times out: it closes an idle connection only when the
    server stops or the client left (``terminated``).
    """

    def __init__(self, *args: Any, limits: Http, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self._clock = Clock(limits, self._expired)
        self._in_head = False
        self._closing: asyncio.Task[None] | None = None
        self._runner: asyncio.Task[Any] | None = None  # the connection's task, cancelled to cut it
        self._cut = False

    async def run(self) -> None:
        self._runner = runner = asyncio.current_task()
        self._clock.arm(Phase.HEAD)
        try:
            await super().run()
        except asyncio.CancelledError:
            if not self._cut or runner is None:
                raise
            runner.uncancel()  # cut for send_timeout: the connection's task ends as a closed connection's
        finally:
            self._clock.cancel()

    def _h11(self) -> h11.Connection | None:
        protocol = getattr(self, "protocol", None)
        inner = getattr(protocol, "protocol", None)
        if isinstance(inner, H11Protocol) and isinstance(inner.connection, h11.Connection):
            return inner.connection
        return None

    async def protocol_send(self, event: Event) -> None:
        if self._cut:
            return  # the connection and its tasks are being cancelled: nothing more to send or schedule
        if isinstance(event, RawData):  # as hypercorn's, with the send deadline on the wait for the client
            async with self.send_lock:
                try:
                    self.writer.write(event.data)
                    async with asyncio.timeout(self.limits.send_timeout):
                        await self.writer.drain()
                except TimeoutError:
                    # The client took nothing for send_timeout. Cancelling the connection's task ends its app
                    # tasks too: hypercorn would otherwise go on with the requests pipelined behind, to no one.
                    self.writer.transport.abort()
                    self._cut = True
                    if self._runner is not None:
                        self._runner.cancel()
                except (ConnectionError, RuntimeError):
                    await self.protocol.handle(Closed())
            return
        if isinstance(event, Updated):
            if event.idle:
                self._clock.arm(Phase.IDLE)
            else:  # a request's head was read
                self._in_head = False
                self._clock.arm(Phase.BODY)
        await super().protocol_send(event)

    async def _read_data(self) -> None:
        inner = self.protocol.protocol
        if isinstance(inner, H11Protocol):
            inner._send_error_response = self._invalid  # type: ignore[method-assign]  # h11's parse errors: JSON, not empty
        while not self.reader.at_eof():
            try:
                data = await self.reader.read(MAX_RECV)
            except (ConnectionError, OSError, TimeoutError, SSLError):
                break
            connection = self._h11()
            if connection is None:  # HTTP/2 asked for in clear text (h2c): not served
                break
            if data and connection.their_state is h11.IDLE:
                if self._clock.phase is Phase.IDLE:
                    self._clock.arm(Phase.HEAD)
                self._in_head = True
                refusal = head_refusal(connection.trailing_data[0] + data, self.limits)
                if refusal is not None:
                    self._clock.cancel()
                    await self._refuse(refusal)
                    break
            await self.protocol.handle(RawData(data))
            if self._clock.phase is Phase.BODY and connection.their_state is not h11.SEND_BODY:
                self._clock.cancel()  # the body is read: the app answers in its own time
        await self.protocol.handle(Closed())

    async def _invalid(self, status_code: int) -> None:
        await super().protocol_send(RawData(invalid_request(status_code)))

    async def _refuse(self, response: bytes) -> None:
        self.writer.write(response)
        try:
            self.writer.write_eof()
        except (NotImplementedError, OSError, RuntimeError):
            return  # TLS: closed at once
        with contextlib.suppress(TimeoutError, ConnectionError, OSError, SSLError):
            async with asyncio.timeout(REFUSAL_LINGER):
                while await self.reader.read(MAX_RECV):
                    pass

    async def _close(self) -> None:
        # A close waits for the bytes still buffered to reach the client: no longer than send_timeout.
        cut = self.loop.call_later(self.limits.send_timeout, self.writer.transport.abort)
        try:
            await super()._close()
        finally:
            cut.cancel()

    async def _idle_timeout(self) -> None:
        await self.context.terminated.wait()
        await asyncio.shield(self._initiate_server_close())

    def _expired(self, phase: Phase) -> None:
        self._closing = self.loop.create_task(self._expire(phase))

    async def _expire(self, phase: Phase) -> None:
        connection = self._h11()
        response = None
        if phase is Phase.HEAD and self._in_head:
            response = head_timed_out(self.limits)
        elif phase is Phase.BODY and connection is not None and connection.our_state is h11.SEND_RESPONSE:
            response = body_timed_out(self.limits)
        if response is not None:
            self.writer.write(response)
            # Whatever the app sends later fails (and is dropped) rather than follow the answer.
            with contextlib.suppress(NotImplementedError, OSError, RuntimeError):
                self.writer.write_eof()
        with contextlib.suppress(Exception):
            await self._initiate_server_close()
