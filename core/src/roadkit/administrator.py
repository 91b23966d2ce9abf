"""The administrator: its admin API first, then the managed services; global health.

A managed service is reached only through :class:`ServiceHandle` (start, stop, health,
projection, describe), so that a handle running the service in a child process can replace
:class:`InProcessService` without touching the administrator or the admin API.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path
from typing import Any, Protocol

from roadkit.app import create_app
from roadkit.auth.admin import Authenticator
from roadkit.config import ManagedService, ServerConfig, load_server, load_service
from roadkit.config.files import read_document
from roadkit.errors import ConfigurationError, NotFound, RoadkitError
from roadkit.plugins import Plugins
from roadkit.servers import Server
from roadkit.service import Service

log = logging.getLogger(__name__)


#: How long a replaced server answers with ``Connection: close`` before it stops (same-process reload).
DRAIN_SECONDS = 0.5


class ServiceHandle(Protocol):
    """How the administrator drives a managed service, wherever it runs."""

    id: str
    managed: ManagedService

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def health(self) -> dict[str, Any]: ...
    async def projection(self, pid: str) -> dict[str, str]: ...
    def describe(self) -> dict[str, Any]: ...
    async def reload(self) -> None: ...
    async def publish_source(self, sid: str) -> None: ...
    async def remove_source(self, sid: str) -> None: ...
    async def publish_resource(self, rid: str) -> None: ...
    async def remove_resource(self, rid: str) -> None: ...


class InProcessService:
    """A service running in the administrator's own process (``mode = "same-process"``)."""

    def __init__(self, managed: ManagedService, cors: Path | None, plugins: Plugins, *, access_log: bool = False) -> None:
        self.id = managed.id
        self.managed = managed
        self.cors = cors
        self.plugins = plugins
        self.access_log = access_log
        self.lifecycle = "init"
        self.error = ""
        self.service: Service | None = None
        self.server: Server | None = None
        # Start, stop, reload and publication one at a time: a file published during a start is
        # applied once the start has read the folders, never lost between the two.
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Load, connect the sources, then open the listeners. Failures are kept for health."""
        async with self._lock:
            await self._start()

    async def _start(self) -> None:
        self.lifecycle, self.error = "starting", ""
        try:
            config = load_service(self.managed.configuration, cors=self.cors)
            self.service = Service(config, self.plugins, id=self.id)
            await asyncio.wait_for(self.service.start(), self.managed.startup_timeout)
            app = create_app(self.service, manage_lifecycle=False)
            self.server = Server(app, config.listeners, access_log=self.access_log)
            await self.server.start()
        except Exception as exc:
            self.lifecycle = "failed"
            self.error = exc.message if isinstance(exc, RoadkitError) else f"{type(exc).__name__}: {exc}"
            log.error("service %s failed to start:\n%s", self.id, self.error)
            await self._close()
            return
        self.lifecycle = "ready"
        log.info("service %s listening on %s", self.id, ", ".join(listener.bind for listener in config.listeners))

    async def _close(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None
        if self.service is not None:
            await self.service.stop()

    async def stop(self) -> None:
        """Close the listeners, then disconnect the sources."""
        async with self._lock:
            await self._close()
            self.lifecycle = "stopped"
            log.info("service %s stopped", self.id)

    async def reload(self) -> None:
        """Apply a changed service file: the new service is loaded and connected while the old one
        still serves, then the listeners move over. When the new one can't start, the old one keeps
        serving and the error is raised."""
        async with self._lock:
            if self.service is None or self.lifecycle != "ready":
                await self._close()
                await self._start()
                return
            try:
                config = load_service(self.managed.configuration, cors=self.cors)
                service = Service(config, self.plugins, id=self.id)
                await asyncio.wait_for(service.start(), self.managed.startup_timeout)
            except Exception as exc:
                reason = exc.message if isinstance(exc, RoadkitError) else f"{type(exc).__name__}: {exc}"
                raise RoadkitError(
                    f"Service {self.id} can't start with its new configuration; the previous one keeps serving: {reason}",
                    code="reload_failed",
                    status=503,
                ) from None
            old_service, old_server = self.service, self.server
            # The new server accepts on the old server's very sockets (where the addresses stay), then
            # the old one stops accepting and finishes its requests: no moment without a listener.
            handed = old_server.hand_over() if old_server is not None else {}
            wanted = {listener.bind for listener in config.listeners}
            server = Server(
                create_app(service, manage_lifecycle=False),
                config.listeners,
                access_log=self.access_log,
                sockets={bind: sock for bind, sock in handed.items() if bind in wanted},
            )
            try:
                await server.start()
            except Exception as exc:
                for bind in handed:
                    server.sockets.pop(bind, None)
                await server.stop()
                await service.stop()
                if old_server is not None:
                    old_server.sockets.update(handed)
                raise RoadkitError(
                    f"Service {self.id} can't listen with its new configuration; "
                    f"the previous one keeps serving: {type(exc).__name__}: {exc}",
                    code="reload_failed",
                    status=503,
                ) from None
            self.service, self.server = service, server
            if old_server is not None:
                await old_server.drain(DRAIN_SECONDS)  # keep-alive clients move over, requests in flight finish
            for bind, sock in handed.items():
                if bind not in wanted:
                    sock.close()
            await old_service.stop()
            log.info("service %s reloaded, listening on %s", self.id, ", ".join(listener.bind for listener in config.listeners))

    def _running(self) -> Service | None:
        return self.service if self.lifecycle == "ready" else None

    async def publish_source(self, sid: str) -> None:
        """Apply the (new or changed) file of source ``sid``; a stopped service reads it when it starts."""
        async with self._lock:
            if (service := self._running()) is not None:
                await service.publish_source(sid)

    async def remove_source(self, sid: str) -> None:
        """Take source ``sid`` out of the running service."""
        async with self._lock:
            if (service := self._running()) is not None:
                await service.remove_source(sid)

    async def publish_resource(self, rid: str) -> None:
        """Apply the (new or changed) file of resource ``rid``."""
        async with self._lock:
            if (service := self._running()) is not None:
                await service.publish_resource(rid)

    async def remove_resource(self, rid: str) -> None:
        """Stop serving resource ``rid``."""
        async with self._lock:
            if (service := self._running()) is not None:
                await service.remove_resource(rid)

    async def health(self) -> dict[str, Any]:
        if self.service is None or self.lifecycle != "ready":
            entry: dict[str, Any] = {"id": self.id, "state": "red" if self.lifecycle == "failed" else "init", "lifecycle": self.lifecycle}
            if self.service is not None:
                entry["sources"] = self.service.health()["sources"]
            if self.error:
                entry["reason"] = self.error
            return entry
        return self.service.health()

    async def projection(self, pid: str) -> dict[str, str]:
        if self.service is None or self.lifecycle != "ready":
            raise RoadkitError(f"Service {self.id} is not running", code="service_unavailable", status=503)
        return self.service.projection(pid)

    def describe(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": self.id,
            "mode": self.managed.mode,
            "configurationFile": str(self.managed.configuration),
            "lifecycle": self.lifecycle,
        }
        try:
            entry["configuration"] = read_document(self.managed.configuration)
        except ConfigurationError as exc:
            entry["configurationError"] = exc.problems
        return entry


class Administrator:
    """Starts the admin API, then every managed service; answers health for all of them."""

    def __init__(self, config: ServerConfig, plugins: Plugins | None = None) -> None:
        self.config = config
        self.plugins = plugins or Plugins.create()
        self.handles: dict[str, ServiceHandle] = {}
        for managed in config.services:
            self.handles[managed.id] = self.new_handle(managed)
        self.server: Server | None = None
        #: Admin API writes (create, modify, delete, publication) one at a time: check, write, apply.
        self.writes = asyncio.Lock()
        self.authenticator = Authenticator(config.administrator.auth)

    def new_handle(self, managed: ManagedService) -> ServiceHandle:
        """The handle that runs ``managed`` (the one place that picks where a service runs)."""
        if managed.mode != "same-process":
            raise ConfigurationError(
                [f'{self.config.path}: services: mode {managed.mode!r} of service {managed.id!r} is not available yet; use "same-process"']
            )
        return InProcessService(
            managed, self.config.administrator.cors, self.plugins, access_log=self.config.administrator.logging.access_log
        )

    def handle(self, sid: str) -> ServiceHandle:
        """The handle of a managed service (404 when unknown)."""
        try:
            return self.handles[sid]
        except KeyError:
            raise NotFound(f"Can't find service {sid}") from None

    async def health(self) -> dict[str, Any]:
        """Global state: green only when every service is green; red when any is red or starting."""
        services = [await handle.health() for handle in list(self.handles.values())]
        states = {s["state"] for s in services}
        if states <= {"green"}:
            state = "green"
        elif states & {"red", "init", "unknown"}:
            state = "red"
        else:
            state = "orange"
        return {"state": state, "administrator": {"state": "green"}, "services": services}

    async def start(self) -> None:
        """The admin listener first (ready before any service), then the services one by one."""
        from roadkit.apis.admin import create_admin_app

        # The services of the server file, taken before the admin API answers: a service it creates
        # meanwhile is started by its create request, never a second time here.
        configured = list(self.handles.values())
        self.server = Server(create_admin_app(self), [self.config.administrator.listener])
        await self.server.start()
        log.info("admin API listening on %s", self.config.administrator.listener.bind)
        for handle in configured:  # the admin API may delete services meanwhile
            if self.handles.get(handle.id) is handle:
                await handle.start()

    async def stop(self) -> None:
        """Stop the services, then the admin listener."""
        for handle in list(self.handles.values()):
            await handle.stop()
        if self.server is not None:
            await self.server.stop()
        await self.authenticator.close()


def _configure_logging(config: ServerConfig, level: str | None) -> None:
    root = logging.getLogger()
    root.setLevel((level or config.administrator.logging.level).upper())
    if config.administrator.logging.file is not None:
        handler = logging.FileHandler(config.administrator.logging.file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)


def run_administrator(path: Path, *, log_level: str | None = None) -> int:
    """``roadkit serve``: run until SIGINT or SIGTERM."""
    config = load_server(path)
    _configure_logging(config, log_level)

    async def main() -> None:
        admin = Administrator(config)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        starting = asyncio.create_task(admin.start())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done() and starting.exception() is not None:
            stopping.cancel()
            await admin.stop()
            raise starting.exception()  # type: ignore[misc]
        await stopping
        log.info("stopping")
        starting.cancel()
        await admin.stop()

    asyncio.run(main())
    return 0
