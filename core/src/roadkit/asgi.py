"""roadkit in other ASGI applications and ASGI servers.

Mounted in a host application (Starlette, FastAPI), a roadkit app needs its lifespan run by the host,
because a mounted app's own lifespan never runs::

    import contextlib
    from starlette.applications import Starlette
    from starlette.routing import Mount
    import roadkit.asgi

    routing = roadkit.asgi.create_app("service.toml")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with roadkit.asgi.lifespan(routing):   # connects the sources, then stops them at shutdown
            yield

    app = Starlette(routes=[Mount("/routing", app=routing)], lifespan=lifespan)

Any ASGI server runs one service from the file named by ``ROADKIT_SERVICE``:
``uvicorn --factory roadkit.asgi:from_environment`` or ``hypercorn 'roadkit.asgi:from_environment()'``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette

from roadkit.config import load_service
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.serving.app import create_app as _service_app

#: The environment variable naming the service file of :func:`from_environment`.
SERVICE_VARIABLE = "ROADKIT_SERVICE"
#: The environment variable naming an optional CORS file of :func:`from_environment`.
CORS_VARIABLE = "ROADKIT_CORS"

__all__ = ["CORS_VARIABLE", "SERVICE_VARIABLE", "create_app", "from_environment", "lifespan"]


def create_app(
    service_file: str | os.PathLike[str], *, cors: str | os.PathLike[str] | None = None, plugins: Plugins | None = None, id: str = "main"
) -> Starlette:
    """The ASGI app of the service a service file describes (read now; the sources connect in its lifespan).

    A configuration problem raises :class:`~roadkit.errors.ConfigurationError` naming the file and key.
    """
    config = load_service(Path(service_file), cors=Path(cors) if cors is not None else None)
    return _service_app(config, plugins or Plugins.create(), service_id=id)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Run a roadkit app's lifespan from a host application's own: the service starts on entry, stops on exit."""
    async with app.router.lifespan_context(app):
        yield


def from_environment() -> Starlette:
    """An ASGI app factory for ASGI servers: the service of the file named by ``ROADKIT_SERVICE``."""
    path = os.environ.get(SERVICE_VARIABLE, "").strip()
    if not path:
        raise ConfigurationError([f"{SERVICE_VARIABLE}: expected the path of a service file, got nothing"])
    return create_app(path, cors=os.environ.get(CORS_VARIABLE) or None)
