"""Source kind ``osrm-http``: OSRM through running osrm-routed servers, one dataset (one cost) per source.

The source holds no engine data: it forwards each request to one of its servers (round robin over
the ones that answer, failover to the next when one stops answering) and reads the answer with the
same mapping as the in-process ``osrm`` kind. Its sources serve ``osrm`` resources.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any

import attrs
import orjson

from roadkit.contract.native_osrm import NativeAnswer, NativeRequest, NativeSource
from roadkit.contract.sources import (
    ConfigurationError,
    EngineError,
    HttpSettings,
    MatrixRequest,
    MatrixResponse,
    NearestRequest,
    NearestResponse,
    RemoteSource,
    RoadkitError,
    RouteRequest,
    RouteResponse,
    SourceConfig,
)
from roadkit_osrm import mapping
from roadkit_osrm.source import OsrmCost

log = logging.getLogger(__name__)

# Characters sent as they are in a forwarded native URL; every other one is percent-encoded.
_URL_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?")


def encode_query(query: str) -> str:
    """``query`` (decoded as osrm-routed decodes a URL: ``%XX`` only) encoded so that osrm-routed decodes it back.

    Each character stands for one byte (latin-1); ``%`` is always encoded, so an encoded sequence in
    the decoded query reaches osrm-routed's query parser as it reached ours.
    """
    return "".join(c if c in _URL_SAFE else f"%{ord(c):02X}" for c in query)


@attrs.frozen
class OsrmHttpOptions:
    """The kind-specific part of an ``osrm-http`` source file.

    ``http``: the servers and their time-outs and probes; ``cost``: the one cost the servers'
    dataset computes; ``url_profile``: the profile segment of osrm-routed's URLs (osrm-routed
    ignores it; a proxy in front may route on it).
    """

    http: HttpSettings
    cost: OsrmCost
    url_profile: str = "driving"


class OsrmHttpSource(mapping.OsrmKind, RemoteSource, NativeSource):
    """OSRM answered by osrm-routed servers over HTTP (aiohttp, one connection pool per source)."""

    kind = "osrm-http"
    resource_type = "osrm"
    options_class = OsrmHttpOptions
    options: OsrmHttpOptions

    def __init__(self, config: SourceConfig, options: OsrmHttpOptions, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self._exclusions: dict[frozenset[str], bool] = {}

    @classmethod
    def parse_options(cls, config: SourceConfig) -> OsrmHttpOptions:
        options: OsrmHttpOptions = super().parse_options(config)
        problems = options.http.problems(str(config.path))
        if not options.url_profile or "/" in options.url_profile:
            problems.append(f"{config.path}: url_profile: expected one URL path segment (such as driving), got {options.url_profile!r}")
        if problems:
            raise ConfigurationError(problems)
        return options

    async def connect(self) -> None:
        self._exclusions.clear()  # the servers may run another dataset than before: asked again
        await super().connect()

    async def learn_bans(self, fields: Collection[str], most: int) -> None:
        # One probe per set not known yet, over the source's pool: never a blocking call on the loop.
        servers = self.connected_servers()
        for classes in mapping.ban_combinations(fields, most, lambda classes: classes not in self._exclusions):
            query = mapping.ban_probe(classes)
            try:
                answer = await servers.request("GET", query.path(self.options.url_profile), params=query.params())
            except RoadkitError as exc:  # no server answers now: left unknown, asked again at the next build
                log.warning("source %s: can't learn whether it bans %s together: %s", self.id, ", ".join(sorted(classes)), exc.message)
                return
            self._exclusions[classes] = mapping.EXCLUDE_UNSUPPORTED.encode() not in answer.body

    def supported_bans(self, fields: Collection[str], most: int) -> Collection[frozenset[str]] | None:
        # What learn_bans asked the servers' dataset, as the in-process source asks its own; a set not
        # learnt (no server answered) counts as banned together: a request with it gets the engine's 400.
        if self.servers is None or not self.servers.up:
            return None
        return mapping.ban_combinations(fields, most, lambda classes: self._exclusions.get(classes, True))

    def probe_path(self) -> str:
        # Any coordinate snaps somewhere: a nearest request is osrm-routed's cheapest answer.
        return f"/nearest/v1/{self.options.url_profile}/0,0"

    async def _get(self, path: str, params: dict[str, str], engine_error: Callable[[str, str], RoadkitError] = mapping.engine_error) -> Any:
        """osrm-routed's parsed answer; an error answer raised as the in-process source raises it."""
        answer = await self.connected_servers().request("GET", path, params=params)
        try:
            data = orjson.loads(answer.body)
            code = data["code"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            log.debug("source %s: %s answered HTTP %d without OSRM JSON: %.200r", self.id, answer.server, answer.status, answer.body)
            raise EngineError(f"OSRM server of source {self.id} answered HTTP {answer.status} without an OSRM answer") from None
        if answer.status != 200 or code != "Ok":
            raise engine_error(str(code), str(data.get("message", "")))
        return data

    async def route(self, request: RouteRequest) -> RouteResponse:
        query = mapping.RouteQuery.of(request)
        return mapping.route_response(await self._get(query.path(self.options.url_profile), query.params()), query)

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        query = mapping.NearestQuery.of(request)
        return mapping.nearest_response(await self._get(query.path(self.options.url_profile), query.params()))

    async def matrix(self, request: MatrixRequest) -> MatrixResponse:
        query = mapping.TableQuery.of(request)
        return mapping.matrix_response(await self._get(query.path(self.options.url_profile), query.params(), query.error), query)

    async def native(self, request: NativeRequest) -> NativeAnswer:
        """osrm-routed's own answer: the native URL forwarded unchanged (with the servers' profile segment).

        The requests osrm-routed would refuse before routing are refused here first, as the
        in-process source refuses them, so that the resource's limits apply whatever the servers' are.
        """
        from roadkit_osrm.native.engine import refusal

        _, refused = refusal(request)
        if refused is not None:
            return refused
        servers = self.connected_servers()
        path = f"/{request.service}/v{request.version}/{self.options.url_profile}/{encode_query(request.query)}"
        answer = await servers.request("GET", path, encoded=True)
        return NativeAnswer(answer.status, answer.body, answer.content_type)
