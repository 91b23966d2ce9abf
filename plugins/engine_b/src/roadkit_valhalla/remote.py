"""Source kind ``valhalla-http``: Valhalla answered by running valhalla_service servers, several costs per source.

The source holds no tiles: it posts the same request bodies as the in-process ``valhalla`` kind to
one of its servers (round robin over the ones that answer, failover to the next when one stops
answering) and reads the answers with the same translation. Its sources serve ``valhalla`` resources.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

from roadkit.contract import EngineServers, SourceConfig, SourceState, SourceUnavailable
from roadkit_valhalla.base import ValhallaBase, engine_error, operation_of, too_large
from roadkit_valhalla.options import ValhallaHttpOptions, parse_http_options

log = logging.getLogger(__name__)
T = TypeVar("T")


class ValhallaHttpSource(ValhallaBase):
    """Valhalla over HTTP (aiohttp, one connection pool per source), with the in-process source's mapping."""

    kind = "valhalla-http"
    resource_type = "valhalla"
    options_class = ValhallaHttpOptions
    options: ValhallaHttpOptions

    def __init__(self, config: SourceConfig, options: ValhallaHttpOptions, *, timeout: float = 10.0) -> None:
        super().__init__(config, options, timeout=timeout)
        self.servers: EngineServers | None = None

    @classmethod
    def parse_options(cls, config: SourceConfig) -> ValhallaHttpOptions:
        cls.check_projection(config)
        return parse_http_options(config)

    async def connect(self) -> None:
        if self.servers is not None:
            await self.servers.close()
        self.servers = EngineServers(self.id, self.options.http, timeout=self.timeout, probe="/status", on_change=self._server_change)
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

    async def _post(self, action: str, body: dict[str, Any]) -> tuple[int, Any]:
        """The status and parsed JSON answer (None when not JSON) of one POST to a server."""
        servers = self.servers
        if servers is None:
            raise SourceUnavailable(f"source {self.id} is not connected")
        limit = self.limits.max_response_bytes
        answer = await servers.request("POST", f"/{action}", json_body=orjson.dumps(body), max_bytes=limit)
        if len(answer.body) > limit:
            raise too_large(len(answer.body), limit, self.id)  # the size read so far: at least this much
        try:
            return answer.status, orjson.loads(answer.body)
        except orjson.JSONDecodeError:
            log.warning("source %s: %s answered HTTP %d without JSON: %.200r", self.id, answer.server, answer.status, answer.body)
            return answer.status, None

    async def ask(self, action: str, body: dict[str, Any], read: Callable[[Any], T]) -> T:
        status, data = await self._post(action, body)
        if status == 200 and data is not None:
            return read(data)
        if isinstance(data, dict) and "error" not in data and body.get("directions_options", {}).get("format") == "osrm":
            # valhalla_service answers OSRM-format errors with OSRM's generic text ("InvalidValue: The
            # successfully parsed query parameters are invalid"); the same request in Valhalla's own
            # format gives the message an Actor raises in process, which says which parameter is wrong.
            native = {**body, "directions_options": {**body["directions_options"], "format": "json"}}
            native_status, native_data = await self._post(action, native)
            if native_status != 200 and isinstance(native_data, dict):
                status, data = native_status, native_data
        text = ""
        if isinstance(data, dict):
            text = str(data.get("error") or data.get("message") or "")
        raise engine_error(text or f"HTTP {status} from the engine server", operation_of(action))
