"""Helpers for tests that start a whole service from its files."""

from __future__ import annotations

import asyncio
from pathlib import Path

from roadkit.config.loader import load_service
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.serving.service import Service


def start_problems(service_file: Path) -> list[str]:
    """The problems with which the service of ``service_file`` refuses to start (a service that starts fails the test)."""
    service = Service(load_service(service_file), Plugins.create())

    async def start() -> None:
        try:
            await service.start()
        finally:
            await service.stop()

    try:
        asyncio.run(start())
    except ConfigurationError as exc:
        return list(exc.problems)
    raise AssertionError(f"{service_file}: the service started; expected configuration problems")
