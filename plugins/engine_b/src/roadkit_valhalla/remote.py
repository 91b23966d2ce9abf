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

from roadkit.contract.sources import RemoteSource, SourceConfig
from roadkit_valhalla.base import ValhallaBase, engine_error, operation_of, too_large
from roadkit_valhalla.options import ValhallaHttpOptions, parse_http_options

log = logging.getLogger(__name__)
T = TypeVar("T")


class ValhallaHttpSource(RemoteSource, ValhallaBase):
    """Valhalla over HTTP (aiohttp, one connection pool per source), with the in-process source's mapping."""

    kind = "valhalla-http"
    resource_type = "valhalla"
    options_class = ValhallaHttpOptions
    options: ValhallaHttpOptions

    @classmethod
    def parse_options(cls, config: SourceConfig) -> ValhallaHttpOptions:
        cls.check_projection(config)
        return parse_http_options(config)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Its servers' service_limits, as the source file states them (the in-process kind reads valhalla.json).
        self.max_locations = self.limits.max_locations

    def probe_path(self) -> str:
        return "/status"

    async def _post(self, action: str, body: dict[str, Any]) -> tuple[int, Any]:
        """The status and parsed JSON answer (None when not JSON) of one POST to a server."""
        limit = self.limits.max_response_bytes
        answer = await self.connected_servers().request("POST", f"/{action}", json_body=orjson.dumps(body), max_bytes=limit)
        if len(answer.body) > limit:
            raise too_large(len(answer.body), limit, self.id)  # the size read so far: at least this much
        try:
            return answer.status, orjson.loads(answer.body)
        except orjson.JSONDecodeError:
            log.debug("source %s: %s answered HTTP %d without JSON: %.200r", self.id, answer.server, answer.status, answer.body)
            return answer.status, None

    async def ask(
        self, action: str, body: dict[str, Any], read: Callable[[Any], T], read_text: Callable[[str], T | None] | None = None
    ) -> T:
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
