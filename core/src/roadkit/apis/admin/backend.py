"""What the admin API needs of the administrator: a small protocol, so that neither imports the other.

:class:`roadkit.process.administrator.Administrator` implements it; a test or an embedding application
can give the admin app any other object that does.
"""

from __future__ import annotations

from typing import Any, Protocol

from roadkit.auth.admin import Authenticator
from roadkit.plugins import Plugins
from roadkit.serving.documents import Kind


class AdminBackend(Protocol):
    """The managed services as the admin API sees them. Unknown ids raise :class:`~roadkit.errors.NotFound`."""

    @property
    def plugins(self) -> Plugins: ...

    @property
    def authenticator(self) -> Authenticator: ...

    def configuration(self) -> dict[str, Any]:
        """The server file, as a document."""
        ...

    def services(self) -> list[dict[str, Any]]:
        """Every managed service, described."""
        ...

    def describe(self, sid: str) -> dict[str, Any]:
        """One managed service, described."""
        ...

    async def describe_apis(self, sid: str) -> dict[str, Any]:
        """What the APIs of a running service add to its description (``ogcApis``); empty when it is not running."""
        ...

    async def health(self) -> dict[str, Any]:
        """The global state and each service's."""
        ...

    async def metrics(self) -> bytes:
        """Every service's metrics in Prometheus's text format."""
        ...

    async def restart(self, sid: str) -> dict[str, Any]:
        """Restart a service (calls during a start are merged into one next restart); its description."""
        ...

    async def projection(self, sid: str, pid: str) -> dict[str, str]:
        """One projection of a running service."""
        ...

    async def create(self, body: Any) -> dict[str, Any]:
        """Create and start a service from a document; its description."""
        ...

    async def modify(self, sid: str, body: Any) -> dict[str, Any]:
        """Change a service's entry or file and apply it; its description."""
        ...

    async def delete(self, sid: str) -> None:
        """Stop a service and remove it from the server file."""
        ...

    def documents(self, sid: str, kind: Kind) -> list[dict[str, Any]]:
        """The ``.source`` or ``.resource`` documents of a service."""
        ...

    def document(self, sid: str, kind: Kind, oid: str) -> dict[str, Any]:
        """One ``.source`` or ``.resource`` document of a service."""
        ...

    async def publish(self, sid: str, kind: Kind, oid: str, body: Any) -> tuple[dict[str, Any], bool]:
        """Check, write and load one document into the running service; (the stored document, created)."""
        ...

    async def switch_version(self, sid: str, oid: str, body: Any) -> dict[str, Any]:
        """Point a source at another version of its data (``{"version": ...}``) in the running service."""
        ...

    async def unpublish(self, sid: str, kind: Kind, oid: str) -> None:
        """Take one source or resource out of the running service and remove its file."""
        ...
