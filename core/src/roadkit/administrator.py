"""The administrator: its admin API first, then the managed services; global health.

A managed service is reached only through :class:`ServiceHandle` (start, stop, restart, health,
projection, publication calls, describe): :class:`InProcessService` runs it in this process,
:class:`~roadkit.children.ChildProcessService` in worker processes; the admin API never knows which.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from roadkit import allocator
from roadkit.app import create_app
from roadkit.auth.admin import Authenticator
from roadkit.children import ChildProcessService, completed
from roadkit.config import ManagedService, ServerConfig, load_server, load_service
from roadkit.errors import NotFound, RoadkitError
from roadkit.lifecycle import STATIC_HEALTH, HealthState, Lifecycle, MergedRuns
from roadkit.listen import ListeningSockets, Rebind, SocketServer
from roadkit.plugins import Plugins
from roadkit.service import Service

log = logging.getLogger(__name__)


class ServiceHandle(Protocol):
    """How the administrator drives a managed service, wherever it runs.

    ``restart`` and ``reload`` re-read the service file and replace the running service without
    refusing a request; calls made while a start or restart runs are merged into one next run.
    The publication calls (issue 9b) load one source or resource from its file on disk (or drop it).
    """

    id: str
    managed: ManagedService
    lifecycle: Lifecycle
    #: Why the last start or restart failed ("" after a good one).
    error: str

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def restart(self) -> None: ...
    async def reload(self) -> None: ...
    async def health(self) -> dict[str, Any]: ...
    async def projection(self, pid: str) -> dict[str, str]: ...
    async def publish_source(self, sid: str) -> None: ...
    async def remove_source(self, sid: str) -> None: ...
    async def publish_resource(self, rid: str) -> None: ...
    async def remove_resource(self, rid: str) -> None: ...
    def describe(self) -> dict[str, Any]: ...


class InProcessService:
    """A service running in the administrator's own process (``mode = "same-process"``)."""

    def __init__(self, managed: ManagedService, cors: Path | None, plugins: Plugins, *, access_log: bool = False) -> None:
        self.id = managed.id
        self.managed = managed
        self.cors = cors
        self.plugins = plugins
        self.access_log = access_log
        self.lifecycle = Lifecycle.INIT
        self.error = ""
        self.service: Service | None = None
        self.loading: Service | None = None
        self.server: SocketServer | None = None
        self.sockets = ListeningSockets()
        self.starts = 0
        self._runs = MergedRuns(self._restart)

    async def start(self) -> None:
        """Load, connect the sources, then accept on the listeners. Failures are kept for health."""
        async with self._runs.lock:
            self.lifecycle = Lifecycle.STARTING
            await self._bring_up()

    async def restart(self) -> None:
        """Re-read the service file; the running service answers until the new one is ready."""
        if self.lifecycle in (Lifecycle.STOPPING, Lifecycle.STOPPED):
            raise RoadkitError(f"Service {self.id} is stopped", code="start_failed", status=503)
        await self._runs()

    async def reload(self) -> None:
        """The service file re-read and applied without downtime (a merged restart)."""
        await self.restart()

    async def _restart(self) -> None:
        serving = self.service is not None
        if not await self._bring_up():
            if serving:
                raise RoadkitError(
                    f"Service {self.id} can't start with its new configuration; the previous one keeps serving: {self.error}",
                    code="reload_failed",
                    status=503,
                )
            raise RoadkitError(f"Service {self.id} could not start: {self.error}", code="start_failed", status=503)

    async def _bring_up(self) -> bool:
        """A new Service on the listeners, then the old one drained and disconnected; False on failure."""
        self.starts += 1
        if self.service is not None:
            self.lifecycle = Lifecycle.RESTARTING
        rebind: Rebind | None = None
        try:
            config = load_service(self.managed.configuration, cors=self.cors)
            self.loading = Service(config, self.plugins, id=self.id)
            await asyncio.wait_for(self.loading.start(), self.managed.startup_timeout)
            rebind = self.sockets.update(config.listeners)
            app = create_app(self.loading, manage_lifecycle=False)
            server = SocketServer(
                app,
                [(listener, rebind.sockets[listener.bind]) for listener in config.listeners],
                access_log=self.access_log,
                graceful_timeout=self.managed.stop_timeout,
                http_server=config.http.server,
            )
            await server.start()
        except Exception as exc:
            if rebind is not None:
                rebind.rollback()  # the running server keeps its sockets: a later restart binds nothing twice
            self.error = exc.message if isinstance(exc, RoadkitError) else (str(exc) or type(exc).__name__)
            if isinstance(exc, TimeoutError):
                self.error = f"not ready after {self.managed.startup_timeout:g} s (startup_timeout)"
            log.error("service %s failed to start:\n%s", self.id, self.error)
            if self.loading is not None:
                await self.loading.stop(final_state="failed")
            self.loading = None
            self.lifecycle = Lifecycle.READY if self.service is not None else Lifecycle.FAILED
            return False
        stale = rebind.commit()
        old_server, old_service = self.server, self.service
        self.service, self.server, self.loading = self.loading, server, None
        self.lifecycle, self.error = Lifecycle.READY, ""
        log.info("service %s listening on %s", self.id, ", ".join(listener.bind for listener in config.listeners))
        if old_server is not None:
            await old_server.stop()
        if old_service is not None:
            await old_service.stop()
        for sock in stale:
            sock.close()
        return True

    async def stop(self) -> None:
        """Stop accepting and drain, then disconnect the sources and close the listeners."""
        self.lifecycle = Lifecycle.STOPPING
        async with self._runs.lock:
            if self.server is not None:
                await self.server.stop()
                self.server = None
            if self.service is not None:
                await self.service.stop()
            self.sockets.close()
            self.lifecycle = Lifecycle.STOPPED
        log.info("service %s stopped", self.id)

    async def health(self) -> dict[str, Any]:
        static = STATIC_HEALTH.get(self.lifecycle)
        if static is not None or self.service is None:
            entry: dict[str, Any] = {"id": self.id, "state": str(static or HealthState.INIT), "lifecycle": str(self.lifecycle)}
            shown = self.loading or self.service
            if shown is not None:
                entry["sources"] = shown.health()["sources"]
            if self.error:
                entry["reason"] = self.error
            return entry
        return {**self.service.health(), "lifecycle": str(self.lifecycle)}

    async def projection(self, pid: str) -> dict[str, str]:
        if self.service is None:
            raise RoadkitError(f"Service {self.id} is not running", code="service_unavailable", status=503)
        return self.service.projection(pid)

    # Publication (issue 9b) waits for a start or restart in progress: a file published meanwhile is
    # applied once the folders were read, never lost between the two. A stopped service reads it when it starts.
    async def publish_source(self, sid: str) -> None:
        """Apply the (new or changed) file of source ``sid``."""
        async with self._runs.lock:
            if self.service is not None:
                await self.service.publish_source(sid)

    async def remove_source(self, sid: str) -> None:
        """Take source ``sid`` out of the running service."""
        async with self._runs.lock:
            if self.service is not None:
                await self.service.remove_source(sid)

    async def publish_resource(self, rid: str) -> None:
        """Apply the (new or changed) file of resource ``rid``."""
        async with self._runs.lock:
            if self.service is not None:
                await self.service.publish_resource(rid)

    async def remove_resource(self, rid: str) -> None:
        """Stop serving resource ``rid``."""
        async with self._runs.lock:
            if self.service is not None:
                await self.service.remove_resource(rid)

    def describe(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": self.id,
            "mode": self.managed.mode,
            "workers": 1,
            "allocator": self.managed.allocator,
            "configurationFile": str(self.managed.configuration),
            "lifecycle": str(self.lifecycle),
            "processes": [
                {
                    "worker": 0,
                    "pid": os.getpid(),
                    "state": "ready" if self.service is not None else str(self.lifecycle),
                    "allocator": allocator.own(),
                }
            ],
            "starts": self.starts,
            "processStarts": 0,
            "lastExit": None,
        }
        return completed(entry, self.managed, self.error)


def make_handle(managed: ManagedService, config: ServerConfig, plugins: Plugins, *, log_level: str | None = None) -> ServiceHandle:
    """The handle for a managed service's mode."""
    admin = config.administrator
    if managed.mode == "same-process":
        return InProcessService(managed, admin.cors, plugins, access_log=admin.logging.access_log)
    return ChildProcessService(
        managed,
        admin.cors,
        plugins,
        access_log=admin.logging.access_log,
        log_level=log_level or admin.logging.level,
        log_file=admin.logging.file,
    )


class Administrator:
    """Starts the admin API, then every managed service; answers health for all of them."""

    def __init__(self, config: ServerConfig, plugins: Plugins | None = None, *, log_level: str | None = None) -> None:
        self.config = config
        self.plugins = plugins or Plugins.create()
        self.log_level = log_level
        self.handles: dict[str, ServiceHandle] = {}
        for managed in config.services:
            self.handles[managed.id] = self.new_handle(managed)
        self.server: SocketServer | None = None
        #: The admin listener's socket, bound before the admin API starts (a port in use names its address).
        self.admin_sockets = ListeningSockets()
        #: Admin API writes (create, modify, delete, publication) one at a time: check, write, apply.
        self.writes = asyncio.Lock()
        self.authenticator = Authenticator(config.administrator.auth)

    def new_handle(self, managed: ManagedService) -> ServiceHandle:
        """The handle that runs ``managed`` (the one place that picks where a service runs)."""
        return make_handle(managed, self.config, self.plugins, log_level=self.log_level)

    def handle(self, sid: str) -> ServiceHandle:
        """The handle of a managed service (404 when unknown)."""
        try:
            return self.handles[sid]
        except KeyError:
            raise NotFound(f"Can't find service {sid}") from None

    async def health(self) -> dict[str, Any]:
        """Global state: green only when every service is green; red when any is red or starting."""
        services = list(await asyncio.gather(*(handle.health() for handle in list(self.handles.values()))))
        states = {s["state"] for s in services}
        if states <= {"green"}:
            state = "green"
        elif states & {"red", "init", "unknown"}:
            state = "red"
        else:
            state = "orange"
        return {"state": state, "administrator": {"state": "green"}, "services": services}

    async def start(self) -> None:
        """The admin listener first (ready before any service), then the services."""
        # The services of the server file, taken before the admin API answers: one it creates
        # meanwhile is started by its create request, never a second time here.
        configured = list(self.handles.values())
        await self.start_admin_api()
        await self.start_services(configured)

    async def start_admin_api(self) -> None:
        """Serve the admin API (it answers while the services load)."""
        from roadkit.apis.admin import create_admin_app

        listener = self.config.administrator.listener
        self.admin_sockets.update([listener]).commit()
        # The services' server (hypercorn's machinery): a connection its client closes is closed at once.
        self.server = SocketServer(create_admin_app(self), [(listener, self.admin_sockets.sockets[listener.bind])])
        self.server.drain_grace = 0.0  # stopped with the administrator: no other server takes its clients over
        await self.server.start()
        log.info("admin API listening on %s", self.config.administrator.listener.bind)

    async def start_services(self, handles: Sequence[ServiceHandle] | None = None) -> None:
        """Start ``handles`` (default: every managed service) side by side (each in its own processes or tasks)."""
        pending = list(self.handles.values()) if handles is None else list(handles)
        # The admin API may delete services meanwhile: only those still managed start here.
        await asyncio.gather(*(handle.start() for handle in pending if self.handles.get(handle.id) is handle))

    async def stop(self) -> None:
        """Stop the services, then the admin listener."""
        await asyncio.gather(*(handle.stop() for handle in list(self.handles.values())))
        if self.server is not None:
            await self.server.stop()
        self.admin_sockets.close()
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
        admin = Administrator(config, log_level=log_level)
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
