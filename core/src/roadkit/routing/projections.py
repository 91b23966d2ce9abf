"""Projections of a service: definitions read from its projections folder, transformers built once."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs
from pyproj import CRS, Transformer
from pyproj.exceptions import CRSError

from roadkit.config.files import read_document
from roadkit.errors import ConfigurationError, NotFound
from roadkit.routing.model import Coord


@attrs.frozen
class Projection:
    """A projection id (e.g. ``EPSG:2154``) and its definition (a PROJ string or any pyproj input)."""

    id: str
    parameters: str
    crs: CRS = attrs.field(eq=False, repr=False)


class ProjectionRegistry:
    """The projections a service knows; transformers between them are built once and reused."""

    def __init__(self, projections: Iterable[Projection] = ()) -> None:
        self._projections: dict[str, Projection] = {}
        self._transformers: dict[tuple[str, str], Transformer] = {}
        self._lock = threading.Lock()
        for projection in projections:
            self._projections[projection.id] = projection

    @classmethod
    def from_folder(cls, folder: Path | None) -> ProjectionRegistry:
        """Load every projection file of ``folder`` (TOML ``[[projections]]`` or Road2 JSON ``projectionsList``)."""
        registry = cls()
        if folder is None:
            registry.add("EPSG:4326", "+proj=longlat +datum=WGS84 +no_defs")
            return registry
        problems: list[str] = []
        if not folder.is_dir():
            raise ConfigurationError([f"{folder}: expected a folder of projection files"])
        # Every file, whatever its name, as Road2 reads them (hidden files and editor backups aside).
        files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".") and not p.name.endswith("~"))
        if not files:
            problems.append(f"{folder}: expected at least one projection file, found none")
        for path in files:
            try:
                data = read_document(path)
            except ConfigurationError as exc:
                problems.extend(exc.problems)
                continue
            entries = data.get("projections", data.get("projectionsList"))
            key = "projections" if "projections" in data else "projectionsList"
            if not isinstance(entries, list) or not entries:
                problems.append(f"{path}: {key}: expected a non-empty list of projections")
                continue
            for i, entry in enumerate(entries):
                where = f"{path}: {key}[{i}]"
                if not isinstance(entry, dict):
                    problems.append(f"{where}: expected a table with id and parameters")
                    continue
                pid, params = entry.get("id"), entry.get("parameters", entry.get("definition"))
                if not isinstance(pid, str) or not pid:
                    problems.append(f"{where}.id: expected a non-empty string, got {pid!r}")
                    continue
                if not isinstance(params, str) or not params:
                    problems.append(f"{where}.parameters: expected a PROJ definition string, got {params!r}")
                    continue
                if pid in registry._projections:
                    problems.append(f"{where}.id: projection {pid!r} is defined twice")
                    continue
                try:
                    registry.add(pid, params)
                except CRSError as exc:
                    problems.append(f"{where}.parameters: not a valid projection definition ({exc})")
        if problems:
            raise ConfigurationError(problems)
        return registry

    def add(self, pid: str, parameters: str) -> Projection:
        """Register a projection (raises pyproj's CRSError when the definition is invalid)."""
        projection = Projection(pid, parameters, CRS.from_user_input(parameters))
        self._projections[pid] = projection
        return projection

    def __contains__(self, pid: object) -> bool:
        return pid in self._projections

    def ids(self) -> list[str]:
        """Every known projection id."""
        return list(self._projections)

    def get(self, pid: str) -> Projection:
        """The projection with this id (404 when unknown)."""
        try:
            return self._projections[pid]
        except KeyError:
            raise NotFound(f"Can't find projection {pid}") from None

    def transformer(self, source: str, target: str) -> Transformer:
        """The (cached) always-xy transformer from ``source`` to ``target``."""
        key = (source, target)
        transformer = self._transformers.get(key)
        if transformer is None:
            with self._lock:
                transformer = self._transformers.get(key)
                if transformer is None:
                    transformer = Transformer.from_crs(self.get(source).crs, self.get(target).crs, always_xy=True)
                    self._transformers[key] = transformer
        return transformer

    def transform(self, coords: Sequence[Sequence[float]], source: str, target: str) -> list[Coord]:
        """Coordinates reprojected from ``source`` to ``target`` (the same list when they are equal)."""
        if source == target:
            return coords  # type: ignore[return-value]  # as it is: a LineText stays unread
        if not coords:
            return []
        xs, ys = zip(*((c[0], c[1]) for c in coords), strict=True)
        tx, ty = self.transformer(source, target).transform(xs, ys)
        return list(zip(tx, ty, strict=True))

    def transform_point(self, point: Sequence[float], source: str, target: str) -> Coord:
        """One point reprojected; infinite results (outside the projection's domain) raise ValueError."""
        if source == target:
            return (point[0], point[1])
        x, y = self.transformer(source, target).transform(point[0], point[1])
        if x != x or y != y or abs(x) == float("inf") or abs(y) == float("inf"):
            raise ValueError(f"point {point[0]},{point[1]} can't be transformed from {source} to {target}")
        return (x, y)
