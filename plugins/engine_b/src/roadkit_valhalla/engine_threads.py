"""The engine threads of a Valhalla source: one per Actor, each owning its Actor, fed from one queue.

A request's engine call goes to whichever thread is free, and its answer comes back to the event
loop with one wake-up (``call_soon_threadsafe``). A thread pool borrowing Actors from a pool did
the same with two pools, a concurrent future chained to the asyncio one and their locks: measured
with the engine replaced by recorded answers, 0.03 to 0.04 ms of CPU more per
request, an eighth of what roadkit itself spends on an isochrone.

**Batches.** Under load, calls wait for the engine. Then an engine runs the waiting calls back to
back (at most ``batch`` of them) and hands their answers back together: the loop wakes once for
all of them, and the requests' Python (their answers' reading, their responses) runs one after
the other while the interpreter's and the libraries' code is still in the caches. The engine's
work evicts those caches at every call: measured in one process, roadkit's CPU
around an isochrone drops from 0.9 ms a request alone to 0.65 ms in twos and 0.4 ms in eights. An
answer waits for the rest of its batch at most about ``delay`` seconds (the next call is not
started when its expected length, the last call's, would take the oldest answer past it), and
without waiting calls (light load) every call is a batch of one: no added latency.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: The engine handle of each engine thread.
_local = threading.local()

#: (event loop, future, function, arguments) of one call; None tells a thread to stop.
_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]

#: (future, result, error) of one call run.
_Answer = tuple["asyncio.Future[Any]", Any, BaseException | None]


def _settle(answers: list[_Answer]) -> None:
    """Hand the answers of a batch to their requests (on the requests' loop)."""
    for future, result, error in answers:
        if future.done():  # the request gave up (time-out, client gone): nobody reads this answer
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


def _called(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, BaseException | None]:
    try:
        return fn(*args), None
    except BaseException as exc:  # handed to the request that made the call, as a thread pool does
        return None, exc


def current_handle() -> Any:
    """The engine handle of the calling engine thread (for the functions given to :meth:`EngineThreads.run`)."""
    return _local.handle


class Batching:
    """When an engine stops running waiting calls back to back: ``batch`` calls, or ``delay`` seconds."""

    def __init__(self, batch: int = 1, delay: float = 0.0) -> None:
        self.batch = max(1, batch)
        self.delay = max(0.0, delay)

    def full(self, answered: int, first_answered: float, last_started: float, now: float) -> bool:
        """Whether to hand the answers back now, after ``answered`` calls: the batch is full, or
        one more call as long as the last would take the first answer past the delay."""
        return answered >= self.batch or (now - first_answered) + (now - last_started) > self.delay

    def start(self) -> _Batch:
        """A new batch, which counts its calls and their times."""
        return _Batch(self)


class _Batch:
    """The calls of one batch: how many have been answered, and when the first was."""

    __slots__ = ("_batching", "_first_answered", "answered")

    def __init__(self, batching: Batching) -> None:
        self._batching = batching
        self.answered = 0
        self._first_answered = 0.0

    def answer(self, started: float) -> bool:
        """Count a call started at ``started`` and just answered: whether the batch is now full."""
        now = time.monotonic()
        self.answered += 1
        if self.answered == 1:
            self._first_answered = now
        return self._batching.full(self.answered, self._first_answered, started, now)


class EngineThreads:
    """Threads that each own one engine handle (an Actor) and run the calls handed to :meth:`run`.

    A thread whose call ends while others wait runs them too, as one batch (:class:`Batching`),
    while no other thread is free to take them.
    """

    def __init__(self, handles: Sequence[Any], name: str, batching: Batching | None = None) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._batching = batching or Batching()
        self._free = 0  # threads waiting for a call
        self._lock = threading.Lock()
        self.closed = False
        self._threads = [
            threading.Thread(target=self._serve, args=(handle,), name=f"{name}-{i}", daemon=True) for i, handle in enumerate(handles)
        ]
        for thread in self._threads:
            thread.start()

    def _next_job(self) -> _Job | None:
        with self._lock:
            self._free += 1
        job = self._jobs.get()
        with self._lock:
            self._free -= 1
        return job

    def _serve(self, handle: Any) -> None:
        _local.handle = handle
        job = self._next_job()
        while job is not None:
            answers, stop = self._batch(job)
            for loop, settled in answers.items():
                with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile: nobody waits for these answers
                    loop.call_soon_threadsafe(_settle, settled)
            job = None if stop else self._next_job()

    def _batch(self, job: _Job) -> tuple[dict[asyncio.AbstractEventLoop, list[_Answer]], bool]:
        """Run ``job`` and the calls waiting after it while the batch lasts: (answers by loop, whether to stop)."""
        answers: dict[asyncio.AbstractEventLoop, list[_Answer]] = {}
        batch = self._batching.start()
        while True:
            loop, future, fn, args = job
            if not future.done():  # else the request gave up while waiting: nobody reads this answer
                started = time.monotonic()
                result, error = _called(fn, args)
                answers.setdefault(loop, []).append((future, result, error))
                full = batch.answer(started)
                # Another thread is free: it takes the next call, and these answers go back now.
                if full or self._free:
                    return answers, False
            try:
                next_job = self._jobs.get_nowait()
            except queue.Empty:
                return answers, False
            if next_job is None:
                return answers, True
            job = next_job

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
    """One engine handle called on the event loop's own thread: the calls in arrival order, one batch
    (:class:`Batching`) per turn of the loop, which reads and writes its sockets between two batches.

    No thread hand-off: no queue, no thread wake-up, no ``call_soon_threadsafe``, no GIL passing
    between threads; measured, 0-4 % less CPU an isochrone than
    :class:`EngineThreads` with one thread. A connection waiting to be accepted is accepted before
    the next call (the source context's ``connection_waiting``): it ends a batch. Its cost: the loop
    does nothing else during a call, so a time-out cannot cut a call under way (its 504 comes once the call
    returns), and the worker's other requests wait for it. A request that gave up while its call
    waited (time-out, client gone) is skipped.
    Same interface as :class:`EngineThreads`; :func:`current_handle` gives the handle during a call.
    """

    #: At most this many turns of the loop in a row let a waiting connection be accepted before a call runs.
    MAX_ACCEPT_TURNS = 64

    def __init__(self, handle: Any, batching: Batching | None = None, connection_waiting: Callable[[], bool] = lambda: False) -> None:
        self._handle = handle
        self._connection_waiting = connection_waiting
        self._batching = batching or Batching()
        self._accept_turns = 0
        self._waiting: collections.deque[tuple[asyncio.Future[Any], Callable[..., Any], tuple[Any, ...]]] = collections.deque()
        self._scheduled = False
        self.closed = False

    def _next(self) -> None:
        """Run a batch of the calls still awaited, then come back at the loop's next turn if more wait.

        A connection waiting to be accepted goes first: one turn of the loop accepts it (the Acceptor
        takes one per turn) instead of it waiting for the calls queued before its first request.
        """
        waiting = self._waiting
        if waiting and self._accept_turns < self.MAX_ACCEPT_TURNS and self._connection_waiting():
            self._accept_turns += 1
            asyncio.get_running_loop().call_soon(self._next)
            return
        self._accept_turns = 0
        _local.handle = self._handle
        batch = self._batching.start()
        while waiting:
            future, fn, args = waiting.popleft()
            if future.done():  # the request gave up while waiting: nobody reads this answer
                continue
            started = time.monotonic()
            result, error = _called(fn, args)
            # Each answer's wake-up is scheduled now; they all run at the loop's next turn, one after the other.
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
            if batch.answer(started) or (waiting and self._connection_waiting()):
                break
        if waiting:
            # After the answered requests' wake-ups, and after the loop's next look at its sockets.
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
