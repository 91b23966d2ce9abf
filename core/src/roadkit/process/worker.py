"""A worker process of a managed service, forked by the service's zygote (:mod:`roadkit.process.zygote`).

SPEC is a JSON object: ``service`` (id), ``configuration`` (the service file), ``cors``,
``channel`` (the descriptor of its end of the private channel), ``listeners`` (``{"host:port":
descriptor}``: sockets the administrator bound and listens on), ``parent`` (the pid of the process
it dies with: its zygote), ``worker`` (its index), ``access_log``, ``log_level``, ``log_file``, ``graceful_timeout``, and
``quotas`` (the descriptor of the quota counters shared by the service's workers, with ``[access]``).

It dies with the administrator: ``PR_SET_PDEATHSIG`` (SIGKILL) when its zygote dies, which dies with the
administrator, even by SIGKILL, and the end of the channel as a second signal (a graceful stop). It loads the service,
connects its sources, serves on the inherited sockets, says ``ready`` on the channel, answers the
administrator's requests, and on ``stop`` (or SIGTERM) turns its readiness probe to 503, goes on
serving for the service file's ``[probes] stop_delay`` (a load balancer notices), drains its HTTP
server, disconnects its sources and exits 0. A start that fails says ``failed`` with the reason and exits 3.
"""

from __future__ import annotations

import asyncio
import ctypes
import inspect
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roadkit.errors import RoadkitError
from roadkit.process import allocator
from roadkit.process.channel import Channel, ChannelClosed, ChannelError

#: Exit status of a worker whose service could not start (the reason went over the channel).
START_FAILED = 3
#: Exit status when the administrator was already gone at start.
ORPHAN = 4

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when the parent dies; exit now if it is already gone."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the channel's end still stops the worker
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(ORPHAN)


def main(argv: list[str] | None = None) -> int:
    """Entry point of a program that runs a worker (tests play misbehaving workers with one): the spec is the only argument."""
    import orjson

    args = sys.argv[1:] if argv is None else argv
    return serve(orjson.loads(args[0]))


def serve(spec: dict[str, Any], plugins: Any = None) -> int:
    """Run the worker of ``spec`` until it is told to stop; its exit status. ``plugins``: loaded already (by the zygote)."""
    die_with_parent(int(spec["parent"]))
    configure_logging(spec)
    return asyncio.run(Worker(spec, plugins).run(), loop_factory=event_loop_factory())


def renumbered(spec: dict[str, Any], fds: dict[int, int]) -> dict[str, Any]:
    """``spec`` with its descriptors' numbers replaced by ``fds`` (number in the sender: number here)."""
    spec = {**spec, "channel": fds[int(spec["channel"])], "listeners": {k: fds[int(v)] for k, v in spec["listeners"].items()}}
    if isinstance(spec.get("connections"), dict):
        spec["connections"] = {**spec["connections"], "fd": fds[int(spec["connections"]["fd"])]}
    if isinstance(spec.get("quotas"), int):
        spec["quotas"] = fds[spec["quotas"]]
    return spec


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop for a worker when installed (a dependency on Linux): less CPU per request
    in the HTTP server and the loop itself; asyncio's own otherwise."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


log = logging.getLogger("roadkit.process.worker")

#: Requests the administrator forwards to the worker's Service (publication).
SERVICE_CALLS = ("publish_source", "remove_source", "publish_resource", "remove_resource")


def configure_logging(spec: dict[str, Any]) -> None:
    """Log to the inherited stderr (and the administrator's log file), each line naming the worker and the request."""
    from roadkit.requestid import RequestIdFilter, ids_in_formats

    fmt = f"%(asctime)s %(levelname)s %(name)s [{spec['service']}/{spec['worker']} pid %(process)d]%(request)s: %(message)s"
    logging.basicConfig(level=str(spec.get("log_level") or "info").upper(), format=fmt)
    if spec.get("log_file"):
        handler = logging.FileHandler(spec["log_file"])
        handler.setFormatter(logging.Formatter(fmt))
        logging.getLogger().addHandler(handler)
    for each in logging.getLogger().handlers:
        each.addFilter(RequestIdFilter())  # " request=<id>" in the lines written while a request is served
    ids_in_formats()


def error_body(exc: BaseException) -> dict[str, Any]:
    """How an exception travels back to the administrator."""
    if isinstance(exc, RoadkitError):
        return {"status": exc.status, "code": exc.code, "message": exc.message}
    return {"status": 500, "code": "internal", "message": f"{type(exc).__name__}: {exc}"}


class Worker:
    """One worker: a Service and its HTTP server on the administrator's sockets."""

    def __init__(self, spec: dict[str, Any], plugins: Any = None) -> None:
        self.spec = spec
        self.plugins = plugins
        self.stopping = asyncio.Event()
        self.service: Any = None
        self.server: Any = None
        self.app: Any = None
        self.channel: Channel | None = None
        self._answering: set[asyncio.Task[None]] = set()

    async def run(self) -> int:
        """Start, serve until told to stop, stop; the exit status."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        self.channel = await Channel.open(socket.socket(fileno=int(self.spec["channel"])))
        reading = asyncio.create_task(self._read())
        try:
            await self._start()
        except Exception as exc:
            reason = exc.message if isinstance(exc, RoadkitError) else f"{type(exc).__name__}: {exc}"
            log.error("the service could not start: %s", reason)
            await self._send({"event": "failed", "reason": reason})
            await self._stop()
            reading.cancel()
            return START_FAILED
        await self._send({"event": "ready", "pid": os.getpid()})
        log.info("worker ready")
        release = allocator.releaser()
        giving_back = asyncio.create_task(allocator.give_back_when_idle(release)) if release is not None else None
        await self.stopping.wait()
        if giving_back is not None:
            giving_back.cancel()
        await self._unready()
        await self._stop()
        log.info("worker stopped: HTTP server drained, sources disconnected")
        reading.cancel()
        return 0

    async def _start(self) -> None:
        from roadkit.plugins import Plugins
        from roadkit.process.accept import connection_waiting
        from roadkit.process.listen import SocketServer
        from roadkit.routing.source import SourceContext
        from roadkit.serving.bringup import bring_up, load

        cors = self.spec.get("cors")
        # The sources' engines default to this process's share of the cores.
        context = SourceContext.worker(int(self.spec.get("workers") or 1), connection_waiting)
        self.service = load(
            Path(self.spec["configuration"]),
            Path(cors) if cors else None,
            self.plugins or Plugins.create(),
            id=self.spec["service"],
            context=context,
        )
        config = self.service.config
        fds: dict[str, int] = self.spec["listeners"]
        missing = [listener.bind for listener in config.listeners if listener.bind not in fds]
        if missing:
            raise RoadkitError(
                f"listener(s) {', '.join(missing)} not bound by the administrator (the service file changed during the start?)"
            )
        # The JSON access log (ServiceApp) is the one access log: the HTTP server's own stays off.
        app = self.app = await bring_up(self.service, quotas=self._quotas(), access_log=bool(self.spec.get("access_log")))
        if self.stopping.is_set():
            return
        bound = [(listener, socket.socket(fileno=fds[listener.bind])) for listener in config.listeners]
        self.server = SocketServer(
            app,
            bound,
            graceful_timeout=float(self.spec.get("graceful_timeout", 10.0)),
            http_server=config.http.server,
            http=config.http,
            share=self._share(),
        )
        for _, sock in bound:
            sock.detach()  # the server dup'ed them; these descriptors stay open for the process's life
        await self.server.start()

    def _share(self) -> Any:
        """This worker's slot in the connection table the administrator shares with its workers, if any."""
        from roadkit.process.accept import ConnectionTable, Share

        table = self.spec.get("connections")
        if not isinstance(table, dict):
            return None
        return Share(ConnectionTable.attach(int(table["fd"])), int(table["slot"]))

    def _quotas(self) -> Any:
        """The quota counters the administrator shares with the service's workers (``[access]``), if any."""
        from roadkit.serving.quotas import QuotaTable

        fd = self.spec.get("quotas")
        return QuotaTable.attach(int(fd)) if isinstance(fd, int) else None

    async def _unready(self) -> None:
        """Answer the readiness probe with 503 and go on serving for ``[probes] stop_delay`` seconds."""
        if self.app is None or self.server is None:
            return
        self.app.stopping = True
        delay = self.service.config.probes.stop_delay
        if delay > 0:
            log.info("stopping: not ready any more, serving %g s more before the drain", delay)
            await asyncio.sleep(delay)

    async def _stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None
        if self.service is not None:
            await self.service.stop()

    async def _send(self, message: dict[str, Any]) -> None:
        if self.channel is None:
            return
        try:
            await self.channel.send(message)
        except ChannelClosed:
            self.stopping.set()

    async def _read(self) -> None:
        assert self.channel is not None
        while True:
            try:
                message = await self.channel.receive()
            except ChannelClosed:
                log.warning("the administrator closed the channel: stopping")
                self.stopping.set()
                return
            except ChannelError as exc:
                log.error("garbage from the administrator on the channel (%s): stopping", exc)
                self.stopping.set()
                return
            task = asyncio.create_task(self._answer(message))
            self._answering.add(task)  # a reference, or the loop may drop the task half-way
            task.add_done_callback(self._answering.discard)

    async def _answer(self, message: dict[str, Any]) -> None:
        rid = message.get("id")
        try:
            result = await self._call(str(message.get("op")), message.get("args") or {})
            answer: dict[str, Any] = {"id": rid, "result": result}
        except Exception as exc:
            answer = {"id": rid, "error": error_body(exc)}
        await self._send(answer)

    async def _call(self, op: str, args: dict[str, Any]) -> Any:
        if op == "stop":
            self.stopping.set()
            return None
        if op == "ping":
            return os.getpid()
        if self.service is None:
            raise RoadkitError("the service is not loaded yet", code="service_unavailable", status=503)
        if op == "health":
            health: dict[str, Any] = self.service.health()
            if self.server is not None:
                health["connections"] = self.server.connections()
            return health
        if op == "projection":
            return self.service.projection(str(args.get("id")))
        if op == "describe_apis":
            return self.service.describe_apis()
        if op in SERVICE_CALLS:
            method = getattr(self.service, op, None)
            if method is None:
                raise RoadkitError(
                    f"this roadkit cannot {op.replace('_', ' ')} in a running service yet", code="not_implemented", status=501
                )
            result = method(str(args.get("id")))
            if inspect.isawaitable(result):
                result = await result
            return result if isinstance(result, dict | list | str | int | float | bool | None) else None
        raise RoadkitError(f"unknown request {op!r}", code="bad_request", status=400)
