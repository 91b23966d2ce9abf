"""Publication seen from the administrator: a service's ``.source`` and ``.resource`` files, validated and written.

The admin API checks a document completely (the same parsing as the files at start-up, the kind's
options, projections, the resource's sources and parameters) BEFORE anything is written; then the
file is replaced atomically and the service is told which id to (re)load from disk. A document
that fails any check changes nothing.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeGuard

from roadkit.config.files import read_document
from roadkit.config.loader import load_service, parse_resource, parse_source, read_resources, read_sources
from roadkit.config.models import ResourceConfig, ServiceConfig, SourceConfig
from roadkit.config.writer import dump_toml, storable_problems
from roadkit.config.writes import WritePolicy, host_problems, secret_problems
from roadkit.errors import BadRequest, ConfigurationError, Conflict, NotFound, ParameterInvalid
from roadkit.plugins import Plugins
from roadkit.routing.projections import ProjectionRegistry
from roadkit.routing.resources import build_resource
from roadkit.routing.source import Source
from roadkit.serving.service import read_api_settings, served_apis

Kind = Literal["source", "resource"]

#: Ids of services, sources and resources: they are also file names, so no folder separator, no
#: leading dot, nothing else. The same text is the ``pattern`` of the admin OpenAPI document.
ID_REGEX = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
ID_PATTERN = re.compile(ID_REGEX)
ID_EXPECTED = "expected letters, digits, '.', '_' or '-' (at most 128, starting with a letter or a digit)"


def is_safe_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` is an id that can name a file (``fullmatch``: ``$`` alone would accept a final newline)."""
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


def check_id(what: str, value: str) -> str:
    """``value`` when it can name a file; a 400 naming the parameter otherwise."""
    if not is_safe_id(value):
        raise ParameterInvalid(what, f"{ID_EXPECTED}, got {value if len(value) <= 128 else value[:128] + '...'!r}")
    return value


def _toml(data: dict[str, Any], where: Path) -> str:
    """``data`` as TOML, checked to read back identical (what is validated is what is stored)."""
    text = dump_toml(data)
    if tomllib.loads(text) != data:
        raise ConfigurationError([f"{where}: (top level): can't be stored as TOML without changing it"])
    return text


def _raise(problems: list[str], conflicts: list[str]) -> None:
    """400 listing every problem (conflicts too) when the document is invalid, else 409 for conflicts alone."""
    if problems:
        raise ConfigurationError(problems + conflicts)
    if conflicts:
        raise Conflict("\n".join(conflicts))


def _parsed[C](
    parse: Callable[[dict[str, Any], Path], C], data: dict[str, Any], where: Path, problems: list[str], conflicts: list[str]
) -> C:
    """``parse(data, where)``, once the document has no problem so far; a 400 with every problem (and conflict) otherwise."""
    if problems:
        raise ConfigurationError(problems + conflicts)
    try:
        return parse(data, where)
    except ConfigurationError as exc:
        raise ConfigurationError([*exc.problems, *conflicts]) from None


def _stored(path: Path) -> dict[str, Any]:
    """A stored document; one that can no longer be read (changed by hand meanwhile) is a conflict, not the request's fault."""
    try:
        return read_document(path)
    except ConfigurationError as exc:
        raise Conflict("\n".join(exc.problems)) from None


class ServiceFiles:
    """The source and resource files of one service, from its service file's folders."""

    def __init__(self, service_file: Path, plugins: Plugins, policy: WritePolicy | None = None) -> None:
        #: What a written document may name (default: the service file's folder, loopback hosts).
        self.policy = policy or WritePolicy(folders=(service_file.parent,))
        try:
            self.config: ServiceConfig = load_service(service_file)
        except ConfigurationError as exc:
            # Whatever the request, the service's own file (changed by hand since) is in the way: 409.
            raise Conflict("\n".join(f"{problem} (fix the service file first)" for problem in exc.problems)) from None
        self.plugins = plugins

    def _configs(self, kind: Kind) -> list[Any]:
        if kind == "source":
            return read_sources(self.config.folders.sources)[0]
        return read_resources(self.config.folders.resources)[0]

    def _folders(self, kind: Kind) -> tuple[Path, ...]:
        return self.config.folders.sources if kind == "source" else self.config.folders.resources

    def find(self, kind: Kind, oid: str) -> Path | None:
        """The file that defines ``oid``, if any."""
        return next((c.path for c in self._configs(kind) if c.id == oid), None)

    def ids(self, kind: Kind) -> list[str]:
        """Every id defined by a readable file."""
        return [c.id for c in self._configs(kind)]

    def documents(self, kind: Kind) -> list[dict[str, Any]]:
        """Every document of that kind as stored (the folders are read once)."""
        return [_stored(c.path) for c in self._configs(kind)]

    def document(self, kind: Kind, oid: str) -> dict[str, Any]:
        """The document of ``oid`` as stored (404 when no file defines it)."""
        path = self.find(kind, oid)
        if path is None:
            raise NotFound(f"Can't find {kind} {oid}")
        return _stored(path)

    def _target(self, kind: Kind, oid: str, conflicts: list[str]) -> tuple[Path, bool]:
        """The file to write for ``oid`` and whether it is new; what the service's folders do not allow is a conflict."""
        existing = self.find(kind, oid)
        if existing is not None:
            return existing, False
        folders = self._folders(kind)
        if not folders:
            conflicts.append(
                f"{self.config.path}: folders.{kind}s: the service has no {kind}s folder to publish into "
                f"(give it one with PUT /services/{{id}} first)"
            )
            return self.config.path.parent / f"{oid}.{kind}", True
        path = folders[0] / f"{oid}.{kind}"
        if path.exists():
            conflicts.append(f"{path}: id: this file exists and does not define {kind} {oid!r} (fix or remove it first)")
        return path, True

    def _with_id(self, kind: Kind, oid: str, body: Any, where: Path, problems: list[str]) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise BadRequest(
                f"Invalid request body: expected a JSON object with the keys of a .{kind} file, got {type(body).__name__}",
                code="invalid_body",
            )
        data = dict(body)
        inner = data.get(kind) if set(data) == {kind} and isinstance(data.get(kind), dict) else None
        target = dict(inner) if inner is not None else data  # Road2's {"source": {...}} / {"resource": {...}}
        if "id" not in target:
            target["id"] = oid
        elif target["id"] != oid:
            problems.append(f"{where}: id: expected {oid!r} (the id in the URL), got {target['id']!r}")
        if inner is not None:
            data[kind] = target
        problems.extend(storable_problems(data, str(where)))
        problems.extend(secret_problems(data, str(where)))
        return data

    def _allowed_target(self, kind: Kind, path: Path, problems: list[str]) -> None:
        """A file written outside the folders the administrator allows (a folder or file linked out) is a 400."""
        wrong = self.policy.path_problem(path)
        if wrong is not None:
            problems.append(f"{self.config.path}: folders.{kind}s: the file of this {kind}: {wrong}")

    def check_source(self, sid: str, body: Any) -> tuple[Path, str, bool]:
        """Validate a source document; (file, TOML text, created) or a ConfigurationError with every problem."""
        # A well-formed document that does not fit the service as it is now (its folders, its projections,
        # the resources using this source) is a conflict (409), not an invalid document (400).
        problems: list[str] = []
        conflicts: list[str] = []
        path, created = self._target("source", sid, conflicts)
        data = self._with_id("source", sid, body, path, problems)
        self._allowed_target("source", path, problems)
        config = _parsed(parse_source, data, path, problems, conflicts)
        kinds = self.plugins.source_kinds()
        cls = kinds.get(config.type)
        if cls is None:
            problems.append(
                f"{path}: type: no installed plugin provides source kind {config.type!r} (installed: {', '.join(sorted(kinds)) or 'none'})"
            )
        projections = self._projections(problems)
        if projections is not None and config.projection not in projections:
            conflicts.append(f"{path}: projection: unknown projection {config.projection!r} (known: {', '.join(projections.ids())})")
        if cls is not None:
            try:
                source = cls.from_config(config)  # its version applied: the paths of the data it will read
                outside: dict[str, str] = {}  # one problem per key (an OSRM dataset is several files)
                for key, named in cls.named_paths(source.config, source.options):
                    if key not in outside and (wrong := self.policy.path_problem(named)) is not None:
                        outside[key] = f"{path}: {key}: {wrong}"
                problems.extend(outside.values())
                if not outside:  # a database file is read for its hosts only once it is known to be allowed
                    problems.extend(host_problems(source.remote_hosts(), self.policy, str(path)))
            except ConfigurationError as exc:
                problems.extend(exc.problems)
        serves = {config.type} | ({cls.resource_type} if cls is not None and cls.resource_type else set())
        for resource in self._configs("resource"):
            if sid in resource.sources and resource.type not in serves:
                conflicts.append(f"{path}: type: resource {resource.id!r} of type {resource.type!r} uses this source ({resource.path})")
        _raise(problems, conflicts)
        return path, _toml(data, path), created

    def _projections(self, problems: list[str]) -> ProjectionRegistry | None:
        try:
            return ProjectionRegistry.from_folder(self.config.folders.projections)
        except ConfigurationError as exc:
            problems.extend(exc.problems)
            return None

    def _sources(self) -> dict[str, Source]:
        """The service's sources built from their files, not connected (enough to check a resource)."""
        kinds = self.plugins.source_kinds()
        built: dict[str, Source] = {}
        for config in self._configs("source"):
            cls = kinds.get(config.type)
            if cls is None:
                continue
            try:
                built[config.id] = cls.from_config(config)
            except ConfigurationError:
                continue
        return built

    def check_resource(self, rid: str, body: Any) -> tuple[Path, str, bool]:
        """Validate a resource document against the service's sources; (file, TOML text, created)."""
        problems: list[str] = []
        conflicts: list[str] = []  # no folder to publish into, sources the service does not have (yet) or of another type: 409
        path, created = self._target("resource", rid, conflicts)
        data = self._with_id("resource", rid, body, path, problems)
        self._allowed_target("resource", path, problems)
        config: ResourceConfig = _parsed(parse_resource, data, path, problems, conflicts)
        declared: dict[str, SourceConfig] = {c.id: c for c in self._configs("source")}
        kinds = self.plugins.source_kinds()
        for i, sid in enumerate(config.sources):
            source = declared.get(sid)
            if source is None:
                known = ", ".join(sorted(declared)) or "none"
                conflicts.append(f"{path}: sources[{i}]: unknown source {sid!r} (sources of the service: {known}; publish it first)")
                continue
            cls = kinds.get(source.type)
            # A remote kind (osrm-http...) serves the resources of its engine's type (osrm...).
            if config.type not in (source.type, cls.resource_type if cls is not None else None):
                conflicts.append(f"{path}: sources[{i}]: source {sid!r} is of type {source.type!r}, not {config.type!r}")
        projections = self._projections(problems)
        if not problems and not conflicts and projections is not None:
            _, found = build_resource(config, self._sources(), projections, self.plugins.cost_units())
            problems.extend(found + read_api_settings(config, served_apis(self.config, self.plugins))[1])
        _raise(problems, conflicts)
        return path, _toml(data, path), created

    def check_removal(self, kind: Kind, oid: str) -> Path:
        """The file to remove for ``oid``: 404 when unknown, 409 for a source a resource still uses."""
        path = self.find(kind, oid)
        if path is None:
            raise NotFound(f"Can't find {kind} {oid}")
        if kind == "source":
            users = [r.id for r in self._configs("resource") if oid in r.sources]
            if users:
                raise Conflict(f"Source {oid} is used by resource(s) {', '.join(users)}: change or remove them first")
        return path
