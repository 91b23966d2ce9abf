"""An engine's unexpected answer is the engine's fault (502), never the user's (400)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from starlette.testclient import TestClient

from roadkit import hookimpl
from roadkit.config import load_service
from roadkit.plugins import Plugins
from roadkit.routing.model import Cost, IsochroneRequest, IsochroneResponse
from roadkit.routing.source import Source
from roadkit.serving.app import create_app
from roadkit.serving.service import Service
from tests.core.conftest import StraightLineSource, make_service, run, write


class LineIsochroneSource(StraightLineSource):
    """Answers isochrones with a LineString: no engine should, roadkit must not blame the request."""

    kind = "lineiso"
    operations = frozenset({"route", "nearest", "isochrone"})

    def costs(self) -> Sequence[Cost]:
        return [Cost("car", "fastest", "time")]

    async def isochrone(self, request: IsochroneRequest) -> IsochroneResponse:
        return IsochroneResponse(request.point, [{"type": "LineString", "coordinates": [[0, 0], [1, 1]]} for _ in request.cost_values])


class LinePlugin:
    @hookimpl
    def roadkit_source_kinds(self) -> Sequence[type[Source]]:
        return [LineIsochroneSource]


def test_an_unexpected_engine_geometry_is_a_502(tmp_path: Path) -> None:
    path = make_service(tmp_path, sources={"a": 'id = "a"\ntype = "lineiso"\n'}, resource_sources="")
    write(
        tmp_path / "resources" / "iso.resource",
        """
id = "iso"
type = "lineiso"
sources = ["a"]
[operations.isochrone]
point = { bbox = "-10,-10,10,10" }
""",
    )
    service = Service(load_service(path), Plugins.create(load_entry_points=False, extra_plugins=[LinePlugin()]))
    run(service.start())
    with TestClient(create_app(service, manage_lifecycle=False)) as client:
        response = client.get("/simple/1.0.0/isochrone", params={"resource": "iso", "point": "0,0", "costValue": "10", "crs": "EPSG:4326"})
    assert response.status_code == 502, response.text
    assert response.json()["error"]["errorType"] == "engine_error"
    assert "LineString" in response.json()["error"]["message"]
