"""Writing configuration files for the admin API: atomic replacement, TOML output, server-file edits.

Every write goes to a temporary file in the target's folder, is flushed to disk, then renamed over
the target: a reader (or a crash) sees the old file or the new one, never half of one. The server
file is edited with tomlkit so that its comments and layout survive; a JSON server file is rewritten
as indented JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w
import tomlkit
import tomlkit.items

from roadkit.config.road2 import is_road2_server
from roadkit.errors import Conflict, RoadkitError


def _fsync_folder(folder: Path) -> None:
    # The rename itself is durable only once the folder's entry is on disk.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class WriteFailed(RoadkitError):
    """A configuration file could not be written (disk full, read-only file system...); nothing changed."""

    status = 503
    code = "write_failed"


def atomic_write(path: Path, text: str, mode: int | None = None, gid: int | None = None) -> None:
    """Replace ``path`` with ``text`` atomically (temporary file, fsync, rename), keeping its mode.

    ``mode``: the file's mode instead, ``gid``: its group (both set before the rename, so the file
    never has others). The folder must exist: no folder is created. A failure leaves ``path`` as it
    was and raises WriteFailed naming the file.
    """
    temp = None
    try:
        # mkstemp creates the file 0600: it is never readable by others, not even for a moment.
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if gid is not None:
            os.chown(temp, -1, gid)
        with contextlib.suppress(OSError):
            os.chmod(temp, mode if mode is not None else path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        os.replace(temp, path)
    except BaseException as exc:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        if isinstance(exc, OSError):
            raise WriteFailed(f"Can't write {path}: {exc.strerror or exc}; nothing was changed") from None
        raise
    _fsync_folder(path.parent)


def atomic_remove(path: Path) -> None:
    """Remove ``path`` (a no-op when it is already gone), durably."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise WriteFailed(f"Can't remove {path}: {exc.strerror or exc}") from None
    _fsync_folder(path.parent)


#: The integers a TOML file holds (64-bit signed); JSON has no such limit.
TOML_INTEGERS = (-(2**63), 2**63 - 1)


def storable_problems(data: Any, where: str, key: str = "") -> list[str]:
    """Problems for every value of a JSON document that a configuration file can't hold: ``null``,
    and integers beyond TOML's 64 bits (stored, they broke every later answer that shows the file)."""
    if data is None:
        return [f"{where}: {key or '(top level)'}: null is not allowed (leave the key out instead)"]
    if isinstance(data, int) and not isinstance(data, bool) and not TOML_INTEGERS[0] <= data <= TOML_INTEGERS[1]:
        return [f"{where}: {key or '(top level)'}: expected an integer of at most 64 bits (a TOML file holds no larger), got {data}"]
    problems: list[str] = []
    if isinstance(data, Mapping):
        for name, value in data.items():
            problems.extend(storable_problems(value, where, f"{key}.{name}" if key else str(name)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            problems.extend(storable_problems(value, where, f"{key}[{i}]"))
    return problems


def dump_toml(data: Mapping[str, Any]) -> str:
    """``data`` (JSON-like, no null) as a TOML document.

    tomli-w, not tomlkit (kept for the server file, whose comments it preserves): tomlkit takes a time
    quadratic in the number of items (43 s for a list of 20,000 keywords), on the event loop of the
    administrator, which then answered nothing.
    """
    text: str = tomli_w.dumps(dict(data))
    return text


class ServerFileEditor:
    """The server file as an editable document: add, change or remove ``[[services]]`` entries."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.text = path.read_text(encoding="utf-8-sig")
            self.json = self.text.lstrip().startswith("{")
            self.doc: Any = json.loads(self.text) if self.json else tomlkit.parse(self.text)
        except (OSError, ValueError) as exc:
            # The request may be right; the file on disk is not (changed by hand since the start): 409.
            raise Conflict(f"{path}: the server file can't be read ({exc}); fix it, then send the request again") from None
        if self.json and is_road2_server(self.doc):
            raise Conflict(
                f"{path} is a Road2 administration file: the admin API does not rewrite it. "
                "Add or remove the service there and restart, or move to a roadkit server file (TOML) to manage services through the API"
            )

    def _services(self) -> Any:
        if "services" not in self.doc:
            if self.json:
                self.doc["services"] = []
            else:
                self.doc.append("services", tomlkit.aot())
        services = self.doc["services"]
        if not isinstance(services, list):
            raise Conflict(f"{self.path}: services: expected a list of [[services]] tables (fix the server file first)")
        return services

    def entry(self, sid: str) -> dict[str, Any]:
        """The ``[[services]]`` entry of ``sid`` as plain data (KeyError when the file does not list it)."""
        entry = self._services()[self.index(sid)]
        return dict(entry.unwrap() if hasattr(entry, "unwrap") else entry)

    def index(self, sid: str) -> int:
        """Where the entry of ``sid`` is in the file's ``services`` (KeyError when the file does not list it)."""
        for i, entry in enumerate(self._services()):
            if isinstance(entry, Mapping) and entry.get("id") == sid:
                return i
        raise KeyError(sid)

    def add_service(self, entry: Mapping[str, Any]) -> None:
        """Append a ``[[services]]`` entry."""
        self._services().append(dict(entry))

    def update_service(self, sid: str, changes: Mapping[str, Any]) -> None:
        """Set keys of the entry of ``sid`` in place (its comments stay)."""
        entry = self._services()[self.index(sid)]
        for key, value in changes.items():
            entry[key] = value

    def remove_service(self, sid: str) -> None:
        """Remove the entry of ``sid``."""
        del self._services()[self.index(sid)]

    def data(self) -> dict[str, Any]:
        """The edited document as plain data (what the loader will read)."""
        if self.json:
            return dict(self.doc)
        unwrapped: dict[str, Any] = self.doc.unwrap()
        return unwrapped

    def render(self) -> str:
        """The edited document as text."""
        if self.json:
            return json.dumps(self.doc, indent=2, ensure_ascii=False) + "\n"
        text: str = tomlkit.dumps(self.doc)
        return text

    def save(self, mode: int | None = None, gid: int | None = None) -> None:
        """Write the edited document atomically (``mode``, ``gid``: as :func:`atomic_write`)."""
        atomic_write(self.path, self.render(), mode=mode, gid=gid)
