"""Outbound HTTP to engine servers: one pool of servers per remote source, with failover.

A remote source (``osrm-http``, ``valhalla-http``...) forwards its requests to one or more running
engine servers. :class:`EngineServers` owns the source's aiohttp session (one connection pool per
source), takes the servers in turn (round robin over the ones that answer), retries a request on the
next server when one stops answering, and probes every server periodically so that a server that
comes back is used again. The source is red only when no server answers.

Proxies: the session trusts the environment, so ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``NO_PROXY``
apply to every request, as they do for the other outbound HTTP of roadkit.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import attrs
from yarl import URL

from roadkit.config.files import resolve
from roadkit.config.models import SourceConfig
from roadkit.errors import EngineTimeout, SourceUnavailable
from roadkit.requestid import current as current_request_id
from roadkit.routing.source import Source, SourceState

log = logging.getLogger(__name__)

# Statuses with which a proxy or load balancer in front of an engine says "not this one now".
_GONE_STATUSES = frozenset({502, 503, 504})


@attrs.frozen
class HttpSettings:
    """The ``[http]`` table of a remote source file.

    ``servers``: base URLs of the engine servers (``http://host:port``, optionally with a path);
    ``connect_timeout``: seconds to open a connection before trying the next server;
    ``health_interval``: seconds between two probes of every server;
    ``health_timeout``: seconds a probe waits for an answer;
    ``max_connections``: size of the source's connection pool (all servers together);
    ``ca_file``: for ``https://`` servers, the PEM certificates to trust instead of the system's
    (a private CA, a self-signed server; relative to the source file);
    ``verify``: ``false`` accepts any server certificate (tests, never production).
    The request time-out is the source's ``timeout`` (or the service's engine time-out).
    """

    servers: tuple[str, ...]
    connect_timeout: float = 2.0
    health_interval: float = 5.0
    health_timeout: float = 2.0
    max_connections: int = 64
    ca_file: Path | None = None
    verify: bool = True

    def relative_to(self, source_file: Path) -> HttpSettings:
        """These settings with ``ca_file`` resolved against the source file's folder."""
        return self if self.ca_file is None else attrs.evolve(self, ca_file=resolve(source_file, self.ca_file))

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS settings of ``https://`` servers; None: the system's trusted certificates, verified."""
        if not self.verify:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            return context
        if self.ca_file is not None:
            return ssl.create_default_context(cafile=str(self.ca_file))
        return None

    def problems(self, where: str) -> list[str]:
        """What is wrong with these settings, each as ``file: http.key: expected ..., got ...``."""
        found: list[str] = []
        if not self.servers:
            found.append(f"{where}: http.servers: expected at least one base URL, got none")
        for i, url in enumerate(self.servers):
            try:
                parsed: URL | None = URL(url)
            except (ValueError, TypeError):
                parsed = None
            if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
                found.append(f"{where}: http.servers[{i}]: expected an http:// or https:// base URL, got {url!r}")
        for key in ("connect_timeout", "health_interval", "health_timeout"):
            if not getattr(self, key) > 0:
                found.append(f"{where}: http.{key}: expected seconds > 0, got {getattr(self, key)}")
        if self.max_connections < 1:
            found.append(f"{where}: http.max_connections: expected a positive integer, got {self.max_connections}")
        if self.ca_file is not None:
            if not self.verify:
                found.append(f"{where}: http.ca_file: not used with verify = false (nothing is verified); remove one of them")
            try:
                self.relative_to(Path(where)).ssl_context()
            except (OSError, ssl.SSLError) as exc:
                found.append(f"{where}: http.ca_file: expected a readable file of PEM certificates, got {str(self.ca_file)!r} ({exc})")
        return found


@attrs.define
class Server:
    """One engine server and what the source last learnt about it."""

    url: str
    up: bool = False
    reason: str = "not probed yet"

    def health(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"url": self.url, "state": "up" if self.up else "down"}
        if not self.up:
            entry["reason"] = self.reason
        return entry


@attrs.frozen
class Answer:
    """An engine server's HTTP answer: status and body (at most the bytes asked for, plus one)."""

    status: int
    body: bytes
    server: str
    content_type: str = "application/json"


async def _read(response: aiohttp.ClientResponse, max_bytes: int | None) -> bytes:
    """The body, or its first ``max_bytes`` + 1 bytes: enough to know it is too large, without reading it all."""
    if max_bytes is None:
        return await response.read()
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            break
    return b"".join(chunks)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class EngineServers:
    """The engine servers of one remote source: pool, round robin, failover and health probes.

    ``probe`` is the path (with query) of a cheap request every server answers; any HTTP answer
    below 500 means the server is up. ``on_change(up, reason)`` is called when the source as a
    whole turns green (some server up) or red (none).
    """

    def __init__(
        self,
        source_id: str,
        settings: HttpSettings,
        *,
        timeout: float,
        probe: str,
        on_change: Callable[[bool, str], None],
    ) -> None:
        self.source_id = source_id
        self.settings = settings
        self.timeout = timeout
        self.probe = probe
        self.servers = [Server(url.rstrip("/")) for url in settings.servers]
        self._ssl = settings.ssl_context()  # read once: the CA file is not opened again per connection
        if not settings.verify:
            log.warning("source %s: http.verify = false: the engine servers' certificates are not checked", source_id)
        self._on_change = on_change
        self._turn = itertools.count()
        self._session: aiohttp.ClientSession | None = None
        self._health_task: asyncio.Task[None] | None = None
        self._probing: set[asyncio.Task[None]] = set()

    @property
    def up(self) -> bool:
        return any(server.up for server in self.servers)

    def reason(self) -> str:
        """Why no server answers (one line per server)."""
        return "; ".join(f"{s.url}: {s.reason}" for s in self.servers if not s.up)

    async def start(self) -> None:
        """Open the pool and probe every server; raises SourceUnavailable when none answers.

        The probes go on in the background only once a server answered: a source that never
        connected is retried by the service, which calls ``start`` again.
        """
        await self.close()
        connector = aiohttp.TCPConnector(limit=self.settings.max_connections, limit_per_host=0, ssl=self._ssl or True)
        # trust_env: HTTP_PROXY / HTTPS_PROXY / NO_PROXY (and ~/.netrc) apply, as to any outbound HTTP.
        self._session = aiohttp.ClientSession(connector=connector, trust_env=True, raise_for_status=False)
        await self.probe_all()
        if not self.up:
            reason = self.reason()  # before close(), which marks every server "not connected"
            await self.close()
            raise SourceUnavailable(f"no engine server of source {self.source_id} answers: {reason}")
        self._health_task = asyncio.create_task(self._health_loop(), name=f"health-{self.source_id}")

    async def close(self) -> None:
        """Stop the probes and close the pool."""
        tasks = [t for t in (self._health_task, *self._probing) if t is not None]
        self._health_task = None
        self._probing.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
        for server in self.servers:
            server.up, server.reason = False, "not connected"

    def health(self) -> list[dict[str, Any]]:
        """Every server's state, for the source's health entry."""
        return [server.health() for server in self.servers]

    # -- health ---------------------------------------------------------------------------------

    async def _health_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.health_interval)
            try:
                await self.probe_all()
            except Exception:  # a probe must never end the loop: the next round tries again
                log.exception("source %s: health probe failed", self.source_id)

    async def probe_all(self) -> None:
        """Probe every server at once and update the source's state."""
        await asyncio.gather(*(self._probe(server) for server in self.servers))
        self._changed()

    async def _probe(self, server: Server) -> None:
        session = self._session
        if session is None:
            return
        timeout = aiohttp.ClientTimeout(total=self.settings.health_timeout)
        try:
            async with session.get(server.url + self.probe, timeout=timeout) as response:
                await response.read()
                if response.status >= 500:
                    self._mark(server, False, f"health probe answered HTTP {response.status}")
                else:
                    self._mark(server, True, "")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            self._mark(server, False, f"health probe failed: {_describe(exc)}")

    def _probe_soon(self, server: Server) -> None:
        """Probe one server in the background (a request timed out on it: is it still alive?)."""
        task = asyncio.create_task(self._probe_and_report(server))
        self._probing.add(task)
        task.add_done_callback(self._probing.discard)

    async def _probe_and_report(self, server: Server) -> None:
        await self._probe(server)
        self._changed()

    def _mark(self, server: Server, up: bool, reason: str) -> None:
        if server.up != up:
            if up:
                log.info("source %s: engine server %s answers again", self.source_id, server.url)
            else:
                log.warning("source %s: engine server %s is down (%s)", self.source_id, server.url, reason)
        server.up, server.reason = up, reason

    def _changed(self) -> None:
        self._on_change(self.up, "" if self.up else f"no engine server answers: {self.reason()}")

    # -- requests -------------------------------------------------------------------------------

    def _candidates(self) -> list[Server]:
        """The servers that answer, starting with the next one in turn."""
        live = [server for server in self.servers if server.up]
        if not live:
            return []
        start = next(self._turn) % len(live)
        return live[start:] + live[:start]

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json_body: bytes | None = None,
        max_bytes: int | None = None,
        encoded: bool = False,
    ) -> Answer:
        """Send one request to the next server that answers; on a dead server, try the next one.

        Raises SourceUnavailable (503) when no server answers and EngineTimeout (504) when the
        source's time-out passes. Any HTTP answer is returned as it is (the engine's errors are the
        caller's to map), except the "gone" statuses of a proxy in front (502, 503, 504), which
        count as a server that does not answer. A connection that breaks once open is tried once
        more on the same server (behind a load balancer, another backend takes it) before the server
        counts as down. ``encoded``: ``path`` is already percent-encoded and is sent byte for byte.
        """
        session = self._session
        if session is None:
            raise SourceUnavailable(f"source {self.source_id} is not connected")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        headers = {"Content-Type": "application/json"} if json_body is not None else {}
        if (request_id := current_request_id()) is not None:
            headers["X-Request-ID"] = request_id  # the engine server's logs can be matched with roadkit's
        failures: list[str] = []
        candidates = self._candidates()
        resent: set[str] = set()
        while candidates:
            server = candidates.pop(0)
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            timeout = aiohttp.ClientTimeout(total=remaining, sock_connect=min(self.settings.connect_timeout, remaining))
            try:
                url = URL(server.url + path, encoded=True) if encoded else server.url + path
                async with session.request(method, url, params=params, data=json_body, headers=headers, timeout=timeout) as response:
                    body = await _read(response, max_bytes)
                    status = response.status
                    content_type = response.headers.get("Content-Type", "application/json")
            except aiohttp.ConnectionTimeoutError as exc:
                failures.append(f"{server.url}: {_describe(exc)}")
                self._mark(server, False, f"no connection within {self.settings.connect_timeout:g} s")
                continue
            except TimeoutError:
                # The server took the request but did not answer in time: the request may just be
                # heavy, so it is not sent again; a probe says whether the server is still alive.
                self._probe_soon(server)
                raise EngineTimeout(f"The engine of source {self.source_id} did not answer within {self.timeout:g} s") from None
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError) as exc:
                if server.url not in resent and not isinstance(exc, aiohttp.ClientConnectorError):
                    # Broken after it was open: behind a load balancer (a Kubernetes Service) one backend
                    # went away, and a new connection to the same address reaches another one. Engine
                    # calls are computations, safe to send again whatever their method (POST included).
                    resent.add(server.url)
                    candidates.insert(0, server)
                    continue
                # Refused, reset, closed mid-answer: the server is gone; the request is idempotent.
                failures.append(f"{server.url}: {_describe(exc)}")
                self._mark(server, False, _describe(exc))
                continue
            if status in _GONE_STATUSES:
                failures.append(f"{server.url}: HTTP {status}")
                self._mark(server, False, f"answered HTTP {status}")
                continue
            if not server.up:
                self._mark(server, True, "")
                self._changed()
            return Answer(status, body, server.url, content_type)
        if failures:
            self._changed()
        if loop.time() >= deadline:
            raise EngineTimeout(f"The engine of source {self.source_id} did not answer within {self.timeout:g} s")
        detail = "; ".join(failures) or self.reason()
        raise SourceUnavailable(f"no engine server of source {self.source_id} answers: {detail}")


class RemoteSource(Source):
    """Base of the source kinds answered by engine servers over HTTP (``osrm-http``, ``valhalla-http``...).

    It owns the source's :class:`EngineServers` (built from ``options.http`` at each connect) and
    keeps the source's state in step with them: green while some server answers, red with the
    servers' reasons when none does. A kind gives ``probe_path`` and sends its requests with
    ``connected_servers().request(...)``.
    """

    def __init__(self, config: SourceConfig, options: Any, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self.servers: EngineServers | None = None

    def remote_hosts(self) -> Sequence[tuple[str, str]]:
        servers: tuple[str, ...] = self.options.http.servers
        return [(f"http.servers[{i}]", URL(url).host or "") for i, url in enumerate(servers)]

    def probe_path(self) -> str:
        """The path (with query) of the cheapest request every engine server answers."""
        raise NotImplementedError

    def connected_servers(self) -> EngineServers:
        """The servers to send a request to; SourceUnavailable (503) before ``connect`` or after ``disconnect``."""
        if self.servers is None:
            raise SourceUnavailable(f"source {self.id} is not connected")
        return self.servers

    async def connect(self) -> None:
        # Re-entrant: the service calls connect() again on the same object to retry a red source.
        if self.servers is not None:
            await self.servers.close()
        settings = self.options.http.relative_to(self.config.path)
        self.servers = EngineServers(self.id, settings, timeout=self.timeout, probe=self.probe_path(), on_change=self._server_change)
        try:
            await self.servers.start()
        except SourceUnavailable as exc:
            self.fail(exc.message)
            raise

    def _server_change(self, up: bool, reason: str) -> None:
        if up:
            self.state, self.reason = SourceState.GREEN, ""
        else:
            self.fail(reason)

    async def disconnect(self) -> None:
        if self.servers is not None:
            servers, self.servers = self.servers, None
            await servers.close()
        await super().disconnect()

    def health(self) -> dict[str, Any]:
        entry = super().health()
        if self.servers is not None:
            entry["servers"] = self.servers.health()
        return entry
