"""A managed service in child processes (``mode = "child-process"``): its workers, crashes and restarts.

The handle binds the service's listeners once (:class:`~roadkit.process.listen.ListeningSockets`) and
has its zygote (:mod:`roadkit.process.zygote`) fork ``workers`` processes (:mod:`roadkit.process.worker`)
that get the sockets and accept on them.
Each worker has a private channel (:mod:`roadkit.process.channel`) on which it says when it is ready and
answers health, projections and publication calls: nothing polls the public listeners.

A restart starts a whole new generation of workers on the same sockets and stops the old one only
once every new worker is ready, so no request is refused; the old workers drain (finish their
requests) and disconnect their sources. A worker that exits unexpectedly is logged with its exit
code or signal, turns the service red, fails a start in progress at once, and is started again
after a capped exponential back-off.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from roadkit.config import ManagedService, load_service
from roadkit.config.allocator import preload
from roadkit.config.files import read_document
from roadkit.config.models import ServiceConfig, usable_cores
from roadkit.errors import ConfigurationError, RoadkitError
from roadkit.plugins import Plugins
from roadkit.process import allocator
from roadkit.process.accept import ConnectionTable
from roadkit.process.channel import Channel, ChannelClosed, ChannelError
from roadkit.process.listen import ListeningSockets, Rebind
from roadkit.process.metrics import MetricsFolder, process_memory
from roadkit.process.zygote import Forked, ZygoteGone, ZygoteProcess
from roadkit.serving.lifecycle import STATIC_HEALTH, HealthState, Lifecycle, MergedRuns, describe_exit
from roadkit.serving.quotas import QuotaTable
from roadkit.serving.service import Service

log = logging.getLogger(__name__)

#: How long the administrator waits for a worker's health answer before calling it ``unknown``.
HEALTH_TIMEOUT = 1.0
#: The longest a zygote may take to fork a worker, its imports included (the startup time-out starts after).
FORK_TIMEOUT = 60.0
_SOURCE_ORDER = {"green": 0, "init": 1, "orange": 2}


def worker_count(setting: int | str) -> int:
    """The number of worker processes for a ``workers`` setting (``"auto"``: the usable cores)."""
    if setting == "auto":
        return usable_cores()
    return int(setting)


def _connections(reported: Any) -> dict[str, int]:
    """A worker's HTTP connections as it reported them (open now, accepted since its start)."""
    reported = reported if isinstance(reported, dict) else {}
    return {key: int(reported[key]) if isinstance(reported.get(key), int) else 0 for key in ("open", "accepted")}


class WorkerCrashed(RoadkitError):
    """A worker exited without being asked to (a start in progress fails with it at once)."""

    code = "worker_crashed"
    status = 503


class StartFailed(RoadkitError):
    """A start or restart did not bring the service up (configuration, port taken, time-out...)."""

    code = "start_failed"
    status = 503


class WorkerProcess:
    """One worker process: forked with its channel, its messages read, its exit awaited."""

    def __init__(self, owner: ChildProcessService, index: int) -> None:
        self.owner = owner
        self.index = index
        self.process: Forked | None = None
        self.channel: Channel | None = None
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved by whoever waits, if anyone
        self.exited = asyncio.Event()
        self.returncode: int | None = None
        self.stop_requested = False
        self.failure = ""
        #: Its slot in the owner's connection table (None: not balanced).
        self.table: ConnectionTable | None = None
        self.slot: int | None = None
        #: What it was started with (its descriptors numbered as in the administrator).
        self.spec: dict[str, Any] = {}
        #: The allocator library preloaded in the process (None: glibc's).
        self.library: Path | None = None
        #: The allocator read from the process's memory map (None: not read yet).
        self._allocator: str | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def name(self) -> str:
        return f"service {self.owner.id}: worker {self.index} (pid {self.pid})"

    @property
    def alive(self) -> bool:
        return self.process is not None and not self.exited.is_set()

    async def spawn(self, listeners: dict[str, int]) -> None:
        """Fork the process with its end of a new channel and the listening sockets."""
        ours, theirs = socket.socketpair()
        managed = self.owner.managed
        table = self.table = self.owner.connection_table()
        self.slot = table.allocate() if table is not None else None
        shared = [table.fd] if table is not None and self.slot is not None else []
        quotas = self.owner.quotas
        quota_fds = [quotas.fd] if quotas is not None and quotas.fd is not None else []
        spec = {
            "service": self.owner.id,
            "worker": self.index,
            "workers": self.owner.worker_count,
            "configuration": str(managed.configuration),
            "cors": str(self.owner.cors) if self.owner.cors else None,
            "channel": theirs.fileno(),
            "listeners": listeners,
            "parent": os.getpid(),
            "access_log": self.owner.access_log,
            "log_level": self.owner.log_level,
            "log_file": str(self.owner.log_file) if self.owner.log_file else None,
            "graceful_timeout": managed.stop_timeout,
            **({"connections": {"fd": shared[0], "slot": self.slot}} if shared else {}),
            **({"quotas": quota_fds[0]} if quota_fds else {}),
        }
        self.spec = spec
        self.library = library = preload(managed.allocator)
        self._allocator = None
        fds = [theirs.fileno(), *listeners.values(), *shared, *quota_fds]
        try:
            async with asyncio.timeout(FORK_TIMEOUT):
                self.process = await self.owner.zygote(library).fork(spec, fds, self.owner.metrics().environment(), self.owner.command)
        except TimeoutError:
            self._release()
            ours.close()
            raise StartFailed(f"{self.name}: the workers' zygote did not fork it within {FORK_TIMEOUT:g} s") from None
        except ZygoteGone as exc:
            self._release()
            ours.close()
            raise WorkerCrashed(f"{self.name}: {exc}") from None
        except BaseException:
            self._release()
            ours.close()
            raise
        finally:
            theirs.close()
        self.channel = await Channel.open(ours)
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._wait())]

    async def _read(self) -> None:
        assert self.channel is not None
        try:
            while True:
                self._dispatch(await self.channel.receive())
        except ChannelClosed:
            pass
        except ChannelError as exc:
            self.failure = f"garbage on the channel: {exc}"
            log.error("%s sent garbage on its channel (%s): killing it", self.name, exc)
            self.kill()
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ChannelClosed(f"{self.name} closed its channel"))
            self._pending.clear()

    def _dispatch(self, message: dict[str, Any]) -> None:
        event = message.get("event")
        if event == "ready":
            if not self.ready.done():
                self.ready.set_result(None)
        elif event == "failed":
            self.failure = str(message.get("reason") or "the worker's start failed")
            if not self.ready.done():
                self.ready.set_exception(StartFailed(self.failure))
        elif "id" in message and isinstance(message["id"], int) and message["id"] in self._pending:
            future = self._pending.pop(message["id"])
            if future.done():
                return
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                future.set_exception(
                    RoadkitError(
                        str(error.get("message", "the worker failed")),
                        code=str(error.get("code", "internal")),
                        status=int(error.get("status", 500)),
                    )
                )
            else:
                future.set_result(message.get("result"))
        else:
            raise ChannelError(f"an unexpected message {str(message)[:200]}")

    async def _wait(self) -> None:
        assert self.process is not None
        self.returncode = await self.process.exited
        self.process.close()
        self.exited.set()
        self._release()
        if self.channel is not None:
            self.channel.close()
        if not self.ready.done():
            cause = self.failure or f"exited with {describe_exit(self.returncode)} before it was ready"
            error: RoadkitError = (
                StartFailed(f"{self.name}: {cause}")
                if self.failure and "garbage" not in self.failure
                else WorkerCrashed(f"{self.name} {cause}")
            )
            self.ready.set_exception(error)
        self.owner.worker_exited(self)

    def _release(self) -> None:
        if self.table is not None and self.slot is not None:
            self.table.release(self.slot)
        self.slot = None

    async def request(self, op: str, args: dict[str, Any] | None = None, *, timeout: float = HEALTH_TIMEOUT) -> Any:
        """Ask the worker; its answer, or the RoadkitError it sent, or TimeoutError / ChannelClosed.

        ``timeout`` bounds the whole exchange, the send included: a worker that stops reading its
        channel (frozen, or stuck in a blocking call) fills the socket's buffer, and a send then waits.
        """
        if self.channel is None or not self.alive:
            raise ChannelClosed(f"{self.name} is not running")
        rid = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        try:
            async with asyncio.timeout(timeout):
                await self.channel.send({"id": rid, "op": op, "args": args or {}})
                return await future
        finally:
            self._pending.pop(rid, None)

    def signal(self, sig: signal.Signals) -> None:
        if self.process is not None and not self.exited.is_set():
            self.process.signal(sig)

    def kill(self) -> None:
        """SIGKILL (a misbehaving worker, or a start abandoned)."""
        self.stop_requested = self.stop_requested or not self.failure
        self.signal(signal.SIGKILL)

    async def stop(self, timeout: float) -> None:
        """A controlled stop: SIGTERM (drain, disconnect, exit 0); SIGKILL after ``timeout``."""
        self.stop_requested = True
        self.signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.exited.wait(), timeout)
        except TimeoutError:
            log.warning("%s did not stop within %g s: killing it", self.name, timeout)
            self.signal(signal.SIGKILL)
            await self.exited.wait()

    def describe(self) -> dict[str, Any]:
        state = (
            "exited"
            if self.exited.is_set()
            else ("stopping" if self.stop_requested else ("ready" if self.ready.done() and self.ready.exception() is None else "starting"))
        )
        entry: dict[str, Any] = {"worker": self.index, "pid": self.pid, "state": state}
        if self.pid is not None and state != "exited":
            if self._allocator in (None, "unknown"):  # read from its memory map once: what it really runs with
                self._allocator = allocator.loaded(self.pid, self.library)
            entry["allocator"] = self._allocator
            memory = process_memory(self.pid)
            if memory is not None:
                entry["memory"] = memory
        return entry


def completed(entry: dict[str, Any], managed: ManagedService, error: str) -> dict[str, Any]:
    """A service's description for the admin API with its last error and its service file's content.

    Road2's shape first: the service file's keys (``application`` ...) and ``id``; roadkit's own fields beside
    them. A service file that cannot be read is described by its problems (``configurationError``).
    """
    if error:
        entry["reason"] = error
    try:
        entry["configuration"] = read_document(managed.configuration)
    except ConfigurationError as exc:
        entry["configurationError"] = exc.problems
        return entry
    described = {key: value for key, value in entry["configuration"].items() if key not in entry}
    return described | entry


class ChildProcessService:
    """A service whose workers are child processes of the administrator (``mode = "child-process"``)."""

    def __init__(
        self,
        managed: ManagedService,
        cors: Path | None,
        plugins: Plugins,
        *,
        access_log: bool = False,
        log_level: str = "info",
        log_file: Path | None = None,
    ) -> None:
        self.id = managed.id
        self.managed = managed
        self.cors = cors
        self.plugins = plugins
        self.access_log = access_log
        self.log_level = log_level
        self.log_file = log_file
        #: A program the forked worker runs instead of the worker (tests play misbehaving children with it).
        self.command: list[str] | None = None
        #: The zygotes that fork its workers, one per allocator library (None: glibc's).
        self.zygotes: dict[Path | None, ZygoteProcess] = {}
        self.lifecycle = Lifecycle.INIT
        self.error = ""
        self.workers: list[WorkerProcess] = []
        self.starting: list[WorkerProcess] = []
        self.sockets = ListeningSockets()
        #: How many connections each worker holds, shared with them (they balance the listeners' connections).
        self.table: ConnectionTable | None = None
        #: The quota counters of ``[access]``, shared with the workers (None without it).
        self.quotas: QuotaTable | None = None
        #: The service file's ``[probes] stop_delay`` (the longest seen): part of a stopping worker's time.
        self.stop_delay = 0.0
        self.starts = 0
        self.process_starts = 0
        self.last_exit: dict[str, Any] | None = None
        self._runs = MergedRuns(self._restart)
        self._recovery: asyncio.Task[None] | None = None
        self._attempt = 0
        self._recovered_at = 0.0
        #: Its workers' metrics files, from the first worker's start to the service's stop.
        self.metrics_folder: MetricsFolder | None = None
        #: Workers started again after an unexpected exit (``roadkit_worker_restarts_total``).
        self.worker_restarts = 0

    def metrics(self) -> MetricsFolder:
        """The folder of its workers' metrics (made at the first worker's start, kept across restarts)."""
        if self.metrics_folder is None:
            self.metrics_folder = MetricsFolder()
        return self.metrics_folder

    def processes(self) -> list[tuple[str, int]]:
        return [(str(w.index), w.pid) for w in self.workers if w.alive and w.pid is not None]

    @property
    def worker_count(self) -> int:
        return worker_count(self.managed.workers)

    def adopt(self, zygote: ZygoteProcess) -> None:
        """Fork its workers from ``zygote``, started already (:func:`~roadkit.process.zygote.spawn_zygotes`)."""
        self.zygotes[zygote.library] = zygote
        zygote.begin()

    def zygote(self, library: Path | None) -> ZygoteProcess:
        """The zygote of ``library``, started on first use (and again if it exited)."""
        zygote = self.zygotes.get(library)
        if zygote is None or zygote.exited:
            zygote = self.zygotes[library] = ZygoteProcess(library, self.id, self.managed.configuration, self.cors)
            zygote.begin()
        return zygote

    def connection_table(self) -> ConnectionTable | None:
        """The table of the workers' connections, created with the first worker."""
        if self.table is None:
            self.table = ConnectionTable.create()
        return self.table

    # -- start, restart, stop ---------------------------------------------------------------

    async def start(self) -> None:
        """The first start. Failures are kept for health; a crash is retried after its back-off."""
        async with self._runs.lock:
            self.lifecycle = Lifecycle.STARTING
            self.zygote(preload(self.managed.allocator))  # its imports run while the service file is checked
            await self._bring_up()

    async def restart(self) -> None:
        """Restart with the service file as it is now (calls during a start or restart are merged)."""
        await self._runs()

    async def _restart(self) -> None:
        """Restart with the service file as it is now; the old workers serve until the new are ready."""
        if self.lifecycle in (Lifecycle.STOPPING, Lifecycle.STOPPED):
            raise StartFailed(f"Service {self.id} is stopped")
        if self._recovery is not None:
            self._recovery.cancel()
            self._recovery = None
        serving = any(worker.alive for worker in self.workers)
        self.lifecycle = Lifecycle.RESTARTING if serving else Lifecycle.STARTING
        if not await self._bring_up():
            if any(worker.alive for worker in self.workers):
                # The same answer as a service in the administrator's process: nothing was stopped.
                raise RoadkitError(
                    f"Service {self.id} can't start with its new configuration; the previous one keeps serving: {self.error}",
                    code="reload_failed",
                    status=503,
                )
            raise StartFailed(f"Service {self.id} could not restart: {self.error}")

    async def reload(self) -> None:
        """Re-read the service file and restart without downtime (merged with other restarts)."""
        await self.restart()

    async def _bring_up(self) -> bool:
        """Check the file, bind the listeners, start a full generation, then retire the old one."""
        self.starts += 1
        old = self.workers
        rebind: Rebind | None = None
        try:
            # Every configuration problem before any process starts; off the loop, the admin API keeps answering.
            config = await asyncio.to_thread(self._check)
            # A worker serves on for its stop delay before it drains: the longest any generation had bounds the wait.
            self.stop_delay = max(self.stop_delay, config.probes.stop_delay)
            self._share_quotas(config)
            rebind = self.sockets.update(config.listeners)
            new = await self._generation(range(self.worker_count), rebind.fds())
        except (RoadkitError, OSError, TimeoutError) as exc:
            # The old generation (if any) keeps its sockets: a later restart binds nothing twice.
            if rebind is not None:
                rebind.rollback()
            serving = any(w.alive for w in old)
            self._failed(exc.message if isinstance(exc, RoadkitError) else str(exc), serving=serving)
            if isinstance(exc, WorkerCrashed) and not serving:  # a crash loop at start is retried after its back-off
                self.lifecycle = Lifecycle.RECOVERING
                self._schedule_recovery()
            return False
        except BaseException:
            if rebind is not None:
                rebind.rollback()
            raise
        if self.lifecycle in (Lifecycle.STOPPING, Lifecycle.STOPPED):
            rebind.rollback()
            await asyncio.gather(*(worker.stop(self._stop_wait()) for worker in new))
            return False
        stale = rebind.commit()
        self.workers = new
        self.lifecycle, self.error = Lifecycle.READY, ""
        log.info(
            "service %s ready: %d worker(s) (pids %s) on %s",
            self.id,
            len(new),
            ", ".join(str(w.pid) for w in new),
            ", ".join(self.sockets.sockets),
        )
        await asyncio.gather(*(worker.stop(self._stop_wait()) for worker in old))
        for sock in stale:
            sock.close()
        return True

    def _share_quotas(self, config: ServiceConfig) -> None:
        """The quota table the next workers get: kept across restarts (the counts go on), new when its size changes."""
        access = config.access
        if self.quotas is not None and (access is None or self.quotas.size != access.tracked_clients):
            self.quotas.close()  # the running workers keep their own mapping while they drain
            self.quotas = None
        if access is not None and self.quotas is None:
            self.quotas = QuotaTable.create(access.tracked_clients)

    def _check(self) -> ServiceConfig:
        config = load_service(self.managed.configuration, cors=self.cors)
        Service(config, self.plugins, id=self.id).load()
        return config

    def _failed(self, reason: str, *, serving: bool) -> None:
        self.error = reason
        log.error("service %s failed to start: %s", self.id, reason)
        if serving:
            # The old generation still answers: a failed restart leaves the service as it was.
            self.lifecycle = Lifecycle.READY if all(w.alive for w in self.workers) else Lifecycle.RECOVERING
        else:
            self.lifecycle = Lifecycle.FAILED

    async def _generation(self, indexes: range | list[int], listeners: dict[str, int]) -> list[WorkerProcess]:
        """Start workers on ``listeners`` (address: fd) and wait until all are ready; the first failure (or the time-out) fails all."""
        workers = [WorkerProcess(self, index) for index in indexes]
        self.starting = workers
        try:
            for worker in workers:
                await worker.spawn(listeners)
                self.process_starts += 1
            done, pending = await asyncio.wait(
                [w.ready for w in workers], timeout=self.managed.startup_timeout, return_when=asyncio.FIRST_EXCEPTION
            )
            for future in done:
                if future.exception() is not None:
                    raise future.exception()  # type: ignore[misc]
            if pending:
                raise StartFailed(f"service {self.id} not ready after {self.managed.startup_timeout:g} s (startup_timeout)")
        except BaseException:
            for worker in workers:
                worker.kill()
            await asyncio.gather(*(w.exited.wait() for w in workers if w.process is not None))
            raise
        finally:
            self.starting = []
        return workers

    def _stop_wait(self) -> float:
        """How long a stopping worker may take before it is killed: its stop delay, its drain, and a margin."""
        return self.stop_delay + self.managed.stop_timeout + 5

    async def stop(self) -> None:
        """Stop every worker (drain, disconnect the sources), then close the listeners."""
        self.lifecycle = Lifecycle.STOPPING
        if self._recovery is not None:
            self._recovery.cancel()
            self._recovery = None
        for worker in self.starting:
            worker.kill()
        async with self._runs.lock:
            await asyncio.gather(*(worker.stop(self._stop_wait()) for worker in self.workers))
            self.workers = []
            await asyncio.gather(*(zygote.close() for zygote in self.zygotes.values()))
            self.zygotes.clear()
            self.sockets.close()
            if self.table is not None:
                self.table.close()
                self.table = None
            if self.quotas is not None:
                self.quotas.close()
                self.quotas = None
            if self.metrics_folder is not None:
                self.metrics_folder.remove()
                self.metrics_folder = None
            self.lifecycle = Lifecycle.STOPPED
        log.info("service %s stopped", self.id)

    # -- crashes and automatic restarts -----------------------------------------------------

    def worker_exited(self, worker: WorkerProcess) -> None:
        """Called when any worker process ended: logged; an unexpected exit starts the recovery."""
        assert worker.returncode is not None
        if self.metrics_folder is not None and worker.pid is not None:
            self.metrics_folder.process_exited(worker.pid)
        how = describe_exit(worker.returncode)
        expected = worker.stop_requested and not worker.failure
        self.last_exit = {
            "worker": worker.index,
            "pid": worker.pid,
            **({"signal": how.split()[-1]} if worker.returncode < 0 else {"code": worker.returncode}),
            "expected": expected,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        if expected:
            log.info("%s stopped (%s)", worker.name, how)
            return
        if worker.failure and "garbage" not in worker.failure:
            log.warning("%s exited (%s) after its start failed", worker.name, how)
            return
        log.error("%s exited unexpectedly with %s", worker.name, how)
        if self.quotas is not None and not self.quotas.closed:
            # The requests it was serving will never end: count none in progress rather than lock their callers out.
            self.quotas.forget_in_progress()
        if worker in self.workers and self.lifecycle in (Lifecycle.READY, Lifecycle.RESTARTING, Lifecycle.RECOVERING):
            if self.lifecycle is Lifecycle.READY:
                self.lifecycle = Lifecycle.RECOVERING
            self.error = f"worker {worker.index} (pid {worker.pid}) exited unexpectedly with {how}"
            self._schedule_recovery()

    def _schedule_recovery(self) -> None:
        if self._recovery is None or self._recovery.done():
            self._recovery = asyncio.create_task(self._recover())

    async def _recover(self) -> None:
        while True:
            now = time.monotonic()
            self._attempt = 1 if now - self._recovered_at > self.managed.backoff.reset_after else self._attempt + 1
            delay = self.managed.backoff.delay(self._attempt)
            log.warning("service %s: automatic restart %d in %.1f s", self.id, self._attempt, delay)
            await asyncio.sleep(delay)
            async with self._runs.lock:
                if self.lifecycle in (Lifecycle.STOPPING, Lifecycle.STOPPED):
                    return
                self._recovered_at = time.monotonic()
                alive = [w for w in self.workers if w.alive]
                if not alive:
                    self.lifecycle = Lifecycle.STARTING if not self.workers else Lifecycle.RECOVERING
                    self._recovery = None  # a crash during this start schedules the next attempt
                    if await self._bring_up():
                        self.worker_restarts += len(self.workers)
                    return
                missing = sorted({w.index for w in self.workers} - {w.index for w in alive})
                if not missing:
                    self.lifecycle = Lifecycle.READY
                    return
                self.starts += 1
                try:
                    new = await self._generation(missing, self.sockets.fds())
                except WorkerCrashed as exc:
                    self.error = exc.message
                    log.error("service %s: automatic restart failed: %s", self.id, exc.message)
                    continue
                except (RoadkitError, OSError) as exc:
                    self.error = exc.message if isinstance(exc, RoadkitError) else str(exc)
                    log.error("service %s: automatic restart failed: %s", self.id, self.error)
                    return
                self.workers = sorted(alive + new, key=lambda w: w.index)
                self.worker_restarts += len(new)
                self.lifecycle, self.error = Lifecycle.READY, ""
                log.info("service %s: worker(s) %s started again (pids %s)", self.id, missing, ", ".join(str(w.pid) for w in new))
                return

    # -- what the admin API asks ------------------------------------------------------------

    async def health(self) -> dict[str, Any]:
        """The service's health: its workers' answers merged (worst source state wins)."""
        entry: dict[str, Any] = {"id": self.id, "lifecycle": str(self.lifecycle)}
        static = STATIC_HEALTH.get(self.lifecycle)
        if static is not None:
            entry["state"] = str(static)
            if self.error:
                entry["reason"] = self.error
            return entry
        workers = list(self.workers)
        if not workers or not all(w.alive for w in workers):
            return {**entry, "state": str(HealthState.RED), "reason": self.error or "a worker is not running"}
        answers = await asyncio.gather(*(w.request("health") for w in workers), return_exceptions=True)
        sources: dict[str, dict[str, Any]] = {}
        shares: list[dict[str, Any]] = []
        for worker, answer in zip(workers, answers, strict=True):
            if isinstance(answer, BaseException) or not isinstance(answer, dict) or not isinstance(answer.get("sources"), list):
                why = (
                    "no answer within 1 s"
                    if isinstance(answer, TimeoutError)
                    else (str(answer) if isinstance(answer, BaseException) else "an answer that is not a health report")
                )
                return {**entry, "state": str(HealthState.UNKNOWN), "reason": f"worker {worker.index} (pid {worker.pid}): {why}"}
            if answer.get("state") not in ("green", "orange", "red", "init"):
                return {
                    **entry,
                    "state": str(HealthState.UNKNOWN),
                    "reason": f"worker {worker.index} (pid {worker.pid}): state {answer.get('state')!r}",
                }
            shares.append({"worker": worker.index, "pid": worker.pid, "connections": _connections(answer.get("connections"))})
            for source in answer["sources"]:
                if not isinstance(source, dict) or "id" not in source:
                    continue
                known = sources.get(source["id"])
                if known is None or _SOURCE_ORDER.get(str(source.get("state")), 3) > _SOURCE_ORDER.get(str(known.get("state")), 3):
                    sources[source["id"]] = source
        red = sum(1 for s in sources.values() if _SOURCE_ORDER.get(str(s.get("state")), 3) == 3)
        state = HealthState.GREEN if red == 0 else (HealthState.RED if red * 2 >= len(sources) else HealthState.ORANGE)
        return {**entry, "state": str(state), "sources": list(sources.values()), "workers": shares}

    async def projection(self, pid: str) -> dict[str, str]:
        worker = next((w for w in self.workers if w.alive), None)
        if worker is None or self.lifecycle not in (Lifecycle.READY, Lifecycle.RESTARTING, Lifecycle.RECOVERING):
            raise RoadkitError(f"Service {self.id} is not running", code="service_unavailable", status=503)
        try:
            answer = await worker.request("projection", {"id": pid}, timeout=5.0)
        except (TimeoutError, ChannelError):
            raise RoadkitError(f"Service {self.id} did not answer", code="service_unavailable", status=503) from None
        return {"id": str(answer["id"]), "parameters": str(answer["parameters"])}

    async def describe_apis(self) -> dict[str, Any]:
        worker = next((w for w in self.workers if w.alive), None)
        if worker is None or self.lifecycle not in (Lifecycle.READY, Lifecycle.RESTARTING, Lifecycle.RECOVERING):
            return {}
        try:
            answer = await worker.request("describe_apis", timeout=5.0)
        except (TimeoutError, ChannelError, RoadkitError):
            return {}  # a worker that does not answer now: the description goes without
        return answer if isinstance(answer, dict) else {}

    async def forward(self, op: str, item: str) -> None:
        """A publication call made in every worker; the first error is raised."""
        async with self._runs.lock:  # after a start or restart in progress: its workers read the files as they are now
            workers = [w for w in self.workers if w.alive]
            if not workers:
                return  # a stopped service reads the file when it starts
            await self._forward(workers, op, item)

    async def _forward(self, workers: list[WorkerProcess], op: str, item: str) -> None:
        answers = await asyncio.gather(
            *(w.request(op, {"id": item}, timeout=self.managed.startup_timeout) for w in workers), return_exceptions=True
        )
        for answer in answers:
            if isinstance(answer, RoadkitError):
                raise answer
            if isinstance(answer, BaseException):
                raise RoadkitError(f"Service {self.id} did not apply {op}: {answer}", code="service_unavailable", status=503)

    async def publish_source(self, sid: str) -> None:
        await self.forward("publish_source", sid)

    async def remove_source(self, sid: str) -> None:
        await self.forward("remove_source", sid)

    async def publish_resource(self, rid: str) -> None:
        await self.forward("publish_resource", rid)

    async def remove_resource(self, rid: str) -> None:
        await self.forward("remove_resource", rid)

    def describe(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": self.id,
            "mode": self.managed.mode,
            "workers": self.worker_count,
            "allocator": self.managed.allocator,
            "configurationFile": str(self.managed.configuration),
            "lifecycle": str(self.lifecycle),
            "processes": [w.describe() for w in [*self.workers, *self.starting]],
            "starts": self.starts,
            "processStarts": self.process_starts,
            "lastExit": self.last_exit,
        }
        return completed(entry, self.managed, self.error)
