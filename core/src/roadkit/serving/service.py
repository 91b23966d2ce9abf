"""A service: projections, sources and resources of one service file, and its health."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from roadkit.config.loader import read_resources, read_sources
from roadkit.config.models import ResourceConfig, ServiceConfig, SourceConfig
from roadkit.errors import ConfigurationError, NotFound, ParameterInvalid, RoadkitError, SourceUnavailable
from roadkit.plugins import Plugins
from roadkit.routing.constraints import wanted_bans
from roadkit.routing.projections import ProjectionRegistry
from roadkit.routing.resources import Resource, build_resource
from roadkit.routing.source import Source, SourceContext, SourceState
from roadkit.routing.units import UnitRegistry
from roadkit.serving.metrics import time_engine
from roadkit.serving.reconnect import Backoff, Reconnection, keep_connecting
from roadkit.web.api import Api

log = logging.getLogger(__name__)


def served_apis(config: ServiceConfig, plugins: Plugins) -> list[Api]:
    """The installed APIs a service's configuration lists (the app refuses one that is not installed)."""
    available = plugins.apis()
    return [api for ref in config.apis if (api := available.get((ref.name, ref.version))) is not None]


def read_api_settings(config: ResourceConfig, apis: Iterable[Api]) -> tuple[dict[str, Any], list[str]]:
    """A resource's settings of each API that reads some (its ``[apis.<name>]`` table), and their problems."""
    settings: dict[str, Any] = {}
    problems: list[str] = []
    for api in apis:
        if api.settings_class is None:
            continue
        try:
            settings[api.name] = api.read_settings(config.apis.get(api.name, {}), config.path)
        except ConfigurationError as exc:
            problems.extend(exc.problems)
    return settings, problems


class Service:
    """Everything one service file describes, loaded and connected.

    ``state`` goes ``init`` → ``loading`` → ``ready`` (or ``failed``) → ``stopped``. A service may
    have no source and no resource.
    """

    def __init__(self, config: ServiceConfig, plugins: Plugins, *, id: str = "main", context: SourceContext | None = None) -> None:
        self.id = id
        #: What its sources learn of the process they run in (default: a process of its own, all cores).
        self.context = context or SourceContext()
        self.config = config
        self.plugins = plugins
        self.state = "init"
        self.projections = ProjectionRegistry()
        self.sources: dict[str, Source] = {}
        self.resources: dict[str, Resource] = {}
        self.units = UnitRegistry({})
        self._resource_configs: list[ResourceConfig] = []
        self._changes = asyncio.Lock()
        self._retiring: set[asyncio.Task[None]] = set()
        # Sources that failed to connect, tried again in the background (roadkit.serving.reconnect).
        self._reconnections: dict[str, Reconnection] = {}
        self._reconnecting: dict[str, asyncio.Task[None]] = {}

    @property
    def backoff(self) -> Backoff:
        """How long the service waits between connection attempts of a source (limits.connect_retry_*)."""
        limits = self.config.limits
        return Backoff(limits.connect_retry_initial, limits.connect_retry_max)

    def load(self) -> None:
        """Read projections, sources and resources; every configuration problem at once."""
        problems: list[str] = []
        try:
            self.projections = ProjectionRegistry.from_folder(self.config.folders.projections)
        except ConfigurationError as exc:
            problems.extend(exc.problems)
        self.units = self.plugins.cost_units()
        configs, source_problems = read_sources(self.config.folders.sources)
        problems.extend(source_problems)
        sources: dict[str, Source] = {}
        for config in configs:
            try:
                source = self._build_source(config)
            except ConfigurationError as exc:
                problems.extend(exc.problems)
                continue
            if source is not None:
                sources[config.id] = source
        resources, resource_problems = read_resources(self.config.folders.resources)
        problems.extend(resource_problems)
        if problems:
            raise ConfigurationError(problems)
        self.sources = sources
        self._resource_configs = resources

    def check_resources(self) -> list[str]:
        """Every problem building the resources would raise at start, found without connecting an engine.

        Each resource is built against every loaded source as if it had connected (``roadkit check``);
        what only a connected engine can tell (which bans a dataset applies) is left to the start.
        """
        problems: list[str] = []
        for config in self._resource_configs:
            problems.extend(self._build_resource(config, self.sources)[1])
        return problems

    def _build_resource(self, config: ResourceConfig, sources: Mapping[str, Source]) -> tuple[Resource | None, list[str]]:
        """A resource on the available ``sources``, with the settings of the APIs it is served by; its problems."""
        resource, problems = build_resource(config, sources, self.projections, self.units)
        settings, api_problems = read_api_settings(config, served_apis(self.config, self.plugins))
        if resource is not None:
            resource.api_settings = settings
        return resource, problems + api_problems

    def _build_source(self, config: SourceConfig) -> Source | None:
        """A source (not connected) from its file; None, with a warning, when no plugin provides its kind."""
        kinds = self.plugins.source_kinds()
        cls = kinds.get(config.type)
        if cls is None:
            log.warning(
                "%s: type: no installed plugin provides source kind %r (installed: %s); source %r is unavailable",
                config.path,
                config.type,
                ", ".join(sorted(kinds)) or "none",
                config.id,
            )
            return None
        if config.projection not in self.projections:
            raise ConfigurationError(
                [f"{config.path}: projection: unknown projection {config.projection!r} (known: {', '.join(self.projections.ids())})"]
            )
        source = cls.from_config(config, timeout=self.config.limits.engine_timeout, context=self.context)
        time_engine(source, self.id)
        return source

    async def start(self) -> None:
        """Load the configuration, connect every source, then build the resources."""
        self.state = "loading"
        try:
            # Held until the resources are built: a source reconnecting meanwhile waits to rebuild its own.
            async with self._changes:
                self.load()
                await asyncio.gather(*(self._connect(source) for source in self.sources.values()))
                available = {sid: s for sid, s in self.sources.items() if s.state is SourceState.GREEN}
                await self._learn_bans(self._resource_configs, available)
                problems: list[str] = []
                resources: dict[str, Resource] = {}
                for config in self._resource_configs:
                    resource, found = self._build_resource(config, available)
                    problems.extend(found)
                    if resource is not None:
                        resources[resource.id] = resource
                if problems:
                    raise ConfigurationError(problems)
                self.resources = resources
                self.state = "ready"
        except BaseException:
            self.state = "failed"
            await self.stop(final_state="failed")
            raise
        log.info(
            "service %s ready: %d source(s) (%d green), %d resource(s)",
            self.id,
            len(self.sources),
            sum(s.state is SourceState.GREEN for s in self.sources.values()),
            len(self.resources),
        )

    async def _connect(self, source: Source) -> None:
        """Connect a source; one that fails is red and tried again in the background."""
        await self._attempt(source)
        if source.state is not SourceState.GREEN:
            self._reconnect_later(source)

    async def _attempt(self, source: Source) -> None:
        before = source.reason
        try:
            # Once per connection: the engine reads these settings (Source.setting), a plugin's override included.
            source.keep_cost_settings({cost: self.plugins.resolve_cost(source, cost) for cost in source.costs()})
            await source.connect()
        except Exception as exc:  # an engine that fails to load leaves the source red, not the service down
            # The source's own reason when it gave a new one (it knows best), else the exception's.
            own = source.reason if source.reason != before else ""
            source.fail(own or str(exc) or type(exc).__name__)
        else:
            if source.state is SourceState.GREEN:
                source.reason = ""
            else:
                source.fail(source.reason or "the engine did not connect")

    def _reconnect_later(self, source: Source) -> None:
        previous = self._reconnecting.pop(source.id, None)
        if previous is not None:
            previous.cancel()
        state = Reconnection(attempts=1, reason=source.reason)
        self._reconnections[source.id] = state
        log.error(
            "source %s (%s) failed to connect: %s; trying again in %g s", source.id, source.kind, source.reason, self.backoff.delay(1)
        )

        def still_wanted(candidate: Source) -> bool:
            wanted = self.sources.get(candidate.id) is candidate and self.state in ("loading", "ready")
            if not wanted and self._reconnections.get(candidate.id) is state:
                del self._reconnections[candidate.id]
            return wanted

        task = asyncio.create_task(keep_connecting(source, state, self.backoff, self._attempt, still_wanted, self._reconnected))
        self._reconnecting[source.id] = task
        task.add_done_callback(lambda done: self._reconnecting.pop(source.id, None) if self._reconnecting.get(source.id) is done else None)

    async def _reconnected(self, source: Source) -> None:
        """A source connected after failing: its resources are rebuilt with it (created when they had no source)."""
        async with self._changes:
            self._reconnections.pop(source.id, None)
            if self.sources.get(source.id) is source and self.state == "ready":
                await self._rebuild_resources(lambda c: source.id in c.sources)

    async def stop(self, *, final_state: str = "stopped") -> None:
        """Disconnect every source (also those replaced or removed and still finishing requests)."""
        reconnecting = list(self._reconnecting.values())
        for pending in reconnecting:
            pending.cancel()
        if reconnecting:
            await asyncio.gather(*reconnecting, return_exceptions=True)
        self._reconnections.clear()
        for task in list(self._retiring):
            task.cancel()
        if self._retiring:
            await asyncio.gather(*self._retiring, return_exceptions=True)
        for source in self.sources.values():
            try:
                await source.disconnect()
            except Exception:
                log.exception("source %s failed to disconnect", source.id)
        self.state = final_state

    def resource(self, rid: str) -> Resource:
        """The resource with this id (400 naming the parameter when unknown)."""
        try:
            return self.resources[rid]
        except KeyError:
            shown = rid if len(rid) <= 80 else f"{rid[:80]}..."  # a client's text, not repeated at any length
            raise ParameterInvalid("resource", f"it does not exist on this service (got '{shown}')") from None  # Road2's wording

    def extend_capabilities(self, capabilities: dict[str, Any]) -> None:
        """Let every plugin add to a GetCapabilities document of this service (the ``roadkit_capabilities`` hook)."""
        self.plugins.extend_capabilities(self, capabilities)

    def describe_apis(self) -> dict[str, Any]:
        """What the served APIs add to the admin API's description of this service (``ogcApis``...)."""
        described: dict[str, Any] = {}
        for api in served_apis(self.config, self.plugins):
            if api.describe is not None:
                described.update(api.describe(self))
        return described

    def health(self) -> dict[str, Any]:
        """``{id, state, sources: [...]}``: green with no red source, red when half or more are red."""
        sources = [self._source_health(s) for s in self.sources.values()]
        red = sum(1 for s in self.sources.values() if s.state is SourceState.RED)
        if self.state != "ready":
            state = "red" if self.state in ("failed", "stopped") else "init"
        elif red == 0:
            state = "green"
        elif red * 2 >= len(sources):
            state = "red"
        else:
            state = "orange"
        return {"id": self.id, "state": state, "lifecycle": self.state, "sources": sources}

    def _source_health(self, source: Source) -> dict[str, Any]:
        entry = source.health()
        reconnection = self._reconnections.get(source.id)
        if reconnection is not None and source.state is not SourceState.GREEN:
            entry["connection"] = reconnection.health()
        return entry

    def projection(self, pid: str) -> dict[str, str]:
        """A projection of this service with its parameters (404 when unknown)."""
        try:
            projection = self.projections.get(pid)
        except RoadkitError:
            raise NotFound(f"Can't find projection {pid if len(pid) <= 128 else pid[:128] + '...'}") from None
        return {"id": projection.id, "parameters": projection.parameters}

    # Publication: the admin API has validated and written the file; the service applies it without a
    # restart. Requests read ``self.sources`` / ``self.resources`` once, so swapping a dict entry is
    # atomic for them; an engine that is replaced or removed is disconnected only after its time-out,
    # the longest a request already running on it may take.

    async def publish_source(self, sid: str) -> None:
        """(Re)load source ``sid`` from its file: connect it first, then swap it in and rebuild its resources."""
        async with self._changes:
            configs, problems = read_sources(self.config.folders.sources)
            config = next((c for c in configs if c.id == sid), None)
            if config is None:
                raise ConfigurationError(problems or [f"source {sid!r}: no file of the service's sources folders defines it"])
            source = self._build_source(config)
            if source is None:
                raise ConfigurationError([f"{config.path}: type: no installed plugin provides source kind {config.type!r}"])
            old = self.sources.get(sid)
            if old is not None and old.data_version != source.data_version:
                await self._switch_version(old, source)
            else:
                await self._connect(source)
            self.sources[sid] = source
            await self._rebuild_resources(lambda c: sid in c.sources)
            if old is not None:
                self._retire(old)
            log.info("service %s: source %s published (%s)", self.id, sid, source.state)

    async def _switch_version(self, old: Source, new: Source) -> None:
        """Connect ``new`` (another data version of ``old``); one that does not turn green is refused and ``old`` stays."""
        await self._attempt(new)
        if new.state is not SourceState.GREEN:
            reason = new.reason
            try:
                await new.disconnect()
            except Exception:
                log.exception("source %s failed to disconnect", new.id)
            raise SourceUnavailable(
                f"source {new.id}: version {new.data_version} can't be loaded ({reason}); version {old.data_version} is still in use"
            )
        log.info("service %s: source %s switches from version %s to %s", self.id, new.id, old.data_version, new.data_version)

    async def remove_source(self, sid: str) -> None:
        """Take source ``sid`` out: its resources are rebuilt without it, then it is disconnected."""
        async with self._changes:
            old = self.sources.pop(sid, None)
            await self._rebuild_resources(lambda c: sid in c.sources)
            if old is not None:
                self._retire(old)
            log.info("service %s: source %s removed", self.id, sid)

    async def publish_resource(self, rid: str) -> None:
        """(Re)load resource ``rid`` from its file and serve it from the next request on."""
        async with self._changes:
            configs, problems = read_resources(self.config.folders.resources)
            config = next((c for c in configs if c.id == rid), None)
            if config is None:
                raise ConfigurationError(problems or [f"resource {rid!r}: no file of the service's resources folders defines it"])
            previous = self._resource_configs
            self._resource_configs = [c for c in previous if c.id != rid] + [config]
            try:
                await self._rebuild_resources(lambda c: c.id == rid, strict=True)
            except ConfigurationError:
                self._resource_configs = previous  # the resource served before (if any) stays as it was
                raise
            log.info("service %s: resource %s published (%s)", self.id, rid, "served" if rid in self.resources else "no available source")

    async def remove_resource(self, rid: str) -> None:
        """Stop serving resource ``rid``: the next request naming it is refused as unknown."""
        async with self._changes:
            self._resource_configs = [c for c in self._resource_configs if c.id != rid]
            self.resources.pop(rid, None)
            log.info("service %s: resource %s removed", self.id, rid)

    async def _learn_bans(self, configs: Iterable[ResourceConfig], available: Mapping[str, Source]) -> None:
        """What each available source bans together, for the resources about to be built (asked asynchronously)."""
        for config in configs:
            for sid in config.sources:
                source = available.get(sid)
                if source is None:
                    continue
                for fields, most in wanted_bans(config, source):
                    try:
                        await source.learn_bans(fields, most)
                    except Exception:  # not learnt: supported_bans answers what it knows, requests are still checked by the engine
                        log.exception("source %s: can't learn which values it bans together", source.id)

    async def _rebuild_resources(self, which: Callable[[ResourceConfig], bool], *, strict: bool = False) -> None:
        available = {sid: s for sid, s in self.sources.items() if s.state is SourceState.GREEN}
        configs = [config for config in self._resource_configs if which(config)]
        await self._learn_bans(configs, available)
        for config in configs:
            resource, problems = self._build_resource(config, available)
            if problems:
                if strict:
                    raise ConfigurationError(problems)
                log.error("service %s: resource %s can't be rebuilt, kept out:\n%s", self.id, config.id, "\n".join(problems))
            if resource is None:
                self.resources.pop(config.id, None)
            else:
                self.resources[config.id] = resource

    def _retire(self, source: Source) -> None:
        async def later() -> None:
            try:
                await asyncio.sleep(source.timeout + 1.0)
            finally:
                try:
                    await source.disconnect()
                except Exception:
                    log.exception("source %s failed to disconnect", source.id)

        task = asyncio.create_task(later())
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)
