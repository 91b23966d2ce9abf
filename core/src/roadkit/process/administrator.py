"""The administrator: its admin API first, then the managed services; global health.

A managed service is reached only through a :class:`~roadkit.process.handle.ServiceHandle`:
:class:`~roadkit.process.same_process.InProcessService` runs it in this process,
:class:`~roadkit.process.children.ChildProcessService` in worker processes. The administrator serves
the app it is given on the admin listener and is that app's :class:`~roadkit.apis.admin.backend.AdminBackend`
(by the protocol's shape: it imports no API).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp

from roadkit.auth.admin import Authenticator
from roadkit.auth.sites import SitePolicy
from roadkit.config import ManagedService, ServerConfig, load_server
from roadkit.config.files import read_document
from roadkit.config.writer import atomic_remove, atomic_write
from roadkit.config.writes import policy_of
from roadkit.errors import NotFound
from roadkit.plugins import Plugins
from roadkit.process.children import ChildProcessService
from roadkit.process.handle import ServiceHandle
from roadkit.process.listen import ListeningSockets, SocketServer
from roadkit.process.management import Management
from roadkit.process.metrics import metrics_app, scrape
from roadkit.process.same_process import InProcessService
from roadkit.process.zygote import ZygoteProcess
from roadkit.serving.data_versions import requested_version, switch_document
from roadkit.serving.documents import Kind, ServiceFiles

log = logging.getLogger(__name__)

#: Builds the admin app for an administrator (``roadkit.apis.admin.create_admin_app``).
AdminAppFactory = Callable[[Any], ASGIApp]


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

    def __init__(
        self, config: ServerConfig, plugins: Plugins | None = None, *, admin_app: AdminAppFactory, log_level: str | None = None
    ) -> None:
        self.config = config
        self.admin_app = admin_app
        self.plugins = plugins or Plugins.create()
        self.log_level = log_level
        self.handles: dict[str, ServiceHandle] = {}
        for managed in config.services:
            self.handles[managed.id] = self.new_handle(managed)
        self.server: SocketServer | None = None
        #: The admin listener's socket, bound before the admin API starts (a port in use names its address).
        self.admin_sockets = ListeningSockets()
        #: ``[administrator.metrics_listener]``'s server and socket, when configured.
        self.metrics_server: SocketServer | None = None
        self.metrics_sockets = ListeningSockets()
        #: Admin API writes (create, modify, delete, publication) one at a time: check, write, apply.
        self.writes = asyncio.Lock()
        self.authenticator = Authenticator(config.administrator.auth, sites=SitePolicy.for_admin(config.administrator))
        self.management = Management(self)

    def new_handle(self, managed: ManagedService) -> ServiceHandle:
        """The handle that runs ``managed`` (the one place that picks where a service runs)."""
        return make_handle(managed, self.config, self.plugins, log_level=self.log_level)

    def handle(self, sid: str) -> ServiceHandle:
        """The handle of a managed service (404 when unknown)."""
        try:
            return self.handles[sid]
        except KeyError:
            raise NotFound(f"Can't find service {sid if len(sid) <= 128 else sid[:128] + '...'}") from None

    # The admin API's backend (roadkit.apis.admin.backend.AdminBackend).

    def configuration(self) -> dict[str, Any]:
        """The server file, as a document with Road2's structure: ``{"administration": {...}}``."""
        document = read_document(self.config.path)
        if "administration" in document:  # Road2's administration file, as it is
            return document
        # A TOML server file: Road2's keys (api, services, network.server), roadkit's other settings beside them.
        settings = dict(document.get("administrator") or {})
        administration: dict[str, Any] = {"api": {"name": "admin", "version": "1.0.0"}, "services": document.get("services", [])}
        if "listener" in settings:
            administration["network"] = {"server": settings.pop("listener")}
        administration.update({key: value for key, value in settings.items() if key not in administration})
        return {
            "administration": administration,
            **{key: value for key, value in document.items() if key not in ("administrator", "services")},
        }

    def services(self) -> list[dict[str, Any]]:
        """Every managed service, described."""
        return [handle.describe() for handle in self.handles.values()]

    def describe(self, sid: str) -> dict[str, Any]:
        """One managed service, described (404 when unknown)."""
        return self.handle(sid).describe()

    async def restart(self, sid: str) -> dict[str, Any]:
        """Restart one service; its description once the restart is done."""
        handle = self.handle(sid)
        await handle.restart()
        return handle.describe()

    async def describe_apis(self, sid: str) -> dict[str, Any]:
        """What the APIs of a running service add to its description (``ogcApis``: its OGC APIs)."""
        return await self.handle(sid).describe_apis()

    async def projection(self, sid: str, pid: str) -> dict[str, str]:
        """One projection of a running service."""
        return await self.handle(sid).projection(pid)

    async def create(self, body: Any) -> dict[str, Any]:
        """Create and start a service (checks first, then writes, then starts)."""
        async with self.writes:
            return (await self.management.create(body)).describe()

    async def modify(self, sid: str, body: Any) -> dict[str, Any]:
        """Change a service's entry or file, then apply it without downtime."""
        async with self.writes:
            return (await self.management.modify(sid, body)).describe()

    async def delete(self, sid: str) -> None:
        """Stop a service and remove it from the server file."""
        async with self.writes:
            await self.management.delete(sid)

    def _files(self, sid: str) -> tuple[ServiceHandle, ServiceFiles]:
        handle = self.handle(sid)
        return handle, ServiceFiles(handle.managed.configuration, self.plugins, policy_of(self.config))

    def documents(self, sid: str, kind: Kind) -> list[dict[str, Any]]:
        """The ``.source`` or ``.resource`` documents of a service."""
        return self._files(sid)[1].documents(kind)

    def document(self, sid: str, kind: Kind, oid: str) -> dict[str, Any]:
        """One ``.source`` or ``.resource`` document of a service."""
        return self._files(sid)[1].document(kind, oid)

    async def publish(self, sid: str, kind: Kind, oid: str, body: Any) -> tuple[dict[str, Any], bool]:
        """Check the whole document, write its file atomically, then load it into the running service.

        A document the service refuses puts the file back as it was, so that disk and memory agree.
        """
        async with self.writes:
            # Under the lock: a concurrent PUT /services/{id} may have replaced the handle meanwhile.
            handle, files = self._files(sid)
            check = files.check_source if kind == "source" else files.check_resource
            path, text, created = check(oid, body)
            previous = path.read_text(encoding="utf-8") if path.exists() else None
            policy = files.policy
            atomic_write(path, text, mode=policy.file_mode, gid=policy.gid)
            try:
                await (handle.publish_source(oid) if kind == "source" else handle.publish_resource(oid))
            except Exception:
                if previous is None:
                    atomic_remove(path)
                else:
                    atomic_write(path, previous, mode=policy.file_mode, gid=policy.gid)
                raise
            return read_document(path), created

    async def switch_version(self, sid: str, oid: str, body: Any) -> dict[str, Any]:
        """Point source ``oid`` at another version of its data in every worker, without a restart.

        Published as a PUT of its document with the new ``version``. When a worker can't load it, the
        file is put back and every worker reloads the version in use, so that all serve the same data.
        """
        version = requested_version(body)
        handle, files = self._files(sid)
        document, previous = switch_document(files, oid, version)
        try:
            stored, _ = await self.publish(sid, "source", oid, document)
        except Exception as exc:
            if getattr(exc, "status", 500) < 500:
                raise  # refused before any worker was asked
            try:
                await handle.publish_source(oid)  # the file is back as it was: the workers that switched switch back
            except Exception:
                log.exception("service %s: source %s could not go back to version %s", sid, oid, previous)
            raise
        log.info("service %s: source %s now on data version %s (was %s)", sid, oid, version, previous)
        return {"id": oid, "version": version, "previousVersion": previous, "source": stored}

    async def unpublish(self, sid: str, kind: Kind, oid: str) -> None:
        """Take one source or resource out of the running service, then remove its file."""
        async with self.writes:
            handle, files = self._files(sid)
            path = files.check_removal(kind, oid)
            await (handle.remove_source(oid) if kind == "source" else handle.remove_resource(oid))
            atomic_remove(path)

    async def metrics(self) -> bytes:
        """Every service's metrics in Prometheus's text format, summed over its workers."""
        return await scrape(list(self.handles.values()))

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
        listener = self.config.administrator.listener
        self.admin_sockets.update([listener]).commit()
        # The services' server (hypercorn's machinery): a connection its client closes is closed at once.
        self.server = SocketServer(self.admin_app(self), [(listener, self.admin_sockets.sockets[listener.bind])])
        self.server.drain_grace = 0.0  # stopped with the administrator: no other server takes its clients over
        await self.server.start()
        log.info("admin API listening on %s", self.config.administrator.listener.bind)
        metrics = self.config.administrator.metrics_listener
        if metrics is not None:
            self.metrics_sockets.update([metrics]).commit()
            self.metrics_server = SocketServer(metrics_app(self.metrics), [(metrics, self.metrics_sockets.sockets[metrics.bind])])
            self.metrics_server.drain_grace = 0.0
            await self.metrics_server.start()
            log.info("metrics listening on %s (GET /metrics)", metrics.bind)

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
        if self.metrics_server is not None:
            await self.metrics_server.stop()
        self.admin_sockets.close()
        self.metrics_sockets.close()
        await self.authenticator.close()


def _configure_logging(config: ServerConfig, level: str | None) -> None:
    root = logging.getLogger()
    root.setLevel((level or config.administrator.logging.level).upper())
    if config.administrator.logging.file is not None:
        handler = logging.FileHandler(config.administrator.logging.file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)


def run_administrator(
    path: Path, *, admin_app: AdminAppFactory, log_level: str | None = None, zygotes: Mapping[str, ZygoteProcess] | None = None
) -> int:
    """``roadkit serve``: run until SIGINT or SIGTERM. ``zygotes``: the services' workers' zygotes, started already."""
    config = load_server(path)
    _configure_logging(config, log_level)

    async def main() -> None:
        admin = Administrator(config, admin_app=admin_app, log_level=log_level)
        for sid, zygote in (zygotes or {}).items():
            handle = admin.handles.get(sid)
            if isinstance(handle, ChildProcessService):
                handle.adopt(zygote)
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
