"""The inside of a worker process: load and serve the service, answer the administrator's channel."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import signal
import socket
from pathlib import Path
from typing import Any

from roadkit.channel import Channel, ChannelClosed, ChannelError
from roadkit.errors import RoadkitError

log = logging.getLogger("roadkit.worker")

#: Requests the administrator forwards to the worker's Service (publication agents, issue 9b).
SERVICE_CALLS = ("publish_source", "remove_source", "publish_resource", "remove_resource")


def configure_logging(spec: dict[str, Any]) -> None:
    """Log to the inherited stderr (and the administrator's log file), each line naming the worker."""
    fmt = f"%(asctime)s %(levelname)s %(name)s [{spec['service']}/{spec['worker']} pid %(process)d]: %(message)s"
    logging.basicConfig(level=str(spec.get("log_level") or "info").upper(), format=fmt)
    if spec.get("log_file"):
        handler = logging.FileHandler(spec["log_file"])
        handler.setFormatter(logging.Formatter(fmt))
        logging.getLogger().addHandler(handler)


def error_body(exc: BaseException) -> dict[str, Any]:
    """How an exception travels back to the administrator."""
    if isinstance(exc, RoadkitError):
        return {"status": exc.status, "code": exc.code, "message": exc.message}
    return {"status": 500, "code": "internal", "message": f"{type(exc).__name__}: {exc}"}


class Worker:
    """One worker: a Service and its HTTP server on the administrator's sockets."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.stopping = asyncio.Event()
        self.service: Any = None
        self.server: Any = None
        self.channel: Channel | None = None
        self._answering: set[asyncio.Task[None]] = set()

    async def run(self) -> int:
        """Start, serve until told to stop, stop; the exit status."""
        from roadkit.worker import START_FAILED

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
        await self.stopping.wait()
        await self._stop()
        log.info("worker stopped: HTTP server drained, sources disconnected")
        reading.cancel()
        return 0

    async def _start(self) -> None:
        from roadkit.app import create_app
        from roadkit.config import load_service
        from roadkit.config.models import set_worker_processes
        from roadkit.listen import SocketServer
        from roadkit.plugins import Plugins
        from roadkit.service import Service

        # Before the sources exist: their engines' default threads are this process's share of the cores.
        set_worker_processes(int(self.spec.get("workers") or 1))
        cors = self.spec.get("cors")
        config = load_service(self.spec["configuration"], cors=Path(cors) if cors else None)
        fds: dict[str, int] = self.spec["listeners"]
        missing = [listener.bind for listener in config.listeners if listener.bind not in fds]
        if missing:
            raise RoadkitError(
                f"listener(s) {', '.join(missing)} not bound by the administrator (the service file changed during the start?)"
            )
        self.service = Service(config, Plugins.create(), id=self.spec["service"])
        await self.service.start()
        if self.stopping.is_set():
            return
        app = create_app(self.service, manage_lifecycle=False)
        bound = [(listener, socket.socket(fileno=fds[listener.bind])) for listener in config.listeners]
        self.server = SocketServer(
            app,
            bound,
            access_log=bool(self.spec.get("access_log")),
            graceful_timeout=float(self.spec.get("graceful_timeout", 10.0)),
            http_server=config.http.server,
            share=self._share(),
        )
        for _, sock in bound:
            sock.detach()  # the server dup'ed them; these descriptors stay open for the process's life
        await self.server.start()

    def _share(self) -> Any:
        """This worker's slot in the connection table the administrator shares with its workers, if any."""
        from roadkit.accept import ConnectionTable, Share

        table = self.spec.get("connections")
        if not isinstance(table, dict):
            return None
        return Share(ConnectionTable.attach(int(table["fd"])), int(table["slot"]))

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
