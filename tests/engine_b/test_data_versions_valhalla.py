"""New Valhalla tiles without a restart: the source switched to another version of its tile extract under load."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import httpx

from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.conftest import MONACO_PBF, copy_example
from tests.core.conftest import free_port
from tests.engine_b.conftest import keep_only_valhalla

ROUTE = {"resource": "monaco-valhalla", "start": "7.41337,43.72956", "end": "7.41983,43.73115", "profile": "car", "optimization": "fastest"}


def _example(valhalla_config: Path, tmp_path: Path) -> tuple[Path, int, int, Path]:
    """The Valhalla example on the cached tiles (the version in use) with a "v2" copy beside; 2 workers, free ports."""
    data = tmp_path / "data" / "valhalla"
    version = data / "v2"
    version.mkdir(parents=True)
    shutil.copy2(valhalla_config, data / "valhalla.json")  # names the cached tile extract
    settings = json.loads(valhalla_config.read_text())
    shutil.copy2(settings["mjolnir"]["tile_extract"], version / "tiles.tar")
    settings["mjolnir"]["tile_extract"] = str(version / "tiles.tar")
    settings["mjolnir"]["tile_dir"] = str(version / "tiles")
    (version / "valhalla.json").write_text(json.dumps(settings))
    example = keep_only_valhalla(copy_example(tmp_path / "monaco", tmp_path / "data", ("*osrm*", "*pgrouting*")))
    admin_port, service_port = free_port(), free_port()
    server = example / "server.toml"
    server.write_text(re.sub(r'workers = "auto"', "workers = 2", re.sub(r"port = 8079", f"port = {admin_port}", server.read_text())))
    # The source's data lies in the sibling "data" folder and its OSM extract in the repository's example: both allowed.
    with server.open("a") as text:
        text.write(f'\n[administrator.writes]\nfolders = [".", "{tmp_path / "data"}", "{MONACO_PBF.parent}"]\n')
    service = example / "service.toml"
    service.write_text(re.sub(r"port = 8080", f"port = {service_port}", service.read_text()))
    source = example / "sources" / "monaco-valhalla.source"
    source.write_text(re.sub(r"(?m)^timeout = 10.0", "timeout = 1.0", source.read_text()))  # the old tiles are released 1 s after
    return server, admin_port, service_port, Path(settings["mjolnir"]["tile_extract"])


def _mapped(pid: int, name: str) -> set[str]:
    return {line.split(maxsplit=5)[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if line.endswith(name)}


async def _load(service: str, stop: asyncio.Event) -> list[tuple[int, str]]:
    seen: list[tuple[int, str]] = []
    async with httpx.AsyncClient(base_url=service, timeout=10) as client:
        while not stop.is_set():
            answer = await client.get("/simple/1.0.0/route", params=ROUTE)
            seen.append((answer.status_code, answer.json().get("resourceVersion") if answer.status_code == 200 else answer.text))
    return seen


async def test_valhalla_switches_to_new_tiles_under_load_without_a_failed_request(valhalla_config: Path, tmp_path: Path) -> None:
    server, admin_port, service_port, new_tar = _example(valhalla_config, tmp_path)
    old_tar = json.loads(valhalla_config.read_text())["mjolnir"]["tile_extract"]
    admin = administrator(load_server(server), Plugins.create())
    await admin.start()
    stop = asyncio.Event()
    clients: list[asyncio.Task[list[tuple[int, str]]]] = []
    try:
        base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
        async with httpx.AsyncClient(timeout=60) as c:
            pids = [p["pid"] for p in (await c.get(base)).json()["processes"]]
            assert len(pids) == 2 and all(_mapped(pid, "tiles.tar") == {old_tar} for pid in pids)
            clients = [asyncio.create_task(_load(f"http://127.0.0.1:{service_port}", stop)) for _ in range(4)]
            await asyncio.sleep(1.0)
            switched = await c.post(f"{base}/sources/monaco-valhalla/version", json={"version": "v2"})
            assert switched.status_code == 200, switched.text
            await asyncio.sleep(1.0)
            stop.set()
            by_client = await asyncio.gather(*clients)
            assert [e for seen in by_client for e in seen if e[0] != 200] == []
            assert sum(map(len, by_client)) > 20
            for seen in by_client:  # one connection, one worker: the version in use, then the new one for good
                versions = [v for _, v in seen]
                switch = versions.index("v2")
                assert set(versions[:switch]) == {"2016-03-05"} and set(versions[switch:]) == {"v2"}
            for _ in range(100):
                if all(_mapped(pid, "tiles.tar") == {str(new_tar)} for pid in pids):
                    break
                await asyncio.sleep(0.1)
            assert {pid: _mapped(pid, "tiles.tar") for pid in pids} == {pid: {str(new_tar)} for pid in pids}
            assert [p["pid"] for p in (await c.get(base)).json()["processes"]] == pids
    finally:
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        await admin.stop()
