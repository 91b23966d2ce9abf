"""New OSRM data without a restart: a source switched to another version of its dataset under load.

Two worker processes serve the Monaco example while clients keep asking routes (simple API, CH and
MLD sources) and native routes; the car and pedestrian sources are switched to a "v2" copy of their
datasets through the admin API. No request fails, the answers name the new version, and afterwards
no process maps the old files.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from typing import Any

import httpx

from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.core.conftest import free_port

START, END = "7.41337,43.72956", "7.41983,43.73115"
NATIVE_ROUTE = f"/osrm/1.0.0/monaco-osrm/route/v1/car/{START};{END}?overview=false"
NATIVE_TABLE = f"/osrm/1.0.0/monaco-osrm/table/v1/car/{START};{END}"
SWITCHED = {"monaco-osrm-car-fastest": "car-fastest", "monaco-osrm-pedestrian-fastest": "pedestrian-fastest"}


def _example(osrm_example: Path, target: Path) -> tuple[Path, int, int]:
    """The OSRM example copied with its own data (versions in use unversioned), 2 workers, on free ports."""
    shutil.copytree(osrm_example, target)  # the data symlink followed: files of its own, beside the cache's
    admin_port, service_port = free_port(), free_port()
    server = target / "server.toml"
    text = re.sub(r"port = 8079", f"port = {admin_port}", server.read_text())
    server.write_text(re.sub(r'workers = "auto"', "workers = 2", text))
    service = target / "service.toml"
    service.write_text(
        re.sub(r"engine_timeout = 10.0", "engine_timeout = 1.0", re.sub(r"port = 8080", f"port = {service_port}", service.read_text()))
    )
    for folder in SWITCHED.values():
        dataset = target / "data" / "osrm" / folder
        version = dataset / "v2"  # where version v2 of "data/osrm/<folder>/monaco.osrm" lives
        version.mkdir()
        for path in dataset.glob("monaco.osrm*"):
            shutil.copy2(path, version / path.name)
    return target / "server.toml", admin_port, service_port


def _maps(folder: Path) -> dict[int, set[str]]:
    """The files under ``folder`` mapped by each process of the machine that maps any."""
    found: dict[int, set[str]] = {}
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            names = {line.split(maxsplit=5)[-1] for line in maps.read_text().splitlines() if str(folder) in line}
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if names:
            found[int(maps.parent.name)] = names
    return found


async def _load(service: str, stop: asyncio.Event, seen: list[tuple[str, int, str | None]]) -> None:
    """One client (its own connection) asking routes until ``stop``; every answer's (kind, status, version)."""
    async with httpx.AsyncClient(base_url=service, timeout=10) as client:
        n = 0
        while not stop.is_set():
            n += 1
            if n % 3 == 0:
                answer = await client.get(NATIVE_ROUTE)
                seen.append(("native", answer.status_code, answer.headers.get("x-roadkit-data-version")))
                continue
            profile = "pedestrian" if n % 3 == 1 else "car"
            params = {"resource": "monaco-osrm", "start": START, "end": END, "profile": profile, "optimization": "fastest"}
            answer = await client.get("/simple/1.0.0/route", params=params)
            version = answer.json().get("resourceVersion") if answer.status_code == 200 else answer.text
            seen.append((profile, answer.status_code, version))


async def test_osrm_sources_switch_to_a_new_data_version_under_load_without_a_failed_request(osrm_example: Path, tmp_path: Path) -> None:
    path, admin_port, service_port = _example(osrm_example, tmp_path / "monaco")
    admin = administrator(load_server(path), Plugins.create())
    await admin.start()
    stop = asyncio.Event()
    by_client: list[list[tuple[str, int, str | None]]] = [[] for _ in range(6)]
    clients: list[asyncio.Task[None]] = []
    try:
        base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
        async with httpx.AsyncClient(timeout=60) as c:
            pids = [p["pid"] for p in (await c.get(base)).json()["processes"]]
            assert len(pids) == 2
            data = path.parent / "data" / "osrm"
            old = str(data / "car-fastest" / "monaco.osrm.hsgr")
            assert all(old in _maps(data).get(pid, set()) for pid in pids)  # both workers map the version in use
            # Native tables run in a child process of the worker, with an engine of its own on the same files.
            for _ in range(4):
                async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{service_port}", timeout=30) as table_client:
                    assert (await table_client.get(NATIVE_TABLE)).status_code == 200
            old_files = {str(p) for folder in SWITCHED.values() for p in (data / folder).glob("monaco.osrm*")}
            assert len([pid for pid, names in _maps(data).items() if old_files & names]) > 2

            clients = [asyncio.create_task(_load(f"http://127.0.0.1:{service_port}", stop, seen)) for seen in by_client]
            await asyncio.sleep(1.0)
            for sid in SWITCHED:
                switched = await c.post(f"{base}/sources/{sid}/version", json={"version": "v2"})
                assert switched.status_code == 200, switched.text
                assert switched.json()["version"] == "v2" and switched.json()["previousVersion"] is None
            await asyncio.sleep(1.0)
            stop.set()
            await asyncio.gather(*clients)

            failures = [entry for seen in by_client for entry in seen if entry[1] != 200]
            assert failures == [] and sum(map(len, by_client)) > 100, (failures[:5], sum(map(len, by_client)))
            # A client (one connection, so one worker) sees the version in use (the resource's), then the new one,
            # never the old one again; the two workers switch a few milliseconds apart.
            for seen in by_client:
                for kind in ("car", "pedestrian"):
                    versions = [v for k, _, v in seen if k == kind]
                    switch = versions.index("v2")
                    assert set(versions[:switch]) == {"2016-03-05"} and set(versions[switch:]) == {"v2"}, kind
                native = [v for k, _, v in seen if k == "native"]
                assert native[0] is None and native[-1] == "v2"
            shares = (await c.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health?verbose=true")).json()["services"][0]
            assert all(w["connections"]["accepted"] > 0 for w in shares["workers"]), shares  # both workers served the load
            assert {s["id"]: s.get("version") for s in shares["sources"]} == {
                "monaco-osrm-car-fastest": "v2",
                "monaco-osrm-car-shortest": None,
                "monaco-osrm-pedestrian-fastest": "v2",
            }
            assert 'version = "v2"' in (path.parent / "sources" / "monaco-car-fastest.source").read_text()

            # The old datasets are released once the requests that could still use them are done (the
            # engine time-out, 1 s here): no process maps them (the workers' engine children included),
            # and the same workers still serve.
            assert [p["pid"] for p in (await c.get(base)).json()["processes"]] == pids
            for _ in range(100):
                maps = _maps(data)
                if not any(old_files & names for names in maps.values()):
                    break
                await asyncio.sleep(0.1)
            assert {pid: old_files & names for pid, names in maps.items() if old_files & names} == {}
            for pid in pids:
                assert str(data / "car-fastest" / "v2" / "monaco.osrm.hsgr") in maps[pid]
                assert str(data / "pedestrian-fastest" / "v2" / "monaco.osrm.mldgr") in maps[pid]
    finally:
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        await admin.stop()


async def test_a_version_switch_that_cannot_happen_changes_nothing(osrm_example: Path, tmp_path: Path, capsys: Any) -> None:
    from roadkit.cli import main as roadkit_main

    path, admin_port, service_port = _example(osrm_example, tmp_path / "monaco")
    admin = administrator(load_server(path), Plugins.create())
    await admin.start()
    try:
        base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main/sources"
        source_file = path.parent / "sources" / "monaco-car-fastest.source"
        before = source_file.read_text()
        async with httpx.AsyncClient(timeout=60) as c:
            missing = await c.post(f"{base}/monaco-osrm-car-fastest/version", json={"version": "v3"})
            assert missing.status_code == 409, missing.text
            message = missing.json()["error"]["message"]
            assert "version: the data of version v3 is missing" in message and "car-fastest/v3/monaco.osrm" in message
            bad: list[tuple[Any, str]] = [
                ({"version": "../x"}, "version"),
                ({"version": 3}, "version"),
                ({"version": "v2", "other": 1}, "other"),
                (["v2"], "list"),
            ]
            for body, named in bad:
                refused = await c.post(f"{base}/monaco-osrm-car-fastest/version", json=body)
                assert refused.status_code == 400 and named in refused.json()["error"]["message"], refused.text
            unknown = await c.post(f"{base}/nope/version", json={"version": "v2"})
            assert unknown.status_code == 404, unknown.text
            # A version whose files exist but do not load: refused by the workers, the version in use stays.
            broken = path.parent / "data" / "osrm" / "car-shortest" / "v9"
            broken.mkdir()
            for name in ("properties", "ebg_nodes", "ramIndex", "fileIndex", "hsgr"):
                (broken / f"monaco.osrm.{name}").write_text("not a dataset")
            refused = await c.post(f"{base}/monaco-osrm-car-shortest/version", json={"version": "v9"})
            assert refused.status_code == 503 and "version v9 can't be loaded" in refused.text, refused.text
            route = await c.get(
                f"http://127.0.0.1:{service_port}/simple/1.0.0/route",
                params={"resource": "monaco-osrm", "start": START, "end": END, "optimization": "shortest"},
            )
            assert route.status_code == 200 and route.json()["resourceVersion"] == "2016-03-05"
            health = (await c.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health")).json()
            assert health["state"] == "green", health
        assert source_file.read_text() == before
        assert "version" not in (path.parent / "sources" / "monaco-car-shortest.source").read_text()

        # The same through the roadkit command, which asks the admin listener of the server file.
        def switch(version: str) -> int:
            return roadkit_main(["switch-version", str(path), "main", "monaco-osrm-car-fastest", version])

        assert await asyncio.to_thread(switch, "v3") == 1
        assert "409: " in capsys.readouterr().err and source_file.read_text() == before
        assert await asyncio.to_thread(switch, "v2") == 0
        assert "version v2 (was unversioned)" in capsys.readouterr().out
        async with httpx.AsyncClient(timeout=60) as c:
            route = await c.get(
                f"http://127.0.0.1:{service_port}/simple/1.0.0/route", params={"resource": "monaco-osrm", "start": START, "end": END}
            )
            assert route.status_code == 200 and route.json()["resourceVersion"] == "v2"
    finally:
        await admin.stop()


def test_roadkit_prepare_builds_a_version_beside_the_data_in_use(osrm_example: Path, tmp_path: Path, capsys: Any) -> None:
    from datetime import UTC, datetime

    from roadkit.cli import main as roadkit_main

    path, _, _ = _example(osrm_example, tmp_path / "monaco")
    source_file = path.parent / "sources" / "monaco-car-fastest.source"
    before = source_file.read_text()
    dataset = path.parent / "data" / "osrm" / "car-fastest"
    assert roadkit_main(["prepare", "--config", str(path), "--source", "monaco-osrm-car-fastest", "--version"]) == 0
    built = sorted(p.name for p in dataset.iterdir() if p.is_dir() and p.name != "v2")
    assert len(built) == 1 and re.fullmatch(rf"{datetime.now(UTC):%Y%m%d}-[0-9a-f]{{10}}", built[0]), built
    assert (dataset / built[0] / "monaco.osrm.hsgr").is_file()
    assert f'{{"version": "{built[0]}"}}' in capsys.readouterr().out
    # The same inputs give the same version: nothing to build again; the source file never changes.
    assert roadkit_main(["prepare", "--config", str(path), "--source", "monaco-osrm-car-fastest", "--version"]) == 0
    assert "0 dataset(s) built" in capsys.readouterr().out
    assert source_file.read_text() == before
    assert roadkit_main(["prepare", "--config", str(path), "--version", "../up"]) == 2
    assert "--version: expected letters" in capsys.readouterr().err
