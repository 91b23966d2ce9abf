"""OSRM calls that can run long (native requests, and the matrices of a source whose matrices take long), in a
child process that the time-out may kill.

osrm-bindings holds the GIL for a whole engine call: measured on Monaco, a 100-point match with
100 m radiuses takes 30 s, and no other thread of the process runs meanwhile, so a thread cannot
keep the worker's event loop answering. A child process with its own engine on the same
memory-mapped dataset can: the loop awaits its answer, other requests are served meanwhile, and a
call past the source's time-out kills the child (the only way to stop a C++ call); the next call
starts a new one. One child per source and worker, started at the first call that needs it: a
second long call waits for the first, and gets a 503 busy when it waits longer than the time-out.

The child is ``python -m roadkit_osrm.engine_child`` (not multiprocessing, whose ``spawn`` runs
the parent's main script again: an embedding script without a ``__main__`` guard would start
itself). Parent and child exchange pickles, each preceded by its length, over the child's
stdin and stdout; the child's own prints go to its stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import struct
import sys
from typing import TYPE_CHECKING, Any

from roadkit.contract.native_osrm import NativeAnswer, NativeRequest
from roadkit.contract.sources import EngineBusy, EngineError, EngineTimeout, MatrixResponse

if TYPE_CHECKING:
    from roadkit_osrm.mapping import TableQuery

#: How long a new child may take to open the dataset (no request's time-out: a dataset is not a request).
START_TIMEOUT = 120.0
#: The length that precedes each pickle parent and child exchange.
LENGTH = struct.Struct(">Q")


class EngineProcess:
    """A child process with its own ``osrm.OSRM(**settings)``, answering one native request at a time."""

    def __init__(self, source_id: str, settings: dict[str, Any]) -> None:
        self.source_id = source_id
        self.settings = settings
        self._process: asyncio.subprocess.Process | None = None
        self._turn: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._ending: set[asyncio.Task[None]] = set()

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._turn is None or self._turn[0] is not loop:
            self._turn = (loop, asyncio.Lock())
        return self._turn[1]

    async def native(self, request: NativeRequest, timeout: float) -> NativeAnswer:
        """The answer to ``request``; EngineTimeout (and the child killed) past ``timeout`` seconds."""
        answer: NativeAnswer = await self.call(request, timeout)
        return answer

    async def matrix(self, query: TableQuery, timeout: float) -> MatrixResponse:
        """The matrix of ``query``, as :meth:`native` answers."""
        answer: MatrixResponse = await self.call(query, timeout)
        return answer

    async def call(self, request: NativeRequest | TableQuery, timeout: float) -> Any:
        """The child's answer to ``request``; EngineTimeout (and the child killed) past ``timeout`` seconds."""
        lock = self._lock()
        try:
            await asyncio.wait_for(lock.acquire(), timeout)
        except TimeoutError:
            raise EngineBusy(f"The engine of source {self.source_id} is busy with another long request; try again shortly") from None
        try:
            process = await self._started()
            try:
                ok, value = await asyncio.wait_for(_exchange(process, request), timeout)
            except TimeoutError:
                self.stop()
                raise EngineTimeout(f"The engine of source {self.source_id} did not answer within {timeout:g} s") from None
            except (OSError, EOFError, asyncio.IncompleteReadError, pickle.UnpicklingError):
                self.stop()
                raise EngineError(f"The engine process of source {self.source_id} stopped; try again") from None
            except asyncio.CancelledError:  # the request is gone: the child's answer would come out of turn
                self.stop()
                raise
        finally:
            lock.release()
        if not ok:
            raise value
        return value

    async def _started(self) -> asyncio.subprocess.Process:
        if self._process is None or self._process.returncode is not None:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "roadkit_osrm.engine_child", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
            )
            try:
                ok, value = await asyncio.wait_for(_exchange(process, self.settings), START_TIMEOUT)
                if not ok:
                    raise value
            except BaseException:
                self._end(process)
                raise
            self._process = process
        return self._process

    def stop(self) -> None:
        """Kill the child (a call still running in it included); the next call starts a new one."""
        process, self._process = self._process, None
        if process is not None:
            self._end(process)

    async def close(self) -> None:
        """Kill the child and wait until it is gone (its pipes closed)."""
        self.stop()
        if self._ending:
            await asyncio.gather(*self._ending, return_exceptions=True)

    def _end(self, process: asyncio.subprocess.Process) -> None:
        # Killed now; reaped by a task, which closes its pipes (the caller may be a cancelled request).
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        task = asyncio.get_running_loop().create_task(_reap(process))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)


async def _exchange(process: asyncio.subprocess.Process, message: Any) -> tuple[bool, Any]:
    """Send ``message`` to the child, read its ``(ok, answer or exception)``."""
    assert process.stdin is not None and process.stdout is not None
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    process.stdin.write(LENGTH.pack(len(data)) + data)
    await process.stdin.drain()
    (size,) = LENGTH.unpack(await process.stdout.readexactly(LENGTH.size))
    answer: tuple[bool, Any] = pickle.loads(await process.stdout.readexactly(size))
    return answer


async def _reap(process: asyncio.subprocess.Process) -> None:
    if process.stdin is not None:
        process.stdin.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(process.wait(), 10.0)
