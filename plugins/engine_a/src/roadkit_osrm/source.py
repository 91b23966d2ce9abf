"""Source kind ``osrm``: OSRM in process through osrm-bindings, one dataset (one cost) per source."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import attrs

from roadkit.contract.native_osrm import NativeAnswer, NativeRequest, NativeSource
from roadkit.contract.sources import (
    ConfigurationError,
    EngineError,
    MatrixRequest,
    MatrixResponse,
    NearestRequest,
    NearestResponse,
    Progress,
    RoadkitError,
    RouteRequest,
    RouteResponse,
    Source,
    SourceConfig,
    SourceState,
    SourceUnavailable,
    VersionedKind,
    resolve,
)
from roadkit_osrm import mapping
from roadkit_osrm.engine_process import EngineProcess

log = logging.getLogger(__name__)

#: Native services whose engine work can last seconds within the limits (a match's candidates grow with
#: its radiuses; a table's and a trip's with their coordinates): they run in a child process, off the loop.
LONG_SERVICES = frozenset({"match", "table", "trip"})
#: A native route of more coordinates runs there too (measured on Monaco: 500 coordinates with steps
#: and annotations, 1.2 s and 11 MB of answer); fewer run in the worker, where a route takes milliseconds.
INLINE_MOST_COORDINATES = 25
#: A matrix runs in the worker while the source's matrices take less than this (a 100 x 100 Monaco table:
#: about 7 ms); once one took longer, the source's matrices run in the child process, where a 100 x 100
#: table on a network of a million edges (measured: 33 s) leaves the worker answering other requests.
INLINE_MATRIX_SECONDS = 0.25


@attrs.frozen
class OsrmStorage:
    """Where the dataset is: the ``.osrm`` base path, and whether it was built for CH or MLD.

    ``mmap`` (default true): the dataset's files are memory-mapped instead of read into each
    process, so the workers of a service share one copy (the page cache) instead of loading N.
    """

    file: Path
    algorithm: Literal["CH", "MLD"] = "CH"
    mmap: bool = True


@attrs.frozen
class OsrmCost:
    """The one cost an OSRM dataset computes."""

    profile: str
    optimization: str


@attrs.frozen
class OsrmPreparation:
    """How ``roadkit prepare`` builds the dataset: from ``osm`` with an OSRM Lua ``profile``.

    ``profile`` is a profile shipped with OSRM (``car``, ``foot``, ``bicycle``) or a path to a Lua
    file; ``weight`` overrides the profile's weight (``distance`` for shortest routes).
    """

    osm: Path
    profile: str = "car"
    weight: Literal["routability", "duration", "distance"] | None = None


@attrs.frozen
class OsrmOptions:
    """The kind-specific part of an ``osrm`` source file."""

    storage: OsrmStorage
    cost: OsrmCost
    preparation: OsrmPreparation | None = None
    max_nearest: int = 100


class OsrmSource(mapping.OsrmKind, Source, NativeSource):
    """OSRM through osrm-bindings. The binding holds the GIL: short calls run on the event loop, long
    ones in a child process (:mod:`roadkit_osrm.engine_process`)."""

    kind = "osrm"
    options_class = OsrmOptions
    versioned_keys: ClassVar[Mapping[str, VersionedKind]] = {"storage.file": "path"}
    options: OsrmOptions

    def __init__(self, config: SourceConfig, options: OsrmOptions, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self.engine: Any = None
        self.long_calls: EngineProcess | None = None
        self.long_matrices = False  # set once a matrix took longer than INLINE_MATRIX_SECONDS
        self._exclusions: dict[frozenset[str], bool] = {}

    @classmethod
    def parse_options(cls, config: SourceConfig) -> OsrmOptions:
        options: OsrmOptions = super().parse_options(config)
        storage = attrs.evolve(options.storage, file=resolve(config.path, options.storage.file))
        preparation = options.preparation
        if preparation is not None:
            profile = preparation.profile
            if profile.endswith(".lua"):
                profile = str(resolve(config.path, profile))
            preparation = attrs.evolve(preparation, osm=resolve(config.path, preparation.osm), profile=profile)
        if options.max_nearest < 1:
            raise ConfigurationError([f"{config.path}: max_nearest: expected a positive integer, got {options.max_nearest}"])
        return attrs.evolve(options, storage=storage, preparation=preparation)

    def threads(self) -> int:
        return 1

    def supported_bans(self, fields: Collection[str], most: int) -> Collection[frozenset[str]] | None:
        # The dataset excludes only the class sets its profile declared ``excludable``: asked, not guessed.
        engine = self.engine
        if engine is None:
            return None
        return mapping.ban_combinations(fields, most, lambda classes: self._excludes(engine, classes))

    def _excludes(self, engine: Any, classes: frozenset[str]) -> bool:
        """Whether the dataset excludes these classes together (one probe per set, remembered)."""
        known = self._exclusions.get(classes)
        if known is None:
            try:
                engine.Route(mapping.ban_probe(classes).parameters())
                known = True
            except RuntimeError as exc:
                known = mapping.EXCLUDE_UNSUPPORTED not in str(exc)
            self._exclusions[classes] = known
        return known

    @classmethod
    def data_paths(cls, config: SourceConfig, options: OsrmOptions) -> Sequence[Path]:
        from roadkit_osrm.prepare import dataset_files

        return dataset_files(options.storage.file, options.storage.algorithm)

    @classmethod
    def named_paths(cls, config: SourceConfig, options: OsrmOptions) -> Sequence[tuple[str, Path]]:
        named = list(super().named_paths(config, options))
        if options.preparation is not None and options.preparation.profile.endswith(".lua"):
            named.append(("preparation.profile", Path(options.preparation.profile)))  # a Lua script osrm-extract runs
        return named

    @classmethod
    def prepare(cls, config: SourceConfig, options: OsrmOptions, *, force: bool, progress: Progress) -> bool:
        from roadkit_osrm.prepare import build_dataset, dataset_current, dataset_ready

        storage, prep = options.storage, options.preparation
        if not force and dataset_ready(storage.file, storage.algorithm):
            # A dataset built from another profile (or weight) than the file's is built again.
            if prep is None or dataset_current(storage.file, storage.algorithm, prep.profile, prep.weight):
                return False
            progress.step(f"{storage.file} was built with another profile, weight or OSRM version: building it again")
        if prep is None:
            raise ConfigurationError([f"{config.path}: preparation: required to build the missing dataset {options.storage.file}"])
        build_dataset(
            prep.osm, options.storage.file, profile=prep.profile, algorithm=options.storage.algorithm, weight=prep.weight, progress=progress
        )
        return True

    async def connect(self) -> None:
        import osrm

        storage = self.options.storage
        settings: dict[str, Any] = {
            "storage_config": str(storage.file),
            "algorithm": storage.algorithm,
            "use_shared_memory": False,
            "use_mmap": storage.mmap,
            "max_results_nearest": self.options.max_nearest,
        }
        try:
            self.engine = await self.run_blocking(
                lambda: osrm.OSRM(**settings),
                bounded=False,  # loading a dataset is no request: the request time-out does not apply
            )
        except Exception as exc:
            self.fail(f"cannot open OSRM dataset {storage.file}: {exc}")
            raise
        if self.long_calls is not None:
            await self.long_calls.close()
        self.long_calls = EngineProcess(self.id, settings)
        self.state = SourceState.GREEN
        self.reason = ""

    async def disconnect(self) -> None:
        self.engine = None
        if self.long_calls is not None:
            long_calls, self.long_calls = self.long_calls, None
            await long_calls.close()
        await super().disconnect()

    def _call(self, engine: Any, method: str, params: Any, engine_error: Callable[[str, str], RoadkitError] = mapping.engine_error) -> Any:
        # The answer points into the engine's memory: callers keep ``engine`` alive while reading it.
        if engine is None:
            raise SourceUnavailable(f"source {self.id} is not connected")
        try:
            result = getattr(engine, method)(params)
        except RuntimeError as exc:
            error = engine_error(*mapping.split_error(str(exc)))
            if type(error) is EngineError:  # not the request's fault: the engine failed
                self.fail(f"OSRM error: {exc}")
            raise error from None
        if self.state is not SourceState.GREEN:
            self.state, self.reason = SourceState.GREEN, ""
        return result

    def _route(self, query: mapping.RouteQuery) -> RouteResponse:
        engine = self.engine
        return mapping.route_response(self._call(engine, "Route", query.parameters()), query)

    # osrm-bindings holds the GIL for a whole engine call (measured: the event loop stalls for the
    # call's length even with the call in a thread), so a thread gains nothing but the hand-off
    # (~15 % of a Monaco route request): requests run inline, with the same time-out (Source.run_inline).

    async def route(self, request: RouteRequest) -> RouteResponse:
        return self.run_inline(self._route, mapping.RouteQuery.of(request))

    def _nearest(self, query: mapping.NearestQuery) -> NearestResponse:
        engine = self.engine
        return mapping.nearest_response(self._call(engine, "Nearest", query.parameters()))

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        return self.run_inline(self._nearest, mapping.NearestQuery.of(request))

    def _matrix(self, query: mapping.TableQuery) -> MatrixResponse:
        engine = self.engine
        return mapping.matrix_response(self._call(engine, "Table", query.parameters(), query.error), query)

    async def matrix(self, request: MatrixRequest) -> MatrixResponse:
        query = mapping.TableQuery.of(request)
        long_calls = self.long_calls
        if self.long_matrices and long_calls is not None:
            return await long_calls.matrix(query, self.timeout)
        started = time.perf_counter()
        try:
            return self.run_inline(self._matrix, query)
        finally:
            if time.perf_counter() - started > INLINE_MATRIX_SECONDS:
                self.long_matrices = True

    def _native(self, request: NativeRequest) -> NativeAnswer:
        from roadkit_osrm.native.engine import answer

        engine = self.engine
        if engine is None:
            raise SourceUnavailable(f"source {self.id} is not connected")
        return answer(engine, request)

    async def native(self, request: NativeRequest) -> NativeAnswer:
        """osrm-routed's answer to a native request: computed in process, or in the engine's child process
        for the services whose work grows past what the limits bound (:mod:`roadkit_osrm.engine_process`)."""
        long_calls = self.long_calls
        long = request.service in LONG_SERVICES or len(request.params.get("coordinates", ())) > INLINE_MOST_COORDINATES
        # A request past the limits is refused at once, inline: no child process for a 400.
        if long and long_calls is not None and request.limits.exceeded(request.service, request.params) is None:
            return await long_calls.native(request, self.timeout)
        return self.run_inline(self._native, request)
