"""The engine threads of a Valhalla source: one per Actor, each owning its Actor, fed from one queue.

A request's engine call goes to whichever thread is free, and its answer comes back to the event
loop with one wake-up (``call_soon_threadsafe``). A thread pool borrowing Actors from a pool did
the same with two pools, a concurrent future chained to the asyncio one and their locks: measured
with the engine replaced by recorded answers (bench/README.md), 0.03 to 0.04 ms of CPU more per
request, an eighth of what roadkit itself spends on an isochrone.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

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
