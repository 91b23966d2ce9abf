"""One service's bring-up: what the same-process mode and every worker process run, and nothing else does."""

from __future__ import annotations

import asyncio
from pathlib import Path

from roadkit.config import load_service
from roadkit.plugins import Plugins
from roadkit.routing.source import SourceContext
from roadkit.serving.app import ServiceApp, create_app
from roadkit.serving.quotas import QuotaTable
from roadkit.serving.service import Service


def load(configuration: Path, cors: Path | None, plugins: Plugins, *, id: str, context: SourceContext | None = None) -> Service:
    """The service of a service file, its sources built for the process ``context`` describes (not connected)."""
    return Service(load_service(configuration, cors=cors), plugins, id=id, context=context)


async def bring_up(
    service: Service, *, timeout: float | None = None, quotas: QuotaTable | None = None, access_log: bool = False
) -> ServiceApp:
    """Connect the service's sources and build its resources (within ``timeout`` seconds), then its app.

    ``quotas``: the quota counters shared by the service's workers (``[access]``); ``access_log``: the
    administrator's ``[administrator.logging] access_log`` (the JSON access log of every service).

    The caller runs the app on its listeners and owns the service's lifecycle: the app's lifespan does not
    start or stop it. On failure the caller stops the service.
    """
    await asyncio.wait_for(service.start(), timeout)
    return create_app(service, manage_lifecycle=False, quotas=quotas, access_log=access_log)
