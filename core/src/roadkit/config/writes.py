"""What the admin API may write and name (``[administrator.writes]`` of the server file).

A write through the admin API (a service created or changed, a source or resource published) is
checked against the administrator's policy before anything is written:

- every path it names (service folders, projections, certificates, the file written itself) lies,
  once its symbolic links are followed, inside one of ``folders`` (the server file's folder by default);
- a worker allocator is named (``auto``, ``tcmalloc``...) or is a library of the system's library
  folders that only root can change (a preloaded library runs code in every worker);
- every database or engine server a source connects to is on a host of ``hosts`` (loopback by default);
- no password is written inline: a document names an environment variable instead (``password_env``).

The files it writes are readable by their owner only (0600), or also by ``group`` (0640).
"""

from __future__ import annotations

import grp
import ipaddress
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from roadkit.config import allocator
from roadkit.config.models import ServerConfig
from roadkit.config.secrets import inline_secrets

#: The hosts a written source may connect to when the server file names none: this machine only.
LOOPBACK = ("localhost", "127.0.0.0/8", "::1")


@attrs.frozen
class WritePolicy:
    """The administrator's rules for admin API writes, resolved against the server file."""

    folders: tuple[Path, ...]
    hosts: tuple[str, ...] = LOOPBACK
    group: str | None = None

    @property
    def file_mode(self) -> int:
        """The mode of every file the administrator writes."""
        return 0o640 if self.group else 0o600

    @property
    def folder_mode(self) -> int:
        """The mode of every folder the administrator creates."""
        return 0o750 if self.group else 0o700

    def allows_path(self, path: Path) -> bool:
        """Whether ``path``, its symbolic links followed, is inside one of the allowed folders."""
        try:
            real = Path(os.path.realpath(path))
        except (ValueError, OSError):  # a NUL byte, a loop of links: nothing to allow
            return False
        return any(real == folder or real.is_relative_to(folder) for folder in self._real_folders())

    def _real_folders(self) -> list[Path]:
        return [Path(os.path.realpath(folder)) for folder in self.folders]

    def path_problem(self, path: Path) -> str | None:
        """Why a write may not name ``path`` (the message's tail), or None."""
        if self.allows_path(path):
            return None
        try:
            real = os.path.realpath(path)
        except (ValueError, OSError):
            real = os.path.abspath(path)
        via = f" (a symbolic link to {real!r})" if real != os.path.normpath(os.path.abspath(path)) else ""
        return (
            f"expected a path inside the folders the administrator allows writes in "
            f"({', '.join(repr(str(f)) for f in self.folders)}; administrator.writes.folders of the server file), "
            f"got {str(path)!r}{via}"
        )

    def allows_host(self, host: str) -> bool:
        """Whether a written source may connect to ``host`` (a name, or an address in an allowed network)."""
        host = host.strip("[]").rstrip(".").lower()
        try:
            address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
        except ValueError:
            address = None
        for allowed in self.hosts:
            if address is None:
                if host == allowed.lower().rstrip("."):
                    return True
                continue
            try:
                if address in ipaddress.ip_network(allowed, strict=False):
                    return True
            except ValueError:
                continue
            mapped = getattr(address, "ipv4_mapped", None)
            if mapped is not None and mapped in ipaddress.ip_network(allowed, strict=False):
                return True
        return False

    def host_problem(self, host: str) -> str | None:
        """Why a written source may not connect to ``host``, or None."""
        if self.allows_host(host):
            return None
        return (
            f"host {host!r} is not one the administrator allows sources to connect to "
            f"({', '.join(self.hosts) or 'none'}; administrator.writes.hosts of the server file)"
        )

    @property
    def gid(self) -> int | None:
        """The group id of written files and created folders (None: the writer's own group)."""
        return grp.getgrnam(self.group).gr_gid if self.group else None

    def make_folder(self, folder: Path) -> None:
        """Create ``folder`` and its missing parents (all inside the allowed folders, checked before) with the policy's mode."""
        missing = [p for p in (folder, *folder.parents) if not p.exists()]
        for path in reversed(missing):
            path.mkdir(mode=self.folder_mode)
            os.chmod(path, self.folder_mode)  # mkdir's mode is masked by the umask
            if self.gid is not None:
                os.chown(path, -1, self.gid)


def policy_of(config: ServerConfig) -> WritePolicy:
    """The write policy of a server file (its defaults: the file's folder, loopback hosts, files 0600)."""
    writes = config.administrator.writes
    return WritePolicy(folders=writes.folders or (config.path.parent,), hosts=writes.hosts or LOOPBACK, group=writes.group)


def allocator_problem(setting: str) -> str | None:
    """Why a write may not set the workers' ``allocator`` to ``setting`` (the message's tail), or None.

    Names are fine (whether the machine has them is checked aside); a path must be a library of the
    system's library folders that only root can change, it and its folder.
    """
    if setting in ("auto", "system", *allocator.LIBRARIES):
        return None
    expected = (
        f'expected "auto", "system", {", ".join(f'"{name}"' for name in allocator.LIBRARIES)}, or a library of the system\'s '
        f"library folders ({', '.join(str(f) for f in allocator.library_folders())}) owned by root and writable by no one else"
    )
    real = Path(os.path.realpath(setting))
    folders = [Path(os.path.realpath(f)) for f in allocator.library_folders()]
    if not Path(setting).is_absolute() or real.parent not in folders:
        return f"{expected}, got {setting!r}"
    for path in (real, real.parent):
        try:
            info = path.stat()
        except OSError:
            continue  # not installed: the machine lacks it, told aside (a 409, as for a named allocator)
        if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{expected}, got {setting!r} ({path} may be changed by another user than root)"
    return None


def secret_problems(data: Any, where: str) -> list[str]:
    """A problem for each password a written document holds inline."""
    return [
        f"{where}: {key}: a password can't be written in a file: give the name of an environment variable that holds it "
        '(password_env = "NAME") and set it in the environment of roadkit'
        for key in inline_secrets(data)
    ]


def host_problems(hosts: Iterable[tuple[str, str]], policy: WritePolicy, where: str) -> list[str]:
    """A problem for each ``(key, host)`` pair a written source connects to that the policy does not allow."""
    return [f"{where}: {key}: {wrong}" for key, host in hosts if (wrong := policy.host_problem(host)) is not None]


def path_problems(paths: Sequence[tuple[str, Path]], policy: WritePolicy, where: str) -> list[str]:
    """A problem for each ``(key, path)`` pair outside the allowed folders."""
    return [f"{where}: {key}: {wrong}" for key, path in paths if (wrong := policy.path_problem(path)) is not None]
