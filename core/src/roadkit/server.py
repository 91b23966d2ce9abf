"""The administrator wired with core's admin API: what ``roadkit serve`` runs, and what tests and tools start."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from roadkit.apis.admin import create_admin_app
from roadkit.config import ServerConfig
from roadkit.plugins import Plugins
from roadkit.process.administrator import Administrator, run_administrator
from roadkit.process.zygote import ZygoteProcess


def administrator(config: ServerConfig, plugins: Plugins | None = None, *, log_level: str | None = None) -> Administrator:
    """An administrator of the server file ``config`` serving core's admin API (not started)."""
    return Administrator(config, plugins, admin_app=create_admin_app, log_level=log_level)


def serve(path: Path, *, log_level: str | None = None, zygotes: Mapping[str, ZygoteProcess] | None = None) -> int:
    """Run the administrator of a server file until SIGINT or SIGTERM (``roadkit serve``); ``zygotes``: started already."""
    return run_administrator(path, admin_app=create_admin_app, log_level=log_level, zygotes=zygotes)
