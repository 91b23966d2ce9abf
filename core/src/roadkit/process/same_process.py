"""A managed service run in the administrator's own process (``mode = "same-process"``)."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from roadkit.config.models import ManagedService
from roadkit.errors import RoadkitError
from roadkit.plugins import Plugins
from roadkit.process import allocator
from roadkit.process.children import completed
from roadkit.process.listen import ListeningSockets, Rebind, SocketServer
from roadkit.process.metrics import MetricsFolder
from roadkit.serving.app import ServiceApp
from roadkit.serving.bringup import bring_up, load
from roadkit.serving.lifecycle import STATIC_HEALTH, HealthState, Lifecycle, MergedRuns
from roadkit.serving.quotas import QuotaTable
from roadkit.serving.service import Service

log = logging.getLogger(__name__)


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
        self.app: ServiceApp | None = None
        self.sockets = ListeningSockets()
        #: The quota counters of ``[access]``, kept across restarts (None without it).
        self.quotas: QuotaTable | None = None
        self.starts = 0
        #: None: its metrics are this process's own (roadkit.serving.metrics.REGISTRY).
        self.metrics_folder: MetricsFolder | None = None
        self.worker_restarts = 0  # its one worker is this process
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
            self.loading = load(self.managed.configuration, self.cors, self.plugins, id=self.id)
            config = self.loading.config
            access = config.access
            if access is not None and (self.quotas is None or self.quotas.size != access.tracked_clients):
                self.quotas = QuotaTable.create(access.tracked_clients)
            quotas = self.quotas if access is not None else None
            app = await bring_up(self.loading, timeout=self.managed.startup_timeout, quotas=quotas, access_log=self.access_log)
            rebind = self.sockets.update(config.listeners)
            server = SocketServer(
                app,
                [(listener, rebind.sockets[listener.bind]) for listener in config.listeners],
                graceful_timeout=self.managed.stop_timeout,
                http_server=config.http.server,
                http=config.http,
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
        self.app = app
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
            if self.server is not None and self.app is not None and self.service is not None:
                self.app.stopping = True  # the readiness probe says 503 while load balancers notice
                if self.service.config.probes.stop_delay > 0:
                    await asyncio.sleep(self.service.config.probes.stop_delay)
            if self.server is not None:
                await self.server.stop()
                self.server = None
            if self.service is not None:
                await self.service.stop()
            self.sockets.close()
            if self.quotas is not None:
                self.quotas.close()
                self.quotas = None
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

    async def describe_apis(self) -> dict[str, Any]:
        return {} if self.service is None else self.service.describe_apis()

    # Publication waits for a start or restart in progress: a file published meanwhile is
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

    def processes(self) -> list[tuple[str, int]]:
        return [("administrator", os.getpid())] if self.server is not None else []

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
