"""examples/gateway: a service with no engine data, its sources on osrm-routed and valhalla_service servers.

The example's files are served as they are, except the servers' addresses (free ports here); its
answers equal the in-process Monaco demo's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from roadkit.testing import service_client
from tests.conftest import EXAMPLE, ROOT
from tests.engine_servers import osrm_routed, running, same, valhalla_service

GATEWAY = ROOT / "examples" / "gateway"
OSRM_PORTS = {"car-fastest": 5001, "car-shortest": 5002, "pedestrian-fastest": 5003}
ALGORITHMS = {"car-fastest": "CH", "car-shortest": "CH", "pedestrian-fastest": "MLD"}
OSRM_URLS = [
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.41337,43.72956&end=7.41983,43.73115&intermediates=7.4246,43.7383",
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.41337,43.72956&end=7.41983,43.73115&optimization=shortest",
    "/simple/1.0.0/route?resource=monaco-osrm&start=7.41337,43.72956&end=7.41983,43.73115&profile=pedestrian",
    "/simple/1.0.0/nearest?resource=monaco-osrm&coordinates=7.41337,43.72956&nbPoints=3",
]
VALHALLA_URLS = [
    "/simple/1.0.0/route?resource=monaco-valhalla&start=7.4167,43.7284&end=7.4350,43.7480&profile=multimodal&date_time=2026-06-15T08:00",
    "/simple/1.0.0/isochrone?resource=monaco-valhalla&point=7.41337,43.72956&costType=time&costValue=300",
]


def test_the_gateway_example_answers_like_the_in_process_demo(
    tmp_path: Path, osrm_example: Path, valhalla_example: Path, valhalla_config: Path
) -> None:
    # The gateway reads ../monaco/resources and ../monaco/projections: the same layout in tmp_path.
    for folder in ("resources", "projections"):
        shutil.copytree(EXAMPLE / folder, tmp_path / "monaco" / folder)
    gateway = shutil.copytree(GATEWAY, tmp_path / "gateway")
    assert not (gateway / "data").exists()
    osrm = {name: osrm_routed(osrm_example / "data" / "osrm" / name / "monaco.osrm", ALGORITHMS[name]) for name in OSRM_PORTS}
    valhalla = valhalla_service(valhalla_config, tmp_path)
    with running(*osrm.values(), valhalla):
        for name, port in OSRM_PORTS.items():
            path = gateway / "sources" / f"monaco-{name}.source"
            path.write_text(path.read_text().replace(f"http://127.0.0.1:{port}", osrm[name].url))
        path = gateway / "sources" / "monaco-valhalla.source"
        path.write_text(path.read_text().replace("http://127.0.0.1:8002", valhalla.url))
        with service_client(gateway / "service.toml") as through:
            for example, urls in ((osrm_example, OSRM_URLS), (valhalla_example, VALHALLA_URLS)):
                with service_client(example / "service.toml") as direct:
                    for url in urls:
                        expected, got = direct.get(url), through.get(url)
                        assert got.status_code == expected.status_code == 200, (url, got.text)
                        same(got.json(), expected.json(), url)
