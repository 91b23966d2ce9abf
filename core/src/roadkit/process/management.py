"""Creating, changing and deleting managed services through the admin API.

A request is checked completely first (the service file as the loader reads it, the new server
file as the loader reads it, listener ports free of the other services and of the administrator),
then the service file and the server file are replaced atomically, then the service is started,
reloaded or stopped. A request that fails a check writes nothing and starts nothing.
"""

from __future__ import annotations

import contextlib
import socket
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import attrs

from roadkit.config import allocator
from roadkit.config.files import resolve
from roadkit.config.loader import load_service, managed_service, parse_server, parse_service
from roadkit.config.models import Listener, ManagedService, ServerConfig, ServiceConfig
from roadkit.config.writer import ServerFileEditor, WriteFailed, atomic_write, dump_toml, storable_problems
from roadkit.config.writes import WritePolicy, allocator_problem, path_problems, policy_of, secret_problems
from roadkit.errors import BadRequest, ConfigurationError, Conflict, RoadkitError
from roadkit.plugins import Plugins
from roadkit.process.handle import ServiceHandle
from roadkit.serving.documents import ID_EXPECTED, is_safe_id
from roadkit.serving.lifecycle import Lifecycle


class ManagedServices(Protocol):
    """What management needs of the administrator: its server file, plugins and service handles."""

    config: ServerConfig
    plugins: Plugins
    handles: dict[str, ServiceHandle]

    def handle(self, sid: str) -> ServiceHandle: ...
    def new_handle(self, managed: ManagedService) -> ServiceHandle: ...


#: Keys of a request body besides ``configuration``: they go to the service's ``[[services]]`` entry.
ENTRY_KEYS = ("mode", "workers", "startup_timeout", "allocator")


@attrs.frozen
class Plan:
    """What a checked request will write: the service file, the edited server file, the new entry."""

    service_file: Path
    service_text: str
    editor: ServerFileEditor | None
    server: ServerConfig
    managed: ManagedService
    folders: tuple[Path, ...]


def _without_nulls(value: Any) -> Any:
    # Nulls are already reported as problems; the server-file editor must still be able to hold the rest.
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value if v is not None]
    return value


def _body(body: Any, where: str) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(body, dict):
        raise BadRequest(
            f"Invalid request body: expected a JSON object with id, configuration and {', '.join(ENTRY_KEYS)}, got {type(body).__name__}",
            code="invalid_body",
        )
    problems = [
        f"{where}: {key}: unknown key (expected id, configuration, {', '.join(ENTRY_KEYS)})"
        for key in body
        if key not in ("id", "configuration", *ENTRY_KEYS)
    ]
    problems.extend(storable_problems(body, where))
    configuration = body.get("configuration")
    if not isinstance(configuration, dict):
        problems.append(f"{where}: configuration: expected an object with the keys of a service file, got {configuration!r}")
    return body, problems


def _missing_on_server(problem: str, service_file: Path) -> bool:
    """A well-formed service document naming a projections folder, certificate or keys file the server does not have.

    The document is valid; it conflicts with the server's files (409, not 400), as a port another
    service uses does.
    """
    head = f"{service_file}: "
    if not problem.startswith(head) or (not problem.endswith("(not found)") and "expected a readable file" not in problem):
        return False
    key = problem[len(head) :].split(":", 1)[0]
    return key in ("folders.projections", "access.keys_file") or key.endswith((".certfile", ".keyfile"))


def _machine_problems(entry: dict[str, Any], path: Path, key: str, problems: list[str]) -> list[str]:
    """Take out of ``problems`` the entry's well-formed allocator that this machine does not have: a conflict (409).

    As a projections folder the server does not have, the request is valid; the machine lacks the
    library (not installed, not found, not a shared library).
    """
    value = entry.get("allocator")
    if not isinstance(value, str) or not allocator.well_formed(value) or (wrong := allocator.problem(value)) is None:
        return []
    found = f"{path}: {key}.allocator: {wrong}"
    if found not in problems:
        return []
    problems.remove(found)
    return [found]


def _named_paths(configuration: dict[str, Any], service_file: Path) -> list[tuple[str, Path]]:
    """The paths a service document names (folders, certificates), each with its key, resolved as the loader will.

    A path holding NUL names no file (a problem of its own, found by the loader).
    """
    named: list[tuple[str, Any]] = []
    folders = configuration.get("folders")
    if isinstance(folders, dict):
        for key in ("sources", "resources"):
            value = folders.get(key)
            named += [(f"folders.{key}[{i}]", v) for i, v in enumerate(value)] if isinstance(value, list) else [(f"folders.{key}", value)]
        named.append(("folders.projections", folders.get("projections")))
    listeners = configuration.get("listeners")
    for i, listener in enumerate(listeners if isinstance(listeners, list) else []):
        if isinstance(listener, dict):
            named += [(f"listeners[{i}].{name}", listener.get(name)) for name in ("certfile", "keyfile")]
    access_log = configuration.get("access_log")
    if isinstance(access_log, dict):
        named.append(("access_log.file", access_log.get("file")))  # the workers append to it: inside the allowed folders too
    for table, key in (("access", "keys_file"), ("ogcapi_routes", "store")):  # read, and written by the workers
        settings = configuration.get(table)
        if isinstance(settings, dict):
            named.append((f"{table}.{key}", settings.get(key)))
    application = configuration.get("application")  # Road2's shape: its CORS and log4js files
    if isinstance(application, dict):
        network = application.get("network")
        cors = network.get("cors") if isinstance(network, dict) else None
        if isinstance(cors, dict):
            named.append(("application.network.cors.configuration", cors.get("configuration")))
        logs = application.get("logs")
        if isinstance(logs, dict):
            named.append(("application.logs.configuration", logs.get("configuration")))
    return [(key, resolve(service_file, value)) for key, value in named if isinstance(value, str) and value and "\x00" not in value]


def _loaded_paths(service: ServiceConfig) -> list[tuple[str, Path]]:
    """The paths a loaded service file names, each with its key."""
    folders = service.folders
    named = [(f"folders.sources[{i}]", p) for i, p in enumerate(folders.sources)]
    named += [(f"folders.resources[{i}]", p) for i, p in enumerate(folders.resources)]
    named += [("folders.projections", folders.projections)] if folders.projections is not None else []
    for i, listener in enumerate(service.listeners):
        named += [(f"listeners[{i}].{name}", getattr(listener, name)) for name in ("certfile", "keyfile") if getattr(listener, name)]
    if service.access_log.file is not None:
        named.append(("access_log.file", service.access_log.file))
    return named


def _write_problems(entry: dict[str, Any], path: Path, key: str) -> list[str]:
    """What a written ``[[services]]`` entry may not hold: an allocator outside the system's libraries."""
    value = entry.get("allocator")
    if isinstance(value, str) and (wrong := allocator_problem(value)) is not None:
        return [f"{path}: {key}.allocator: {wrong}"]
    return []


def _ports(
    listeners: tuple[Listener, ...], others: dict[str, tuple[Listener, ...]], admin: Listener, where: Path, problems: list[str]
) -> None:
    for i, listener in enumerate(listeners):
        if listener.port == admin.port:
            problems.append(f"{where}: listeners[{i}].port: port {listener.port} is the administrator's")
        for sid, used in others.items():
            if any(other.port == listener.port for other in used):
                problems.append(f"{where}: listeners[{i}].port: port {listener.port} is already used by service {sid!r}")


def _hosts(listeners: tuple[Listener, ...], where: Path, conflicts: list[str]) -> None:
    """A listener host that names no address of this machine (a valid document the machine can't serve: 409)."""
    for i, listener in enumerate(listeners):
        try:
            # Bound to port 0, as the service's start would bind its port: nothing listens, nothing is taken.
            family, kind, proto, _, address = socket.getaddrinfo(listener.host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
            with socket.socket(family, kind, proto) as probe:
                probe.bind(address)
        except OSError as exc:
            conflicts.append(f"{where}: listeners[{i}].host: {listener.host!r} is not an address of this machine ({exc.strerror or exc})")


def _entry_conflicts(current: ManagedService, changes: dict[str, Any], path: Path, key: str, problems: list[str]) -> list[str]:
    """Why valid ``changes`` to a service's entry do not fit the entry as it is now, told so that the client can fix its request."""
    if "workers" not in changes and changes.get("mode") == "same-process":
        return [
            f"{path}: {key}.workers: service {current.id!r} runs workers = {current.workers!r} (child processes), and "
            'mode = "same-process" runs one worker: send workers = 1 with it'
        ]
    found: list[str] = []
    if "mode" not in changes and current.mode == "same-process":
        if "workers" in changes:
            found.append(
                f'{path}: {key}.mode: service {current.id!r} runs in the administrator\'s process (mode = "same-process"), with one '
                f'worker: send mode = "child-process" with workers = {changes["workers"]!r}'
            )
        if "allocator" in changes:
            found.append(
                f'{path}: {key}.allocator: {changes["allocator"]!r} needs mode = "child-process": service {current.id!r} runs in '
                'the administrator\'s process (mode = "same-process"), started with its allocator already: send mode = '
                f'"child-process" with allocator = {changes["allocator"]!r}'
            )
    return found or problems


class Management:
    """The checks and writes behind ``POST``, ``PUT`` and ``DELETE /services[/{id}]``."""

    def __init__(self, admin: ManagedServices) -> None:
        self.admin = admin

    @property
    def config(self) -> ServerConfig:
        return self.admin.config

    def _other_listeners(self, but: str) -> dict[str, tuple[Listener, ...]]:
        listeners: dict[str, tuple[Listener, ...]] = {}
        for managed in self.config.services:
            if managed.id == but:
                continue
            try:
                listeners[managed.id] = load_service(managed.configuration).listeners
            except ConfigurationError:
                continue  # a broken service file is its own service's problem
        return listeners

    def _server(self, editor: ServerFileEditor | None, entry_problems: list[str], conflicts: list[str]) -> ServerConfig | None:
        """The server file as it will be: the current one, or the edited one when the entry is valid.

        Once the request's entry is valid (``entry_problems`` empty), a problem left in the edited
        file is the file's own (changed by hand since the start): a conflict, not the request's fault.
        """
        if editor is None:
            return self.config
        if entry_problems or conflicts:
            return None
        try:
            return parse_server(editor.data(), self.config.path)
        except ConfigurationError as exc:
            conflicts.extend(f"{problem} (fix the server file first)" for problem in exc.problems)
            return None

    def _plan(
        self,
        sid: str,
        body: dict[str, Any],
        problems: list[str],
        *,
        service_file: Path,
        editor: ServerFileEditor | None,
        entry_problems: list[str],
        conflicts: list[str],
    ) -> Plan:
        """Check the service document and the server file as edited: a Plan, or 400 (problems) / 409 (conflicts alone)."""
        configuration = body.get("configuration")
        folders: list[Path] = []
        service = None
        problems.extend(entry_problems)
        if isinstance(configuration, dict):
            # What the administrator does not allow a write to name is a 400 whatever else is wrong.
            outside = path_problems(_named_paths(configuration, service_file), self.policy, str(service_file))
            problems.extend(outside)
            problems.extend(secret_problems(configuration, str(service_file)))
            try:
                if not outside:  # loading reads the files named (a CORS file): never one outside the allowed folders
                    service = parse_service(configuration, service_file, cors=self.config.administrator.cors, missing_folders=folders)
            except ConfigurationError as exc:
                problems.extend(p for p in exc.problems if not _missing_on_server(p, service_file))
                conflicts.extend(p for p in exc.problems if _missing_on_server(p, service_file))
            if service is not None:  # the paths as loaded, Road2's service files included
                problems.extend(p for p in path_problems(_loaded_paths(service), self.policy, str(service_file)) if p not in problems)
        # Ports taken by another service or the administrator: a valid document that conflicts with
        # what runs now (409), told apart from an invalid one (400).
        if service is not None:
            _ports(service.listeners, self._other_listeners(sid), self.config.administrator.listener, service_file, conflicts)
            _hosts(service.listeners, service_file, conflicts)
            available = self.admin.plugins.apis()
            for i, ref in enumerate(service.apis):
                if (ref.name, ref.version) not in available:
                    known = ", ".join(f"{n}/{v}" for n, v in sorted(available)) or "none"
                    problems.append(f"{service_file}: apis[{i}]: no installed plugin serves {ref.name}/{ref.version} (available: {known})")
        text = ""
        if isinstance(configuration, dict) and not problems:
            text = dump_toml(configuration)
            if tomllib.loads(text) != configuration:
                problems.append(f"{service_file}: (top level): can't be stored as TOML without changing it")
        server = self._server(editor, entry_problems, conflicts)
        if problems:
            raise ConfigurationError(problems + conflicts)
        if conflicts or server is None:
            raise Conflict("\n".join(conflicts))
        managed = next(m for m in server.services if m.id == sid)
        self.admin.new_handle(managed)  # a mode this administrator can't run is refused before anything is written
        return Plan(service_file, text, editor, server, managed, tuple(folders))

    @property
    def policy(self) -> WritePolicy:
        """What writes may name, and the mode of the files they write."""
        return policy_of(self.config)

    def _save(self, path: Path, text: str) -> None:
        atomic_write(path, text, mode=self.policy.file_mode, gid=self.policy.gid)

    def _write(self, plan: Plan) -> None:
        previous = plan.service_file.read_text(encoding="utf-8") if plan.service_file.exists() else None
        self._save(plan.service_file, plan.service_text)
        try:
            if plan.editor is not None:
                plan.editor.save(mode=self.policy.file_mode, gid=self.policy.gid)
        except BaseException:
            if previous is None:
                plan.service_file.unlink(missing_ok=True)
            else:
                self._save(plan.service_file, previous)
            raise
        for folder in plan.folders:
            try:
                self.policy.make_folder(folder)
            except OSError as exc:
                raise WriteFailed(
                    f"Can't create the folder {folder}: {exc.strerror or exc} (the "
                    "service files are written; create it and restart the service)"
                ) from None

    async def create(self, body: Any) -> ServiceHandle:
        """``POST /services``: check, write the service file and the server file, start the service."""
        where = str(self.config.path.parent / "<new service>")
        data, problems = _body(body, where)
        sid = data.get("id")
        if not is_safe_id(sid):
            problems.append(f"{where}: id: {ID_EXPECTED}, got {sid!r}")
            raise ConfigurationError(problems)
        if sid in self.admin.handles:
            raise Conflict(f"Service {sid} already exists")
        service_file = self.config.path.parent / f"{sid}.service.toml"
        if service_file.exists():
            raise Conflict(f"Service file {service_file} already exists (not used by any service): remove or rename it first")
        if (outside := self.policy.path_problem(service_file)) is not None:
            raise Conflict(f"{self.config.path}: administrator.writes.folders: the new service file: {outside}")
        problems = [p.replace(where, str(service_file), 1) for p in problems]
        entry = {"id": sid, "configuration": service_file.name} | {
            k: _without_nulls(data[k]) for k in ENTRY_KEYS if data.get(k) is not None
        }
        editor = ServerFileEditor(self.config.path)
        editor.add_service(entry)
        key = f"services[{editor.index(sid)}]"
        entry_problems = managed_service(entry, self.config.path, key)[1]
        conflicts = _machine_problems(entry, self.config.path, key, entry_problems)
        entry_problems += _write_problems(entry, self.config.path, key)
        plan = self._plan(sid, data, problems, service_file=service_file, editor=editor, entry_problems=entry_problems, conflicts=conflicts)
        previous_server = self.config.path.read_text(encoding="utf-8")
        new_folders = {p for folder in plan.folders for p in (folder, *folder.parents) if not p.exists()}
        self._write(plan)
        handle = self.admin.new_handle(plan.managed)
        self.admin.handles[sid] = handle
        before = self.config
        self.admin.config = attrs.evolve(before, services=(*before.services, plan.managed))
        await handle.start()
        if handle.lifecycle is Lifecycle.READY:
            return handle
        # A service that does not start (a port another program holds, its start-up time-out...) is
        # not created: no failed service left in the server file, nor in the administrator's health.
        reason = handle.error
        await handle.stop()
        if self.admin.handles.get(sid) is handle:
            del self.admin.handles[sid]
        self.admin.config = attrs.evolve(self.config, services=tuple(m for m in self.config.services if m.id != sid))
        self._save(self.config.path, previous_server)
        plan.service_file.unlink(missing_ok=True)
        for folder in sorted(new_folders, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()  # created for it, and still empty
        raise RoadkitError(f"Service {sid} can't start ({reason}): nothing was created", code="start_failed", status=503)

    async def modify(self, sid: str, body: Any) -> ServiceHandle:
        """``PUT /services/{id}``: check, replace the service file (and entry), then reload the service."""
        handle = self.admin.handle(sid)
        service_file = handle.managed.configuration
        data, problems = _body(body, str(service_file))
        if "id" in data and data["id"] != sid:
            problems.append(f"{service_file}: id: expected {sid!r} (the id in the URL), got {data['id']!r}")
        changes = {k: _without_nulls(data[k]) for k in ENTRY_KEYS if data.get(k) is not None}
        editor = None
        entry_problems: list[str] = []
        conflicts: list[str] = []
        if changes:
            editor = ServerFileEditor(self.config.path)
            try:
                key = f"services[{editor.index(sid)}]"
                current = editor.entry(sid)
            except KeyError:
                raise Conflict(f"{self.config.path}: services: service {sid!r} is no longer listed (fix the server file first)") from None
            # The request's keys alone (what it says of the service), then merged with the entry as it is now.
            entry_problems = managed_service({**current, **changes, "id": sid}, self.config.path, key)[1]
            conflicts.extend(_machine_problems({**current, **changes}, self.config.path, key, entry_problems))
            if (
                entry_problems
                and not managed_service({"id": sid, "configuration": current.get("configuration"), **changes}, self.config.path, key)[1]
            ):
                conflicts.extend(_entry_conflicts(handle.managed, changes, self.config.path, key, entry_problems))
                entry_problems = []
            entry_problems += _write_problems(changes, self.config.path, key)
            editor.update_service(sid, changes)
        plan = self._plan(sid, data, problems, service_file=service_file, editor=editor, entry_problems=entry_problems, conflicts=conflicts)
        previous_text = service_file.read_text(encoding="utf-8") if service_file.exists() else None
        previous_server = self.config.path.read_text(encoding="utf-8")

        def restore_files() -> None:
            # The service keeps (or gets back) its previous configuration: so do the files.
            if previous_text is not None:
                self._save(service_file, previous_text)
            self._save(self.config.path, previous_server)

        self._write(plan)
        services = tuple(plan.managed if m.id == sid else m for m in self.config.services)
        previous = handle.managed
        if plan.managed.mode == previous.mode:
            # The same kind of handle: its workers (their number, their start-up time-out) are replaced
            # by a reload, the old ones serving until the new ones are ready.
            handle.managed = plan.managed
            try:
                await handle.reload()
            except Exception:
                handle.managed = previous
                restore_files()
                raise
            self.admin.config = attrs.evolve(self.config, services=services)
            return handle
        return await self._move(handle, plan.managed, services, restore_files)

    async def _move(
        self, handle: ServiceHandle, managed: ManagedService, services: tuple[ManagedService, ...], restore_files: Callable[[], None]
    ) -> ServiceHandle:
        """A service moved between the administrator's process and child processes: the old handle stops, a new one starts.

        Both would listen on the same ports, so there is a gap. A new handle that does not come up
        is stopped and the previous configuration started again (files included): a 503.
        """
        await handle.stop()
        new = self.admin.new_handle(managed)
        self.admin.handles[handle.id] = new
        await new.start()
        if new.lifecycle is Lifecycle.READY:
            self.admin.config = attrs.evolve(self.config, services=services)
            return new
        reason = new.error
        await new.stop()
        restore_files()
        back = self.admin.new_handle(handle.managed)
        self.admin.handles[handle.id] = back
        await back.start()
        raise RoadkitError(
            f"Service {handle.id} can't start with its new configuration ({reason}); the previous configuration "
            f"was restored and started again ({back.lifecycle})",
            code="reload_failed",
            status=503,
        )

    async def delete(self, sid: str) -> None:
        """``DELETE /services/{id}``: stop the service, take it out of the server file (its files stay)."""
        handle = self.admin.handle(sid)
        editor = ServerFileEditor(self.config.path)
        listed = True
        try:
            editor.remove_service(sid)
        except KeyError:
            listed = False  # taken out of the file by hand since: only the running service is left to stop
        if listed:
            try:
                parse_server(editor.data(), self.config.path)
            except ConfigurationError as exc:
                raise Conflict("\n".join(f"{problem} (fix the server file first)" for problem in exc.problems)) from None
        await handle.stop()
        if listed:
            editor.save(mode=self.policy.file_mode, gid=self.policy.gid)
        del self.admin.handles[sid]
        self.admin.config = attrs.evolve(self.config, services=tuple(m for m in self.config.services if m.id != sid))
