"""Source kind ``valhalla``: Valhalla in process through pyvalhalla's ``Actor``, several costs per source.

Valhalla's Actor is not thread-safe (two threads sharing one corrupt each other's answers), but it
releases the GIL. So a source creates its Actors once, when it connects: one per engine thread,
kept in a pool that every request borrows from and gives back. No request ever creates an Actor.
"""

from __future__ import annotations

import asyncio
import logging
import queue
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson

from roadkit.contract import EngineError, Progress, SourceConfig, SourceState, SourceUnavailable
from roadkit_valhalla.base import ResponseTooLarge, ValhallaBase, engine_error, operation_of, too_large
from roadkit_valhalla.options import ValhallaOptions, parse_options

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["ResponseTooLarge", "ValhallaSource", "engine_error"]


def isochrone_limits(settings: Any) -> dict[str, float]:
    """The largest isochrone of a valhalla.json (``service_limits.isochrone``): seconds for time, meters for distance."""
    limits = settings.get("service_limits", {}).get("isochrone", {}) if isinstance(settings, dict) else {}
    found: dict[str, float] = {}
    for cost_type, key, factor in (("time", "max_time_contour", 60.0), ("distance", "max_distance_contour", 1000.0)):
        value = limits.get(key) if isinstance(limits, dict) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            found[cost_type] = float(value) * factor  # minutes, kilometers
    return found


class ValhallaSource(ValhallaBase):
    """Valhalla tiles served by a pool of Actors created when the source connects."""

    kind = "valhalla"
    options_class = ValhallaOptions
    options: ValhallaOptions

    def __init__(self, config: SourceConfig, options: ValhallaOptions, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self._actors: queue.SimpleQueue[Any] | None = None
        self._isochrone_limits: dict[str, float] = {}

    @classmethod
    def parse_options(cls, config: SourceConfig) -> ValhallaOptions:
        cls.check_projection(config)
        return parse_options(config)

    def threads(self) -> int:
        return self.options.threads

    @classmethod
    def data_paths(cls, config: SourceConfig, options: ValhallaOptions) -> Sequence[Path]:
        return [options.storage.config, options.storage.tar or options.tile_dir]

    @classmethod
    def prepare(cls, config: SourceConfig, options: ValhallaOptions, *, force: bool, progress: Progress) -> bool:
        from roadkit_valhalla.prepare import prepare_source

        return prepare_source(config, options, force=force, progress=progress)

    def _create_actors(self) -> queue.SimpleQueue[Any]:
        import valhalla

        from roadkit_valhalla.prepare import has_tiles

        path = self.options.storage.config
        try:
            settings = orjson.loads(path.read_bytes())
            mjolnir = settings["mjolnir"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EngineError(f"cannot read the Valhalla configuration {path}: {exc}") from None
        self._isochrone_limits = isochrone_limits(settings)
        tar = Path(mjolnir["tile_extract"]) if mjolnir.get("tile_extract") else None
        if not has_tiles(Path(mjolnir.get("tile_dir") or "."), tar):
            raise EngineError(f"the Valhalla configuration {path} points to no tiles (run 'roadkit prepare')")
        actors: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for _ in range(self.threads()):
            actors.put(valhalla.Actor(str(path)))
        return actors

    async def connect(self) -> None:
        try:
            # Loading is not a request: the request time-out does not bound it.
            self._actors = await asyncio.get_running_loop().run_in_executor(self.executor(), self._create_actors)
        except Exception as exc:
            self._actors = None
            self.fail(f"cannot load Valhalla from {self.options.storage.config}: {exc}")
            raise
        self.state = SourceState.GREEN
        self.reason = ""

    async def disconnect(self) -> None:
        self._actors = None
        await super().disconnect()

    def isochrone_limit(self, cost_type: str) -> float | None:
        # Read from the valhalla.json the Actors load (service_limits.isochrone), at connection.
        return self._isochrone_limits.get(cost_type)

    def _call(self, action: str, body: dict[str, Any]) -> Any:
        """One Actor call on a pooled Actor; the answer parsed, after the response-size check."""
        actors = self._actors
        if actors is None:
            raise SourceUnavailable(f"source {self.id} is not connected")
        request = orjson.dumps(body).decode()
        actor = actors.get()
        try:
            answer: str = getattr(actor, action)(request)
        except RuntimeError as exc:
            raise engine_error(str(exc).strip() or type(exc).__name__, operation_of(action)) from None
        finally:
            actors.put(actor)
        limit = self.options.limits.max_response_bytes
        if len(answer) > limit // 4 and len(answer.encode()) > limit:
            raise too_large(len(answer.encode()), limit, self.id)
        return orjson.loads(answer)

    def _run(self, action: str, body: dict[str, Any], read: Callable[[Any], Any]) -> Any:
        return read(self._call(action, body))

    async def ask(self, action: str, body: dict[str, Any], read: Callable[[Any], T]) -> T:
        result: T = await self.run_blocking(self._run, action, body, read)
        return result
