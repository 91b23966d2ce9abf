"""Workers forked from a preloaded process (``python -m roadkit.process.zygote CONTROL ADMINISTRATOR ID FILE [CORS]``).

A child-process service starts one zygote per allocator (``LD_PRELOAD`` applies at a process's start);
``roadkit serve`` starts the server file's ones first of all (:func:`spawn_zygotes`). The zygote
imports roadkit, the plugins and their engine libraries once, freezes those objects for the garbage
collector (:func:`gc.freeze`), then forks a worker whenever the administrator asks: every
worker shares the zygote's code and objects page for page, instead of importing them again into
memory of its own. It also reads the service file once (as the administrator's check does) so that
the code a worker runs to load it is already specialised by the interpreter: Python rewrites a
function's bytecode as it warms up, and a page rewritten in each worker is a page copied into each.
Engines are never opened in the zygote (their threads do not survive a fork): each worker opens its
sources after the fork, on memory-mapped data that all of them share.

The administrator and its zygote talk over a ``SOCK_SEQPACKET`` socket pair, one JSON object a
message. The zygote says ``{"ready": pid}`` once it has imported. The administrator sends ``{"id": n,
"spec": {...}, "fds": [...], "environment": {...}, "command": null}`` with the worker's descriptors
attached (``SCM_RIGHTS``, in the order of ``fds``, the numbers ``spec`` uses in the administrator);
the zygote answers ``{"id": n, "pid": pid}`` (or
``{"id": n, "error": "..."}``) and later ``{"exited": pid, "returncode": code}`` (negative: killed by
that signal) when it reaps the worker. A worker dies with its zygote (``PR_SET_PDEATHSIG``), which
dies with the administrator. ``command`` (tests only) has the forked child run another program
instead, with the spec as its last argument.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import logging
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from roadkit.config.allocator import preload as allocator_library
from roadkit.process import allocator
from roadkit.process.worker import die_with_parent, renumbered

if TYPE_CHECKING:
    from roadkit.config import ServerConfig
    from roadkit.plugins import Plugins

log = logging.getLogger(__name__)

#: The most descriptors one worker gets (channel, tables, one per listener).
MAX_FDS = 253
#: The largest message (a spec is a few hundred bytes).
MAX_MESSAGE = 1 << 20
#: Libraries the workers need, imported before the fork when installed (the plugins import the rest).
PRELOADED = (
    "roadkit.process.accept",
    "roadkit.process.listen",
    "roadkit.routing.source",
    "roadkit.serving.bringup",
    "roadkit.serving.quotas",
    "roadkit.requestid",
    "uvloop",
    "uvicorn",
    "osrm",
    "valhalla",
    "asyncpg",
    "shapely",
    "pyproj",
)


# -- the zygote's side ---------------------------------------------------------------------------


def warm_up(plugins: Plugins, service: str, configuration: Path, cors: Path | None) -> None:
    """Load the service file (no source connected), as each worker will: errors are the worker's to report."""
    from roadkit.config import load_service
    from roadkit.serving.service import Service

    with contextlib.suppress(Exception):
        Service(load_service(configuration, cors=cors), plugins, id=service).load()


def preload() -> Plugins:
    """Import what every worker imports, so that the forked workers share it; the plugins, loaded once for all."""
    import importlib

    from roadkit.plugins import Plugins

    plugins = Plugins.create()  # the plugins' modules, through their entry points
    # What the hooks import when called (the source kinds, their APIs, their units) is shared too.
    plugins.source_kinds()
    plugins.apis()
    plugins.cost_units()
    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    return plugins


def fill_pools() -> list[object]:
    """Objects that fill the free blocks of the interpreter's memory pools, kept for the zygote's life.

    After the collection, the pools of the imports' objects have free blocks scattered over most of
    their pages; a worker's first allocations would land in them and copy each of those pages. Filled
    here, the workers allocate in pools of their own. The counts come from ``sys._debugmallocstats``
    (CPython's; its format unknown: nothing is filled).
    """
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    kept: list[object] = []
    for line in text.splitlines():
        fields = line.split()
        # "class  size  num pools  blocks in use  avail blocks": one line per size class.
        if len(fields) != 5 or not all(field.isdigit() for field in fields):
            continue
        size, available = int(fields[1]), int(fields[4])
        if size == 32:
            kept += [float(i) + 0.5 for i in range(available)]  # a float takes 24 bytes: the 32-byte class
        elif size >= 48:
            kept += [bytes(size - 33) for _ in range(available)]  # bytes(n) takes 33 + n bytes
    return kept


def main(argv: list[str] | None = None) -> int:
    """Entry point: the descriptor of the control socket, the administrator's pid, the service's id, file and CORS file."""
    # No collection while importing: the objects stay untouched until frozen, so no page of theirs is copied later.
    gc.disable()
    args = sys.argv[1:] if argv is None else argv
    control = socket.socket(fileno=int(args[0]))
    die_with_parent(int(args[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl+C reaches the administrator, which stops the workers first
    plugins = preload()
    warm_up(plugins, args[2], Path(args[3]), Path(args[4]) if len(args) > 4 else None)
    gc.collect()
    kept = fill_pools()
    gc.freeze()
    threads = len(os.listdir("/proc/self/task"))
    if threads > 1:
        print(f"roadkit zygote: {threads - 1} thread(s) started by an import: forking workers anyway", file=sys.stderr)
    control.sendall(orjson.dumps({"ready": os.getpid()}))
    return Zygote(control, plugins, kept).serve()


class Zygote:
    """The zygote's loop: fork on request, report each exit."""

    def __init__(self, control: socket.socket, plugins: Plugins, kept: list[object]) -> None:
        self.control = control
        self.plugins = plugins
        self.kept = kept
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ)
        self.children: dict[int, int] = {}  # pidfd: pid

    def serve(self) -> int:
        while True:
            for key, _ in self.selector.select():
                if key.fileobj is self.control:
                    if not self._request():
                        return 0
                else:
                    self._reap(int(key.fd))

    def _send(self, message: dict[str, Any]) -> None:
        self.control.sendall(orjson.dumps(message))

    def _request(self) -> bool:
        """Fork the worker of one request; False when the administrator closed the socket."""
        try:
            data, fds, flags, _ = socket.recv_fds(self.control, MAX_MESSAGE, MAX_FDS)
        except ConnectionError:
            return False
        if not data:
            return False
        request: Any = None
        try:
            request = orjson.loads(data)
            if flags & (socket.MSG_CTRUNC | socket.MSG_TRUNC):
                raise ValueError("message or descriptors truncated")
            mapping = dict(zip(request["fds"], fds, strict=True))
            # Its parent's pid taken before the fork: a child that finds another parent then knows the zygote died.
            spec = {**renumbered(request["spec"], mapping), "parent": os.getpid()}
            pid = os.fork()
            if pid == 0:
                self._child(spec, fds, request.get("environment") or {}, request.get("command"))
            pidfd = os.pidfd_open(pid)
            self.children[pidfd] = pid
            self.selector.register(pidfd, selectors.EVENT_READ)
            self._send({"id": request["id"], "pid": pid})
        except Exception as exc:  # a bad request fails that worker, never the zygote
            self._send({"id": request.get("id") if isinstance(request, dict) else None, "error": f"{type(exc).__name__}: {exc}"})
        finally:
            for fd in fds:
                os.close(fd)
        return True

    def _reap(self, pidfd: int) -> None:
        pid = self.children.pop(pidfd)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self._send({"exited": pid, "returncode": os.waitstatus_to_exitcode(status)})

    def _child(self, spec: dict[str, Any], fds: list[int], environment: dict[str, str], command: list[str] | None) -> None:
        """The forked worker: the zygote's descriptors closed, its spec run; never returns."""
        code = 1
        try:
            self.selector.close()
            self.control.close()
            for pidfd in self.children:
                os.close(pidfd)
            die_with_parent(int(spec["parent"]))  # kept across the exec of a command too
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.environ.update(environment)
            gc.enable()
            if command:
                for fd in fds:
                    os.set_inheritable(fd, True)
                os.execv(command[0], [*command, orjson.dumps(spec).decode()])
            from roadkit.process.worker import serve

            code = serve(spec, self.plugins)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


# -- the administrator's side ------------------------------------------------------------------


class ZygoteGone(OSError):
    """The zygote exited (its workers died with it)."""


class Forked:
    """A worker the zygote forked: its pid, and its exit status once the zygote reaped it."""

    def __init__(self, pid: int, exited: asyncio.Future[int]) -> None:
        self.pid = pid
        self.exited = exited
        try:
            self.pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # exited already: its report is on its way
            self.pidfd = None

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` if it still runs (through a pidfd: never to a later process with the same pid)."""
        if self.pidfd is not None and not self.exited.done():
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.pidfd, sig)

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def spawn_zygotes(config: ServerConfig) -> dict[str, ZygoteProcess]:
    """The zygotes of the server file's child-process services, started now, by service id.

    ``roadkit serve`` starts them before it imports the administrator's code: their imports and its run side by side.
    """
    zygotes: dict[str, ZygoteProcess] = {}
    for managed in config.services:
        if managed.mode != "child-process":
            continue
        zygote = ZygoteProcess(allocator_library(managed.allocator), managed.id, managed.configuration, config.administrator.cors)
        try:
            zygote.spawn()
        except OSError as exc:  # the service starts one when it starts, and reports the error then
            log.warning("service %s: cannot start the workers' zygote yet: %s", managed.id, exc)
            continue
        zygotes[managed.id] = zygote
    return zygotes


class ZygoteProcess:
    """The administrator's handle on one zygote: started, asked to fork, told about exits, closed."""

    def __init__(self, library: Path | None, service: str, configuration: Path, cors: Path | None) -> None:
        self.library = library
        self.arguments = [service, str(configuration), *([str(cors)] if cors else [])]
        self.process: subprocess.Popen[bytes] | None = None
        self.socket: socket.socket | None = None
        self._ids = itertools.count(1)
        self._forks: dict[int, asyncio.Future[Forked]] = {}
        self._exits: dict[int, asyncio.Future[int]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._starting: asyncio.Future[None] | None = None
        self._loaded: asyncio.Future[None] | None = None
        self._folder = ""

    @property
    def exited(self) -> bool:
        """It was started and is gone (or its start failed): a new one takes its place."""
        return self._starting is not None and self._starting.done() and self.socket is None

    def begin(self) -> None:
        """Start it now (once), without waiting: it imports while this process goes on with its own work."""
        if self._starting is not None:
            return
        try:
            if self.process is None:
                self.spawn()
            self._starting = asyncio.ensure_future(self._attach())
        except OSError as exc:
            self._starting = asyncio.get_running_loop().create_future()
            self._starting.set_exception(exc)
        self._starting.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved by ready(), if called

    async def ready(self) -> None:
        """Started, its imports done: it forks at once."""
        self.begin()
        assert self._starting is not None
        await asyncio.shield(self._starting)

    def spawn(self) -> None:
        """Start the process (no event loop needed): its imports run beside whatever this process does next."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # prometheus-client chooses its multiprocess values at import: the variable must be set before the
        # zygote's imports; each worker then points it to its service's folder before its first value.
        self._folder = tempfile.mkdtemp(prefix="roadkit-zygote-")
        env = {"PROMETHEUS_MULTIPROC_DIR": self._folder, **allocator.environment(self.library)}
        # The workers do no linear algebra: OpenBLAS (numpy's, through shapely) needs no thread pool of its own in each.
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "roadkit.process.zygote", str(theirs.fileno()), str(os.getpid()), *self.arguments],
                stdin=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
                env=env,
            )
        except BaseException:
            ours.close()
            shutil.rmtree(self._folder, ignore_errors=True)
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self.socket = ours

    async def _attach(self) -> None:
        self._loaded = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read())
        await self._loaded

    async def fork(self, spec: dict[str, Any], fds: list[int], environment: dict[str, str], command: list[str] | None) -> Forked:
        """A new worker running ``spec`` with ``fds`` (the numbers ``spec`` uses here)."""
        await self.ready()
        if self.socket is None:
            raise ZygoteGone("the zygote is not running")
        rid = next(self._ids)
        future: asyncio.Future[Forked] = asyncio.get_running_loop().create_future()
        self._forks[rid] = future
        message = orjson.dumps({"id": rid, "spec": spec, "fds": fds, "environment": environment, "command": command})
        try:
            await self._send(message, fds)
            return await future
        finally:
            self._forks.pop(rid, None)

    async def _send(self, message: bytes, fds: list[int]) -> None:
        assert self.socket is not None
        loop = asyncio.get_running_loop()
        while True:
            try:
                socket.send_fds(self.socket, [message], fds)
                return
            except BlockingIOError:
                writable: asyncio.Future[None] = loop.create_future()
                loop.add_writer(self.socket.fileno(), _wake, writable)
                try:
                    await writable
                finally:
                    loop.remove_writer(self.socket.fileno())

    async def _read(self) -> None:
        assert self.socket is not None
        loop = asyncio.get_running_loop()
        try:
            while True:
                data = await loop.sock_recv(self.socket, MAX_MESSAGE)
                if not data:
                    break
                self._dispatch(orjson.loads(data))
        except (OSError, orjson.JSONDecodeError) as exc:
            log.error("the workers' zygote (pid %s) failed: %s", self.process.pid if self.process else None, exc)
        finally:
            self._gone()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "ready" in message:
            if self._loaded is not None and not self._loaded.done():
                self._loaded.set_result(None)
            return
        if "exited" in message:
            exited = self._exits.pop(int(message["exited"]), None)
            if exited is not None and not exited.done():
                exited.set_result(int(message["returncode"]))
            return
        future = self._forks.get(int(message.get("id") or 0))
        if future is None or future.done():
            return
        if "pid" in message:
            pid = int(message["pid"])
            exits = self._exits[pid] = asyncio.get_running_loop().create_future()
            future.set_result(Forked(pid, exits))
        else:
            future.set_exception(OSError(f"the zygote could not fork a worker: {message.get('error')}"))

    def _gone(self) -> None:
        """The zygote exited: its workers died with it (SIGKILL, ``PR_SET_PDEATHSIG``)."""
        if self.socket is not None:
            self.socket.close()
            self.socket = None
        if self._loaded is not None and not self._loaded.done():
            self._loaded.set_exception(ZygoteGone("the zygote exited before it was ready"))
        for fork in self._forks.values():
            if not fork.done():
                fork.set_exception(ZygoteGone("the zygote exited"))
        for exited in self._exits.values():
            if not exited.done():
                exited.set_result(-signal.SIGKILL)
        self._exits.clear()
        shutil.rmtree(self._folder, ignore_errors=True)
        if self.process is not None:
            self.process.poll()  # reaped now if it is gone already, else by close() or the next start

    async def close(self) -> None:
        """Stop the zygote (any worker still running dies with it)."""
        if self._starting is not None:
            with contextlib.suppress(Exception):
                await self._starting
        if self.socket is not None:
            self.socket.shutdown(socket.SHUT_RDWR)
        if self._reader is not None:
            await self._reader
        if self.process is not None:
            try:
                await asyncio.to_thread(self.process.wait, 10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                await asyncio.to_thread(self.process.wait)


if __name__ == "__main__":
    sys.exit(main())
