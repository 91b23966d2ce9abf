"""Core unit tests run with plugin autoload off and a test source kind written here."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from roadkit import hookimpl
from roadkit.plugins import Plugins
from roadkit.routing.model import Cost, NearestPoint, NearestRequest, NearestResponse, Portion, RouteRequest, RouteResponse
from roadkit.routing.source import Source, SourceState
from roadkit.testing import plugins_for_tests


@attrs.frozen
class LineOptions:
    """Options of the test kind: the costs it declares and an optional connection gate."""

    profiles: tuple[str, ...] = ("car",)
    fail: bool = False
    delay: float = 0.0


class StraightLineSource(Source):
    """Routes as straight lines at 10 m/s: enough to test everything around an engine."""

    kind = "straightline"
    options_class = LineOptions
    operations = frozenset({"route", "nearest"})
    gate: asyncio.Event | None = None
    connections = 0

    def costs(self) -> Sequence[Cost]:
        return [Cost(p, "fastest") for p in self.options.profiles]

    async def connect(self) -> None:
        type(self).connections += 1
        if type(self).gate is not None:
            await type(self).gate.wait()
        if self.options.fail:
            self.fail("the test engine refused to load")
            raise RuntimeError("the test engine refused to load")
        self.state = SourceState.GREEN

    async def route(self, request: RouteRequest) -> RouteResponse:
        if self.options.delay:
            await self.run_blocking(time.sleep, self.options.delay)  # a slow blocking engine call
        legs = list(zip(request.points, request.points[1:], strict=False))
        portions = [Portion(a, b, _meters(a, b), _meters(a, b) / 10) for a, b in legs]
        return RouteResponse(
            request.start, request.end, list(request.points), sum(p.distance for p in portions), sum(p.duration for p in portions), portions
        )

    async def nearest(self, request: NearestRequest) -> NearestResponse:
        return NearestResponse([NearestPoint(request.point, 0.0)] * request.number)


def _meters(a: tuple[float, float], b: tuple[float, float]) -> float:
    dx = (b[0] - a[0]) * 111_320 * math.cos(math.radians((a[1] + b[1]) / 2))
    dy = (b[1] - a[1]) * 110_540
    return math.hypot(dx, dy)


class TestPlugin:
    """Provides the straightline kind."""

    @hookimpl
    def roadkit_source_kinds(self) -> Sequence[type[Source]]:
        return [StraightLineSource]


@pytest.fixture
def plugins() -> Plugins:
    StraightLineSource.gate = None
    StraightLineSource.connections = 0
    return plugins_for_tests(TestPlugin(), entry_points=False)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


SERVICE = """
[application]
name = "test"
title = "Test service"
description = "A service for core tests"

[[listeners]]
port = {port}

[folders]
sources = ["sources"]
resources = ["resources"]
projections = "projections"
"""

PROJECTIONS = """
[[projections]]
id = "EPSG:4326"
parameters = "+proj=longlat +datum=WGS84 +no_defs"
"""

SOURCE = """
id = "{id}"
type = "straightline"
profiles = ["car"]
"""

RESOURCE = """
id = "lines"
type = "straightline"
sources = [{sources}]

[operations.route]
start = {{ bbox = "-10,-10,10,10" }}
end = {{ bbox = "-10,-10,10,10" }}

[operations.nearest]
"""


def make_service(root: Path, *, port: int = 8080, sources: dict[str, str] | None = None, resource_sources: str = '"a"') -> Path:
    """A service folder with the straightline kind; returns the service file."""
    write(root / "projections" / "world.toml", PROJECTIONS)
    (root / "sources").mkdir(parents=True, exist_ok=True)
    for sid, text in (sources if sources is not None else {"a": SOURCE.format(id="a")}).items():
        write(root / "sources" / f"{sid}.source", text)
    (root / "resources").mkdir(parents=True, exist_ok=True)
    if resource_sources:
        write(root / "resources" / "lines.resource", RESOURCE.format(sources=resource_sources))
    return write(root / "service.toml", SERVICE.format(port=port))


def free_port() -> int:
    """A loopback port reserved for a server a test configures (see roadkit_support.serving.reserve_port)."""
    from roadkit_support.serving import reserve_port

    return reserve_port()


def run(coro: Any) -> Any:
    """Run a coroutine to completion in its own thread and loop (safe inside any test)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
