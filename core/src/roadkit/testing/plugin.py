"""roadkit's pytest plugin (entry point ``pytest11``: ``roadkit``): fixtures for plugin authors' tests.

Installed with ``roadkit[testing]``, it is loaded by every pytest run of the environment: it imports
no more than pytest here, and the roadkit modules each fixture needs when the fixture runs (no
engine plugin ever). Its fixtures are named ``roadkit_*`` so that no project's own fixture clashes.

- ``roadkit_plugins``: the installed plugins plus the test-only ``straight`` kind;
- ``roadkit_service_files``: a factory writing a service (sources, resources) into ``tmp_path``;
- ``roadkit_client``: a factory of clients of a service file's app, inside its lifespan.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import pytest

if TYPE_CHECKING:
    from starlette.testclient import TestClient

    from roadkit.plugins import Plugins


class ServiceFiles(Protocol):
    """The ``roadkit_service_files`` factory."""

    def __call__(
        self,
        sources: Mapping[str, str] | None = None,
        resources: Mapping[str, str] | None = None,
        *,
        service: str | None = None,
        projections: str | None = None,
    ) -> Path: ...


class ClientFactory(Protocol):
    """The ``roadkit_client`` factory."""

    def __call__(
        self, service_file: Path | None = None, *, plugins: Plugins | None = None, cors: Path | None = None
    ) -> AbstractContextManager[TestClient]: ...


@pytest.fixture
def roadkit_plugins() -> Plugins:
    """The plugins of a test service: the installed ones (entry points) and the ``straight`` kind.

    The ``straight`` kind (:mod:`roadkit.testing.straight`) computes in straight lines: no engine,
    exact numbers. It is no installed plugin; this fixture registers it as an extra plugin.
    """
    from roadkit.testing.services import straight_plugins

    return straight_plugins()


@pytest.fixture
def roadkit_service_files(tmp_path: Path) -> ServiceFiles:
    """A factory writing a service into a new folder of ``tmp_path``; it returns the service file.

    ``roadkit_service_files(sources=None, resources=None, *, service=None, projections=None)``:
    ``sources`` and ``resources`` map file names (without ``.source``/``.resource``) to documents
    (TOML text). None writes the default, a ``straight`` source (car at 36 km/h, pedestrian at 3.6)
    and a ``straight`` resource offering route, isochrone and nearest anywhere on Earth in
    EPSG:4326 and EPSG:3857 (``roadkit.testing.straight_source``/``straight_resource`` write
    variants); ``{}`` writes none. ``service`` replaces the service file (it reads ``sources``,
    ``resources`` and ``projections`` folders), ``projections`` the projections file (default:
    EPSG:4326 and EPSG:3857).
    """
    from roadkit.testing.services import PROJECTIONS, SERVICE, write_service

    counter = itertools.count(1)

    def write(
        sources: Mapping[str, str] | None = None,
        resources: Mapping[str, str] | None = None,
        *,
        service: str | None = None,
        projections: str | None = None,
    ) -> Path:
        folder = tmp_path / f"roadkit-service-{next(counter)}"
        return write_service(folder, sources, resources, service=service or SERVICE, projections=projections or PROJECTIONS)

    return write


@pytest.fixture
def roadkit_client(roadkit_plugins: Plugins, roadkit_service_files: ServiceFiles) -> ClientFactory:
    """A factory of Starlette TestClients of a service file's app, used in ``with``: inside, the sources are connected.

    ``with roadkit_client(service_file=None, *, plugins=None, cors=None) as client:``; no
    ``service_file`` is the default of ``roadkit_service_files``, no ``plugins`` those of
    ``roadkit_plugins``, ``cors`` a CORS settings file.
    """
    from roadkit.testing.services import service_client

    @contextmanager
    def client(service_file: Path | None = None, *, plugins: Plugins | None = None, cors: Path | None = None) -> Iterator[TestClient]:
        with service_client(service_file or roadkit_service_files(), plugins or roadkit_plugins, cors) as test_client:
            yield test_client

    return client
