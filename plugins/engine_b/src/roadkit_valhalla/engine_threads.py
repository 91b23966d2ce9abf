"""The engine threads of a Valhalla source: one per Actor, each owning its Actor, fed from one queue.

A request's engine call goes to whichever thread is free, and its answer comes back to the event
loop with one wake-up (``call_soon_threadsafe``). A thread pool borrowing Actors from a pool did
the same with two pools, a concurrent future chained to the asyncio one and their locks: measured
with the engine replaced by recorded answers (bench/README.md), 0.03 to 0.04 ms of CPU more per
request, an eighth of what roadkit itself spends on an isochrone.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from roadkit.contract import connection_waiting

T = TypeVar("T")

#: The engine handle of each engine thread.
_local = threading.local()

#: (event loop, future, function, arguments) of one call; None tells a thread to stop.
_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the request gave up (time-out, client gone): nobody reads this answer
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def current_handle() -> Any:
    """The engine handle of the calling engine thread (for the functions given to :meth:`EngineThreads.run`)."""
    return _local.handle


class EngineThreads:
    """Threads that each own one engine handle (an Actor) and run the calls handed to :meth:`run`."""

    def __init__(self, handles: Sequence[Any], name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.closed = False
        self._threads = [
            threading.Thread(target=self._serve, args=(handle,), name=f"{name}-{i}", daemon=True) for i, handle in enumerate(handles)
        ]
        for thread in self._threads:
            thread.start()

    def _serve(self, handle: Any) -> None:
        _local.handle = handle
        while (job := self._jobs.get()) is not None:
            loop, future, fn, args = job
            error: BaseException | None = None
            result: Any = None
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the request that made the call, as a thread pool does
                error = exc
            with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile: nobody waits for this answer
                loop.call_soon_threadsafe(_settle, future, result, error)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the next free engine thread; RuntimeError once closed."""
        if self.closed:
            raise RuntimeError("the engine threads are closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, fn, args))
        return await future

    def close(self) -> None:
        """Stop the threads once the calls already handed over are done (they are not waited for)."""
        self.closed = True
        for _ in self._threads:
            self._jobs.put(None)

    def alive(self) -> int:
        """How many of the threads have not stopped yet."""
        return sum(thread.is_alive() for thread in self._threads)


class InlineEngine:
    """One engine handle called on the event loop's own thread: the calls in arrival order, one per
    turn of the loop, which reads and writes its sockets between two calls.

    No thread hand-off: no queue, no thread wake-up, no ``call_soon_threadsafe``, no GIL passing
    between threads; measured (bench/README.md), 0-4 % less CPU an isochrone than
    :class:`EngineThreads` with one thread. A connection waiting to be accepted is accepted before
    the next call (:func:`~roadkit.contract.connection_waiting`). Its cost: the loop does nothing
    else during a call, so a time-out cannot cut a call under way (its 504 comes once the call
    returns), and the worker's other requests wait for it. A request that gave up while its call
    waited (time-out, client gone) is skipped.
    Same interface as :class:`EngineThreads`; :func:`current_handle` gives the handle during a call.
    """

    #: At most this many turns of the loop in a row let a waiting connection be accepted before a call runs.
    MAX_ACCEPT_TURNS = 64

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._accept_turns = 0
        self._waiting: collections.deque[tuple[asyncio.Future[Any], Callable[..., Any], tuple[Any, ...]]] = collections.deque()
        self._scheduled = False
        self.closed = False

    def _next(self) -> None:
        """Run the first call still awaited, then come back at the loop's next turn if more wait.

        A connection waiting to be accepted goes first: one turn of the loop accepts it (the Acceptor
        takes one per turn) instead of it waiting for the calls queued before its first request.
        """
        waiting = self._waiting
        if waiting and self._accept_turns < self.MAX_ACCEPT_TURNS and connection_waiting():
            self._accept_turns += 1
            asyncio.get_running_loop().call_soon(self._next)
            return
        self._accept_turns = 0
        while waiting:
            future, fn, args = waiting.popleft()
            if future.done():  # the request gave up while waiting: nobody reads this answer
                continue
            _local.handle = self._handle
            try:
                result = fn(*args)
            except BaseException as exc:  # handed to the request that made the call, as EngineThreads does
                future.set_exception(exc)
            else:
                future.set_result(result)
            break
        if waiting:
            # After the answered request's wake-up (scheduled by set_result), and after the loop's
            # next look at its sockets: one call per turn of the loop.
            asyncio.get_running_loop().call_soon(self._next)
        else:
            self._scheduled = False

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on this loop's thread, after the calls handed over before it; RuntimeError once closed."""
        if self.closed:
            raise RuntimeError("the engine is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._waiting.append((future, fn, args))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._next)
        return await future

    def close(self) -> None:
        """Take no new call; those already handed over still run, as with :class:`EngineThreads`."""
        self.closed = True

    def alive(self) -> int:
        """1 while calls are handed over or under way, else 0 (as a thread that has stopped)."""
        return int(not self.closed or bool(self._waiting))
