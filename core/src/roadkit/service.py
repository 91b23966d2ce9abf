"""A service: projections, sources and resources of one service file, and its health."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from roadkit.config.loader import read_resources, read_sources
from roadkit.config.models import ServiceConfig
from roadkit.errors import ConfigurationError, NotFound, RoadkitError
from roadkit.plugins import Plugins
from roadkit.projections import ProjectionRegistry
from roadkit.resources import Resource, build_resource
from roadkit.source import Source, SourceState

log = logging.getLogger(__name__)


class Service:
    """Everything one service file describes, loaded and connected.

    ``state`` goes ``init`` → ``loading`` → ``ready`` (or ``failed``) → ``stopped``. A service may
    have no source and no resource.
    """

    def __init__(self, config: ServiceConfig, plugins: Plugins, *, id: str = "main") -> None:
        self.id = id
        self.config = config
        self.plugins = plugins
        self.state = "init"
        self.projections = ProjectionRegistry()
        self.sources: dict[str, Source] = {}
        self.resources: dict[str, Resource] = {}
        self.units: dict[str, tuple[str, float]] = {}

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
        kinds = self.plugins.source_kinds()
        sources: dict[str, Source] = {}
        for config in configs:
            cls = kinds.get(config.type)
            if cls is None:
                log.warning(
                    "%s: type: no installed plugin provides source kind %r (installed: %s); source %r is unavailable",
                    config.path, config.type, ", ".join(sorted(kinds)) or "none", config.id,
                )
                continue
            if config.projection not in self.projections:
                problems.append(f"{config.path}: projection: unknown projection {config.projection!r} (known: {', '.join(self.projections.ids())})")
                continue
            try:
                sources[config.id] = cls.from_config(config, timeout=self.config.limits.engine_timeout)
            except ConfigurationError as exc:
                problems.extend(exc.problems)
        resources, resource_problems = read_resources(self.config.folders.resources)
        problems.extend(resource_problems)
        if problems:
            raise ConfigurationError(problems)
        self.sources = sources
        self._resource_configs = resources

    async def start(self) -> None:
        """Load the configuration, connect every source, then build the resources."""
        self.state = "loading"
        try:
            self.load()
            await asyncio.gather(*(self._connect(source) for source in self.sources.values()))
            available = {sid: s for sid, s in self.sources.items() if s.state is SourceState.GREEN}
            problems: list[str] = []
            resources: dict[str, Resource] = {}
            for config in self._resource_configs:
                resource, found = build_resource(config, available, self.projections)
                problems.extend(found)
                if resource is not None:
                    resources[resource.id] = resource
            if problems:
                raise ConfigurationError(problems)
            self.resources = resources
        except BaseException:
            self.state = "failed"
            await self.stop(final_state="failed")
            raise
        self.state = "ready"
        log.info(
            "service %s ready: %d source(s) (%d green), %d resource(s)",
            self.id, len(self.sources), sum(s.state is SourceState.GREEN for s in self.sources.values()), len(self.resources),
        )

    async def _connect(self, source: Source) -> None:
        for cost in source.costs():
            self.plugins.resolve_cost(source, cost)
        try:
            await source.connect()
        except Exception as exc:  # an engine that fails to load leaves the source red, not the service down
            reason = str(exc) or type(exc).__name__
            source.fail(reason)
            log.error("source %s (%s) failed to connect: %s", source.id, source.kind, reason)

    async def stop(self, *, final_state: str = "stopped") -> None:
        """Disconnect every source."""
        for source in self.sources.values():
            try:
                await source.disconnect()
            except Exception:
                log.exception("source %s failed to disconnect", source.id)
        self.state = final_state

    def resource(self, rid: str) -> Resource:
        """The resource with this id (400 naming the parameter when unknown)."""
        from roadkit.errors import ParameterInvalid

        try:
            return self.resources[rid]
        except KeyError:
            raise ParameterInvalid("resource", f"'{rid}' does not exist on this service") from None

    def health(self) -> dict[str, Any]:
        """``{id, state, sources: [...]}``: green with no red source, red when half or more are red."""
        sources = [s.health() for s in self.sources.values()]
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

    def projection(self, pid: str) -> dict[str, str]:
        """A projection of this service with its parameters (404 when unknown)."""
        try:
            projection = self.projections.get(pid)
        except RoadkitError:
            raise NotFound(f"Can't find projection {pid}") from None
        return {"id": projection.id, "parameters": projection.parameters}
