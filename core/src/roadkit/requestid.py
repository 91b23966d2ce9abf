"""The id of the request being answered (``X-Request-ID``), for every log line and outbound call about it.

A service takes a client's ``X-Request-ID`` when it is short and printable (so that nothing a
client sends can break a log line or grow it without bound) and makes one otherwise; the id is
returned on the answer, set in :data:`REQUEST_ID` while the request is served (asyncio tasks
started meanwhile inherit it), written in the log lines about the request and sent to remote engine
servers. A worker's handlers have a :class:`RequestIdFilter` and write it where their format says
(``%(request)s``); elsewhere (a ``same-process`` service, an application that embeds one, with its
own logging) roadkit's lines start their message with ``request=<id>: `` (:func:`tag_messages`).
"""

from __future__ import annotations

import itertools
import logging
import os
from contextvars import ContextVar

#: The request header (lower case, as ASGI gives header names).
HEADER = b"x-request-id"
#: A longer client id is replaced by a new one.
MAX_LENGTH = 128

#: The id of the request the current task serves; None outside a request.
REQUEST_ID: ContextVar[str | None] = ContextVar("roadkit_request_id", default=None)

# Printable ASCII without space: a client id made only of these is kept.
_PRINTABLE = frozenset(range(0x21, 0x7F))


class _Ids:
    """New ids: 64 random bits drawn once per process, then a counter (cheaper than random bits per request)."""

    def __init__(self) -> None:
        self.draw()

    def draw(self) -> None:
        self.prefix = os.urandom(8).hex()
        self.count = itertools.count()

    def next(self) -> str:
        return f"{self.prefix}{next(self.count):016x}"


_ids = _Ids()
os.register_at_fork(after_in_child=_ids.draw)  # a forked process draws its own random part


def new_id() -> str:
    """A new request id, unique across processes and restarts: 32 hexadecimal digits (a random process part, a counter)."""
    return _ids.next()


def accepted(value: bytes) -> str | None:
    """A client's id if it may be used as it is (1 to 128 printable ASCII characters, no space), else None."""
    if 0 < len(value) <= MAX_LENGTH and _PRINTABLE.issuperset(value):
        return value.decode("ascii")
    return None


def request_id(headers: list[tuple[bytes, bytes]]) -> str:
    """The id of a request with these (ASGI) headers: the client's when accepted, a new one otherwise."""
    for name, value in headers:
        if name == HEADER:
            return accepted(value) or new_id()
    return new_id()


def current() -> str | None:
    """The id of the request being served, if any."""
    return REQUEST_ID.get()


class RequestIdFilter(logging.Filter):
    """A handler's filter that gives each record the id of the request being served.

    ``request_id``: the id, or ``-`` outside a request; ``request``: `` request=<id>``, or nothing
    outside a request (a format with ``...%(request)s: %(message)s`` leaves other lines as they were).
    A filter of the handler, not a record factory: a library logging with ``extra={"request_id": ...}``
    still works.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        rid = REQUEST_ID.get()
        record.request_id = rid or "-"
        # A message that tag_messages() started with the id already shows it.
        record.request = f" request={rid}" if rid and not record.__dict__.get(_TAGGED) else ""
        return True


# The attribute of a record whose message tag_messages() started with the id.
_TAGGED = "roadkit_request_tagged"
_tagging = False
_in_formats = False


def _ours(logger: str) -> bool:
    """A logger of roadkit's or of one of its plugins (``roadkit_osrm``...)."""
    return logger == "roadkit" or logger.startswith(("roadkit.", "roadkit_"))


def ids_in_formats() -> None:
    """Say that this process's log handlers write the id themselves (:class:`RequestIdFilter` and
    ``%(request)s``, as a worker's do): messages stay as they were logged."""
    global _in_formats
    _in_formats = True


def tag_messages() -> None:
    """Start the message of roadkit's (and its plugins') log records created while a request is served with ``request=<id>: ``.

    A record factory, installed once per process (over the factory in place), so that an application
    embedding a service sees the id in roadkit's lines whatever its handlers and formats. Only the
    message changes: no attribute that a caller's ``extra`` could clash with is added.
    """
    global _tagging
    if _tagging:
        return
    _tagging = True
    previous = logging.getLogRecordFactory()

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        rid = REQUEST_ID.get()
        if rid is not None and not _in_formats and _ours(record.name):
            prefix = f"request={rid}: "
            record.__dict__[_TAGGED] = True
            # The id may hold a "%", which the message's own %-formatting must leave alone.
            record.msg = (prefix.replace("%", "%%") if record.args else prefix) + str(record.msg)
        return record

    logging.setLogRecordFactory(factory)
