"""The kind-specific keys of a ``valhalla`` source file, and how one cost resolves to a Valhalla costing.

A source file (TOML, or Road2's JSON) holds ``storage`` (the ``valhalla.json`` the Actor loads, the
tile folder), ``costs`` (profile + optimization and/or costType → Valhalla costing with options),
``limits`` (engine threads, maximum response size, nearest search radius) and ``preparation``
(the ``.osm.pbf`` and GTFS feeds ``roadkit prepare`` builds the tiles from). A ``valhalla-http``
source file has ``http`` (the valhalla_service servers) instead of ``storage`` and ``preparation``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import attrs

from roadkit.contract.sources import ConfigurationError, HttpSettings, SourceConfig, resolve, structure

COSTINGS = frozenset({"auto", "bicycle", "bus", "taxi", "truck", "motor_scooter", "motorcycle", "pedestrian", "multimodal", "bikeshare"})
WALKING_COSTINGS = frozenset({"pedestrian", "multimodal"})
DEFAULT_WALKING_SPEED = 4.0  # km/h: Road2's default since 2.2.9 (Valhalla's own is 5.1)


@attrs.frozen
class ValhallaStorage:
    """Where the engine data is: the ``valhalla.json`` the Actor loads, the tile folder, an optional tar.

    Only ``config`` is read when the source connects; ``dir`` (default: ``tiles`` next to the
    configuration) and ``tar`` say where ``roadkit prepare`` writes the tiles.
    """

    config: Path
    dir: Path | None = None
    tar: Path | None = None


@attrs.frozen
class ValhallaCost:
    """One cost: a profile with an optimization (routes) and/or a cost type (isochrones).

    ``options`` is Valhalla's ``costing_options`` object (``{auto = {shortest = true}}``);
    ``walking_speed`` (km/h) applies to walking costings and defaults to 4 km/h.
    """

    profile: str
    costing: str
    optimization: str | None = None
    cost_type: Literal["time", "distance"] | None = None
    options: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    walking_speed: float | None = None

    def costing_options(self) -> dict[str, dict[str, Any]]:
        """The ``costing_options`` sent with every request of this cost (a fresh copy)."""
        options = {name: dict(values) for name, values in self.options.items()}
        if self.costing in WALKING_COSTINGS:
            speed = self.walking_speed if self.walking_speed is not None else DEFAULT_WALKING_SPEED
            options.setdefault("pedestrian", {}).setdefault("walking_speed", speed)
        return options


#: How a ``valhalla`` source calls its Actors (``limits.engine_calls``).
ENGINE_CALLS = ("threads", "inline")


@attrs.frozen
class ValhallaLimits:
    """Request-time limits of the source.

    ``threads``: engine threads, each with its own Actor (default: the usable cores over the
    service's worker processes, at least 1: ``Source.context.cores``);
    ``engine_calls``: ``"threads"`` (the default: the calls run on the engine threads) or
    ``"inline"`` (with ``threads = 1``: the one Actor called on the event loop's thread, in arrival
    order, no thread hand-off; the worker's other requests wait for a call under way);
    ``batch``: under load, the most waiting calls an engine runs back to back before handing their
    answers back together (1: none), and ``batch_delay_ms`` the most, about, that an answer waits for the
    rest of its batch (:class:`roadkit_valhalla.engine_threads.Batching`);
    ``max_response_bytes``: the largest engine answer accepted (Road2's ``maxBuffer``);
    ``nearest_radius``: meters around the point searched by ``nearest``;
    ``max_locations`` (``valhalla-http`` only): the most locations a route takes on the servers (the
    lowest ``service_limits.<costing>.max_locations`` of the source's costings in their valhalla.json),
    stated and applied by the native OSRM API; the in-process kind reads it from its valhalla.json.
    """

    threads: int | None = None
    engine_calls: str = "threads"
    batch: int = 8
    batch_delay_ms: float = 50.0
    max_response_bytes: int = 5_000_000
    nearest_radius: int = 200
    max_locations: int | None = None


@attrs.frozen
class ValhallaPreparation:
    """How ``roadkit prepare`` builds the tiles: from ``osm``, with the GTFS feeds under ``gtfs``.

    ``gtfs`` is a folder holding one sub-folder per (unzipped) feed. The contour limits go into
    the generated ``valhalla.json`` (minutes and kilometers).
    """

    osm: Path
    gtfs: Path | None = None
    max_time_contour: int = 600
    max_distance_contour: int = 1000


@attrs.frozen
class ValhallaOptions:
    """The kind-specific part of a ``valhalla`` source file."""

    storage: ValhallaStorage
    costs: tuple[ValhallaCost, ...]
    limits: ValhallaLimits = ValhallaLimits()
    preparation: ValhallaPreparation | None = None

    @property
    def tile_dir(self) -> Path:
        return self.storage.dir or self.storage.config.parent / "tiles"


def _from_road2(data: dict[str, Any]) -> dict[str, Any]:
    """Road2's spelling (``costType``, costing ``auto_shorter``) in this plugin's terms."""
    data = dict(data)
    costs = data.get("costs")
    if isinstance(costs, list):
        converted = []
        for cost in costs:
            if isinstance(cost, dict):
                cost = dict(cost)
                if "costType" in cost:
                    cost["cost_type"] = cost.pop("costType")
                if cost.get("costing") == "auto_shorter":
                    cost["costing"] = "auto"
                    cost.setdefault("options", {}).setdefault("auto", {})["shortest"] = True
            converted.append(cost)
        data["costs"] = converted
    return data


def _check_costs(path: Path, costs: tuple[ValhallaCost, ...]) -> list[str]:
    problems: list[str] = []
    if not costs:
        problems.append(f"{path}: costs: expected at least one cost")
    routes: dict[tuple[str, str], int] = {}
    isochrones: dict[tuple[str, str], int] = {}
    for i, cost in enumerate(costs):
        where = f"{path}: costs[{i}]"
        if cost.costing not in COSTINGS:
            problems.append(f"{where}.costing: expected one of {', '.join(sorted(COSTINGS))}, got {cost.costing!r}")
        if cost.optimization is None and cost.cost_type is None:
            problems.append(f"{where}: expected an optimization (routes) or a cost_type (isochrones), got neither")
        if cost.walking_speed is not None and not 0.5 <= cost.walking_speed <= 25:
            problems.append(f"{where}.walking_speed: expected km/h between 0.5 and 25, got {cost.walking_speed}")
        for name, values in cost.options.items():
            if not isinstance(values, dict):
                problems.append(f"{where}.options.{name}: expected a table of costing options, got {values!r}")
        for key, index, label in ((cost.optimization, routes, "optimization"), (cost.cost_type, isochrones, "cost_type")):
            if key is None:
                continue
            if (cost.profile, key) in index:
                problems.append(f"{where}: profile {cost.profile!r} with {label} {key!r} is already costs[{index[(cost.profile, key)]}]")
            index.setdefault((cost.profile, key), i)
    return problems


def _check_limits(path: Path, limits: ValhallaLimits) -> list[str]:
    problems: list[str] = []
    if limits.threads is not None and limits.threads < 1:
        problems.append(f"{path}: limits.threads: expected a positive integer, got {limits.threads}")
    if limits.engine_calls not in ENGINE_CALLS:
        problems.append(f"{path}: limits.engine_calls: expected one of {', '.join(map(repr, ENGINE_CALLS))}, got {limits.engine_calls!r}")
    if limits.batch < 1:
        problems.append(f"{path}: limits.batch: expected a positive integer (1: no batches), got {limits.batch}")
    if not 0 <= limits.batch_delay_ms <= 60_000:
        problems.append(f"{path}: limits.batch_delay_ms: expected milliseconds from 0 to 60000, got {limits.batch_delay_ms}")
    if limits.max_response_bytes < 1024:
        problems.append(f"{path}: limits.max_response_bytes: expected at least 1024 bytes, got {limits.max_response_bytes}")
    if limits.nearest_radius < 0:
        problems.append(f"{path}: limits.nearest_radius: expected meters >= 0, got {limits.nearest_radius}")
    if limits.max_locations is not None and limits.max_locations < 2:
        problems.append(f"{path}: limits.max_locations: expected an integer >= 2 (a route's locations), got {limits.max_locations}")
    return problems


def _check(path: Path, options: ValhallaOptions) -> list[str]:
    problems = _check_costs(path, options.costs) + _check_limits(path, options.limits)
    prep = options.preparation
    if prep is not None and (prep.max_time_contour < 1 or prep.max_distance_contour < 1):
        problems.append(f"{path}: preparation: expected positive max_time_contour and max_distance_contour")
    return problems


def parse_options(config: SourceConfig) -> ValhallaOptions:
    """The options of a ``valhalla`` source, paths resolved against its file; problems name file and key."""
    options = structure(_from_road2(config.options), ValhallaOptions, config.path)
    problems = _check(config.path, options)
    if options.limits.max_locations is not None:
        problems.append(
            f"{config.path}: limits.max_locations: only for valhalla-http sources; this kind reads it from valhalla.json; remove it"
        )
    if options.limits.engine_calls == "inline" and options.limits.threads != 1:
        problems.append(
            f'{config.path}: limits.engine_calls: "inline" calls one Actor on the event loop\'s thread and needs limits.threads = 1,'
            f" got {'no limits.threads (a share of the cores)' if options.limits.threads is None else options.limits.threads}"
        )
    if problems:
        raise ConfigurationError(problems)
    storage = options.storage
    storage = ValhallaStorage(
        config=resolve(config.path, storage.config),
        dir=resolve(config.path, storage.dir) if storage.dir else None,
        tar=resolve(config.path, storage.tar) if storage.tar else None,
    )
    prep = options.preparation
    if prep is not None:
        prep = attrs.evolve(prep, osm=resolve(config.path, prep.osm), gtfs=resolve(config.path, prep.gtfs) if prep.gtfs else None)
    return attrs.evolve(options, storage=storage, preparation=prep)


@attrs.frozen
class ValhallaHttpOptions:
    """The kind-specific part of a ``valhalla-http`` source file: the servers, and the same costs and limits.

    ``limits.threads`` has no meaning here (each server runs its own threads) and is refused.
    """

    http: HttpSettings
    costs: tuple[ValhallaCost, ...]
    limits: ValhallaLimits = ValhallaLimits()


def parse_http_options(config: SourceConfig) -> ValhallaHttpOptions:
    """The options of a ``valhalla-http`` source; problems name file and key."""
    options = structure(_from_road2(config.options), ValhallaHttpOptions, config.path)
    problems = (
        options.http.problems(str(config.path)) + _check_costs(config.path, options.costs) + _check_limits(config.path, options.limits)
    )
    if options.limits.threads is not None:
        problems.append(f"{config.path}: limits.threads: not used by valhalla-http sources (each server has its own threads); remove it")
    if options.limits.engine_calls != "threads":
        problems.append(f"{config.path}: limits.engine_calls: not used by valhalla-http sources (the servers make the calls); remove it")
    default = ValhallaLimits()
    for key in ("batch", "batch_delay_ms"):
        if getattr(options.limits, key) != getattr(default, key):
            problems.append(f"{config.path}: limits.{key}: not used by valhalla-http sources (the servers make the calls); remove it")
    if problems:
        raise ConfigurationError(problems)
    return options
