"""Source kind ``valhalla``: Valhalla in process through pyvalhalla's ``Actor``, several costs per source.

Valhalla's Actor is not thread-safe (two threads sharing one corrupt each other's answers), but it
releases the GIL. So a source creates its Actors once, when it connects: one per engine thread,
each thread owning its Actor (:mod:`roadkit_valhalla.engine_threads`) and taking the requests'
calls from one queue. No request ever creates an Actor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import orjson

from roadkit.contract.sources import EngineError, EngineTimeout, Progress, SourceConfig, SourceState, SourceUnavailable, VersionedKind
from roadkit_valhalla.base import ResponseTooLarge, ValhallaBase, engine_error, operation_of, too_large
from roadkit_valhalla.engine_threads import Batching, EngineThreads, InlineEngine, current_handle
from roadkit_valhalla.options import ValhallaOptions, parse_options

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["ResponseTooLarge", "ValhallaSource", "engine_error"]

#: The Actor's method of a Valhalla action whose name differs (the HTTP path's).
_ACTOR_METHODS = {"sources_to_targets": "matrix"}


def isochrone_limits(settings: Any) -> dict[str, float]:
    """The largest isochrone of a valhalla.json (``service_limits.isochrone``): seconds for time, meters for distance."""
    limits = settings.get("service_limits", {}).get("isochrone", {}) if isinstance(settings, dict) else {}
    found: dict[str, float] = {}
    for cost_type, key, factor in (("time", "max_time_contour", 60.0), ("distance", "max_distance_contour", 1000.0)):
        value = limits.get(key) if isinstance(limits, dict) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            found[cost_type] = float(value) * factor  # minutes, kilometers
    return found


def least_max_locations(settings: Any, costings: Iterable[str]) -> int | None:
    """The most locations a route of every one of ``costings`` takes (``service_limits.<costing>.max_locations``).

    None when the valhalla.json gives none of them (Valhalla's defaults then apply: it refuses beyond them).
    """
    limits = settings.get("service_limits") if isinstance(settings, dict) else None
    found: list[int] = []
    for costing in costings:
        of_costing = limits.get(costing) if isinstance(limits, dict) else None
        value = of_costing.get("max_locations") if isinstance(of_costing, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            found.append(value)
    return min(found) if found else None


def small_cache(mjolnir: dict[str, Any], tar: Path) -> None:
    """A tile cache sized to the memory-mapped extract, instead of Valhalla's default flat one.

    Tiles read from the extract point into its shared mapping, so the cache only indexes them; the
    flat cache's index and a 1 GB cache's reserve cost every Actor about 8 MiB of its own on any
    network. The simple cache bounded by twice the extract's size (it counts a tile at its size in
    the extract) holds every tile, as the default did.
    """
    try:
        size = tar.stat().st_size
    except OSError:
        return  # Valhalla names the missing extract itself
    limit = max(2 * size, 16 << 20)
    configured = mjolnir.get("max_cache_size")
    if not isinstance(configured, int) or configured > limit:
        mjolnir["max_cache_size"] = limit
    mjolnir["use_simple_mem_cache"] = True
    mjolnir["use_lru_mem_cache"] = False


class ValhallaSource(ValhallaBase):
    """Valhalla tiles served by engine threads, one Actor each, created when the source connects."""

    kind = "valhalla"
    options_class = ValhallaOptions
    versioned_keys: ClassVar[Mapping[str, VersionedKind]] = {"storage.config": "path", "storage.dir": "path", "storage.tar": "path"}
    options: ValhallaOptions

    def __init__(self, config: SourceConfig, options: ValhallaOptions, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self._engine: EngineThreads | InlineEngine | None = None
        self._isochrone_limits: dict[str, float] = {}

    @classmethod
    def parse_options(cls, config: SourceConfig) -> ValhallaOptions:
        cls.check_projection(config)
        return parse_options(config)

    def threads(self) -> int:
        """The engine threads: ``limits.threads``, else this process's share of the cores."""
        return self.options.limits.threads or self.context.cores

    @classmethod
    def data_paths(cls, config: SourceConfig, options: ValhallaOptions) -> Sequence[Path]:
        return [options.storage.config, options.storage.tar or options.tile_dir]

    @classmethod
    def prepare(cls, config: SourceConfig, options: ValhallaOptions, *, force: bool, progress: Progress) -> bool:
        from roadkit_valhalla.prepare import prepare_source

        return prepare_source(config, options, force=force, progress=progress)

    def _create_actors(self) -> list[Any]:
        import valhalla

        from roadkit_valhalla.prepare import has_tiles

        path = self.options.storage.config
        try:
            settings = orjson.loads(path.read_bytes())
            mjolnir = settings["mjolnir"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EngineError(f"cannot read the Valhalla configuration {path}: {exc}") from None
        self._isochrone_limits = isochrone_limits(settings)
        self.max_locations = least_max_locations(settings, {cost.costing for cost in self.valhalla_costs})
        tar = Path(mjolnir["tile_extract"]) if mjolnir.get("tile_extract") else None
        if not has_tiles(Path(mjolnir.get("tile_dir") or "."), tar):
            raise EngineError(f"the Valhalla configuration {path} points to no tiles (run 'roadkit prepare')")
        # A banned way type is a hard ban: Valhalla applies its exclude_* options only when this is set.
        limits = settings.setdefault("service_limits", {})
        if isinstance(limits, dict):
            limits["allow_hard_exclusions"] = True
        if tar is not None:
            small_cache(mjolnir, tar)
        return [valhalla.Actor(settings) for _ in range(self.threads())]

    async def connect(self) -> None:
        try:
            # Loading is not a request: the request time-out does not bound it.
            actors = await asyncio.get_running_loop().run_in_executor(self.executor(), self._create_actors)
        except Exception as exc:
            self.fail(f"cannot load Valhalla from {self.options.storage.config}: {exc}")
            raise
        if self._engine is not None:
            self._engine.close()
        limits = self.options.limits
        batching = Batching(limits.batch, limits.batch_delay_ms / 1000.0)
        if limits.engine_calls == "inline":
            self._engine = InlineEngine(
                actors[0], batching, self.context.connection_waiting
            )  # parse_options: inline only with limits.threads = 1
        else:
            self._engine = EngineThreads(actors, f"valhalla-{self.id}", batching)
        self.state = SourceState.GREEN
        self.reason = ""

    async def disconnect(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()  # the calls under way finish on their Actors; no new one is taken
        await super().disconnect()

    def isochrone_limit(self, cost_type: str) -> float | None:
        # Read from the valhalla.json the Actors load (service_limits.isochrone), at connection.
        return self._isochrone_limits.get(cost_type)

    def _call(self, action: str, body: dict[str, Any]) -> str:
        """One call on the engine thread's Actor; the answer's text, after the response-size check."""
        request = orjson.dumps(body).decode()
        try:
            answer: str = getattr(current_handle(), _ACTOR_METHODS.get(action, action))(request)
        except RuntimeError as exc:
            raise engine_error(str(exc).strip() or type(exc).__name__, operation_of(action)) from None
        limit = self.options.limits.max_response_bytes
        if len(answer) > limit // 4 and len(answer.encode()) > limit:
            raise too_large(len(answer.encode()), limit, self.id)
        return answer

    async def ask(
        self, action: str, body: dict[str, Any], read: Callable[[Any], T], read_text: Callable[[str], T | None] | None = None
    ) -> T:
        engine = self._engine
        if engine is None or engine.closed:
            raise SourceUnavailable(f"source {self.id} is not connected")
        try:
            async with asyncio.timeout(self.timeout):
                answer = await engine.run(self._call, action, body)
        except TimeoutError:
            raise EngineTimeout(f"The engine of source {self.id} did not answer within {self.timeout:g} s") from None
        # Read here, on the event loop, not on the engine: a batch's answers are read one after the other.
        if read_text is not None and (result := read_text(answer)) is not None:
            return result
        return read(orjson.loads(answer))
