"""Services created, changed and deleted through the admin API, persisted across an administrator restart."""

from __future__ import annotations

import grp
import os
import stat
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from roadkit.config import allocator, load_server
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.process.administrator import Administrator
from roadkit.server import administrator
from tests.core.conftest import free_port, make_service, write
from tests.core.test_publication import RESOURCE, ROUTE, SOURCE_A


def configuration(port: int, **changes: Any) -> dict[str, Any]:
    """A service file as JSON: listens on ``port``, publishes into folders the administrator creates."""
    return {
        "application": {"name": "second", "title": "Second service", "description": "Created through the admin API"},
        "listeners": [{"port": port}],
        "folders": {"sources": ["second/sources"], "resources": ["second/resources"], "projections": "projections"},
    } | changes


def unstartable(root: Path, port: int) -> list[dict[str, Any]]:
    """Listeners the service can't start with: their certificate file (a TOML file) holds no certificate."""
    not_a_certificate = str(root / "service.toml")
    return [{"port": port, "certfile": not_a_certificate, "keyfile": not_a_certificate}]


def main_configuration(port: int, **changes: Any) -> dict[str, Any]:
    """The configuration of the fixture's service "main" (its own folders) as JSON, with ``changes``."""
    return configuration(port, folders={"sources": ["sources"], "resources": ["resources"], "projections": "projections"}, **changes)


class Admin:
    def __init__(self, root: Path, plugins: Plugins) -> None:
        self.root = root
        self.plugins = plugins
        self.port, self.main_port = free_port(), free_port()
        make_service(root, port=self.main_port)
        self.path = write(
            root / "server.toml",
            f"""
# The server file: the administrator keeps this comment.
[administrator.listener]
port = {self.port}  # the admin port

[[services]]
id = "main"
configuration = "service.toml"
mode = "same-process"
""",
        )
        self.base = f"http://127.0.0.1:{self.port}/admin/1.0.0"
        self.administrator: Administrator | None = None

    async def start(self) -> None:
        self.administrator = administrator(load_server(self.path), self.plugins)
        await self.administrator.start()

    async def stop(self) -> None:
        if self.administrator is not None:
            await self.administrator.stop()
            self.administrator = None

    def snapshot(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.root)): p.read_bytes() for p in sorted(self.root.rglob("*")) if p.is_file()}


@pytest.fixture
async def admin(tmp_path: Path, plugins: Plugins) -> AsyncIterator[Admin]:
    running = Admin(tmp_path, plugins)
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def test_create_modify_delete_a_service_persisted_across_restarts(admin: Admin) -> None:
    port, moved = free_port(), free_port()
    async with httpx.AsyncClient(timeout=10) as c:
        created = await c.post(
            f"{admin.base}/services", json={"id": "second", "mode": "same-process", "configuration": configuration(port)}
        )
        assert created.status_code == 201, created.text
        body = created.json()
        assert body["id"] == "second" and body["lifecycle"] == "ready"
        assert body["configuration"]["application"]["title"] == "Second service"
        service_file = admin.root / "second.service.toml"
        assert tomllib.loads(service_file.read_text()) == configuration(port)
        server_text = admin.path.read_text()
        assert "# The server file: the administrator keeps this comment." in server_text and "# the admin port" in server_text
        assert [s["id"] for s in tomllib.loads(server_text)["services"]] == ["main", "second"]
        assert (admin.root / "second" / "sources").is_dir() and (admin.root / "second" / "resources").is_dir()
        assert (await c.get(f"{admin.base}/health")).json()["state"] == "green"

        # Populated by publication, it serves routes.
        assert (await c.put(f"{admin.base}/services/second/sources/a", json=SOURCE_A)).status_code == 201
        assert (await c.put(f"{admin.base}/services/second/resources/lines", json=RESOURCE)).status_code == 201
        assert (admin.root / "second" / "sources" / "a.source").is_file()
        assert (await c.get(f"http://127.0.0.1:{port}/simple/1.0.0/route", params=ROUTE)).status_code == 200

        assert (
            await c.post(f"{admin.base}/services", json={"id": "second", "configuration": configuration(free_port())})
        ).status_code == 409

        changed = await c.put(
            f"{admin.base}/services/second",
            json={"configuration": configuration(moved, application={"name": "second", "title": "Moved", "description": "d"})},
        )
        assert changed.status_code == 200, changed.text
        assert changed.json()["configuration"]["application"]["title"] == "Moved"
        assert (await c.get(f"http://127.0.0.1:{moved}/simple/1.0.0/route", params=ROUTE)).status_code == 200
        with pytest.raises(httpx.ConnectError):
            await c.get(f"http://127.0.0.1:{port}/simple/1.0.0/route", params=ROUTE)
    await admin.stop()

    await admin.start()  # the administrator restarted: the created and changed service is back
    async with httpx.AsyncClient(timeout=10) as c:
        assert (await c.get(f"{admin.base}/services/second")).json()["configuration"]["application"]["title"] == "Moved"
        assert (await c.get(f"http://127.0.0.1:{moved}/simple/1.0.0/route", params=ROUTE)).status_code == 200
        assert (await c.delete(f"{admin.base}/services/second")).status_code == 204
        assert (await c.get(f"{admin.base}/services/second")).status_code == 404
        with pytest.raises(httpx.ConnectError):
            await c.get(f"http://127.0.0.1:{moved}/simple/1.0.0/route", params=ROUTE)
        assert (await c.delete(f"{admin.base}/services/second")).status_code == 404
        assert (await c.put(f"{admin.base}/services/second", json={"configuration": configuration(port)})).status_code == 404
    server_text = admin.path.read_text()
    assert [s["id"] for s in tomllib.loads(server_text)["services"]] == ["main"]
    assert "# The server file: the administrator keeps this comment." in server_text
    assert (admin.root / "second.service.toml").is_file(), "deleting a service keeps its files"
    await admin.stop()

    await admin.start()
    assert admin.administrator is not None and list(admin.administrator.handles) == ["main"]


async def test_invalid_service_requests_give_400_with_every_problem_and_change_nothing(admin: Admin) -> None:
    assert admin.administrator is not None
    before, handles = admin.snapshot(), dict(admin.administrator.handles)
    async with httpx.AsyncClient(timeout=10) as c:
        bad = configuration(admin.main_port, application={"name": "x"}, colour="red")
        bad["folders"] = {"projections": "nowhere"}
        response = await c.post(f"{admin.base}/services", json={"id": "second", "mode": "elsewhere", "extra": 1, "configuration": bad})
        assert response.status_code == 400
        problems = response.json()["error"]["message"].splitlines()
        service_file = admin.root / "second.service.toml"
        assert f"{service_file}: extra: unknown key (expected id, configuration, mode, workers, startup_timeout, allocator)" in problems
        assert any(p.startswith(f"{service_file}: application.title: required key is missing") for p in problems), problems
        assert any(p.startswith(f"{service_file}: (top level): unknown key(s) colour") for p in problems), problems
        text = "\n".join(problems)
        assert f"{admin.path}: services[1].mode" in text

        ports = await c.post(f"{admin.base}/services", json={"id": "second", "configuration": configuration(admin.main_port)})
        assert ports.status_code == 409  # valid, but the port is another service's
        assert (
            f"{service_file}: listeners[0].port: port {admin.main_port} is already used by service 'main'"
            in ports.json()["error"]["message"]
        )
        folders = await c.post(
            f"{admin.base}/services", json={"id": "second", "configuration": configuration(free_port(), folders={"projections": "nowhere"})}
        )
        assert folders.status_code == 409  # valid, but the server has no such folder
        assert "folders.projections: expected a folder" in folders.json()["error"]["message"]
        for body in (
            {"id": "second", "configuration": configuration(free_port(), folders={"sources": ["a\x00b"]})},
            {"id": "second", "configuration": configuration(free_port(), folders={"projections": ""})},
            {"id": "second", "configuration": configuration(free_port(), apis=[{"name": "nope", "version": "9"}])},
            {"id": "second", "configuration": configuration(free_port(), limits={"engine_timeout": -1})},
            {"id": "second", "mode": "child-process", "workers": 100_000, "configuration": configuration(free_port())},
        ):
            # Each was a 500 (NUL in a path), a service started in a failed state, or accepted (a negative time-out).
            refused = await c.post(f"{admin.base}/services", json=body)
            assert refused.status_code == 400, (body, refused.text)
        unsafe = ("../x", "..", "x/y", "second\n", ".second", "", 3)  # ids are file names: nothing that climbs or hides
        bodies = [{"id": sid, "configuration": configuration(free_port())} for sid in unsafe]
        for body in (*bodies, {"id": "second"}, {"id": "second", "configuration": None}, [1]):
            assert (await c.post(f"{admin.base}/services", json=body)).status_code == 400, body

        nulls = await c.put(
            f"{admin.base}/services/main", json={"mode": None, "workers": {"n": None}, "configuration": configuration(free_port())}
        )
        assert nulls.status_code == 400
        assert f"{admin.root / 'service.toml'}: mode: null is not allowed (leave the key out instead)" in nulls.json()["error"]["message"]
        assert (
            f"{admin.root / 'service.toml'}: workers.n: null is not allowed (leave the key out instead)" in nulls.json()["error"]["message"]
        )
        modify = await c.put(
            f"{admin.base}/services/main", json={"id": "other", "configuration": configuration(free_port(), listeners="x")}
        )
        assert modify.status_code == 400
        assert f"{admin.root / 'service.toml'}: id: expected 'main' (the id in the URL), got 'other'" in modify.json()["error"]["message"]
        assert (await c.get(f"http://127.0.0.1:{admin.main_port}/simple/1.0.0/route", params=ROUTE)).status_code == 200
    assert admin.snapshot() == before
    assert admin.administrator.handles == handles
    assert [m.id for m in admin.administrator.config.services] == ["main"]


async def test_a_change_the_service_cannot_start_with_keeps_the_previous_one(admin: Admin) -> None:
    async with httpx.AsyncClient(timeout=10) as c:
        before = admin.snapshot()
        # The new service file is valid, but a resource file in the folders it now names is not: the new
        # service fails to load while the old one is still serving.
        failing = main_configuration(admin.main_port)
        write(
            admin.root / "resources" / "broken.resource",
            'id = "broken"\ntype = "straightline"\nsources = ["a"]\n[operations.route]\nprofile = { values = 3 }\n',
        )
        response = await c.put(f"{admin.base}/services/main", json={"configuration": failing})
        assert response.status_code == 503, response.text
        assert "previous one keeps serving" in response.json()["error"]["message"]
        (admin.root / "resources" / "broken.resource").unlink()
        assert admin.snapshot() == before
        assert (await c.get(f"http://127.0.0.1:{admin.main_port}/simple/1.0.0/route", params=ROUTE)).status_code == 200


async def test_a_changed_service_reloads_under_load_without_a_failed_request(admin: Admin) -> None:
    import asyncio

    stop = asyncio.Event()

    async def load() -> list[object]:
        outcomes: list[object] = []
        async with httpx.AsyncClient(timeout=10) as client:  # keep-alive connections, no retry
            while not stop.is_set():
                try:
                    outcomes.append((await client.get(f"http://127.0.0.1:{admin.main_port}/simple/1.0.0/route", params=ROUTE)).status_code)
                except httpx.HTTPError as exc:
                    outcomes.append(type(exc).__name__)
        return outcomes

    clients = [asyncio.create_task(load()) for _ in range(4)]
    async with httpx.AsyncClient(timeout=30) as c:
        for i in range(3):
            changed = main_configuration(admin.main_port, application={"name": "t", "title": f"v{i}", "description": "d"})
            response = await c.put(f"{admin.base}/services/main", json={"configuration": changed})
            assert response.status_code == 200, response.text
            assert response.json()["configuration"]["application"]["title"] == f"v{i}"
            await asyncio.sleep(0.2)
        # The running service is the last configuration (a reload that changed nothing would also lose no request).
        capabilities = await c.get(f"http://127.0.0.1:{admin.main_port}/simple/1.0.0/getcapabilities")
        assert capabilities.json()["info"]["title"] == "v2", capabilities.json()["info"]
    stop.set()
    outcomes = [outcome for task in clients for outcome in await task]
    failed = [o for o in outcomes if o != 200]
    assert len(outcomes) > 20 and failed == [], f"{len(outcomes)} requests, failed: {failed[:10]}"


async def test_a_road2_administration_file_is_never_rewritten(tmp_path: Path, plugins: Plugins) -> None:
    import json
    import shutil

    admin_port, service_port = free_port(), free_port()
    make_service(tmp_path, port=service_port)
    shutil.copy(Path(__file__).parent / "road2" / "log4js-administration.json", tmp_path)
    path = write(
        tmp_path / "road2.json",
        json.dumps(
            {
                "administration": {
                    "api": {"name": "admin", "version": "1.0.0"},
                    "services": [{"id": "main", "configuration": "./service.toml", "creationType": "sameProcess"}],
                    "network": {"server": {"id": "administrator", "https": "false", "host": "127.0.0.1", "port": str(admin_port)}},
                    "logs": {"configuration": "./log4js-administration.json"},
                }
            }
        ),
    )
    before = path.read_text()
    admin = administrator(load_server(path), plugins)
    await admin.start()
    try:
        base = f"http://127.0.0.1:{admin_port}/admin/1.0.0"
        async with httpx.AsyncClient(timeout=10) as c:
            refused = await c.post(f"{base}/services", json={"id": "second", "configuration": configuration(free_port())})
            assert refused.status_code == 409 and "Road2 administration file" in refused.json()["error"]["message"]
            assert (await c.delete(f"{base}/services/main")).status_code == 409
            same = main_configuration(service_port, application={"name": "t", "title": "Changed", "description": "d"})
            changed = await c.put(f"{base}/services/main", json={"configuration": same})  # the service file itself may change
            assert changed.status_code == 200, changed.text
            assert (await c.get(f"http://127.0.0.1:{service_port}/simple/1.0.0/route", params=ROUTE)).status_code == 200
        assert path.read_text() == before
        assert not (tmp_path / "second.service.toml").exists()
    finally:
        await admin.stop()


async def test_services_created_and_deleted_while_the_administrator_starts(tmp_path: Path, plugins: Plugins) -> None:
    import asyncio

    from tests.core.conftest import StraightLineSource

    setup = Admin(tmp_path, plugins)
    write(tmp_path / "third.toml", (tmp_path / "service.toml").read_text().replace(f"port = {setup.main_port}", f"port = {free_port()}"))
    setup.path.write_text(setup.path.read_text() + '\n[[services]]\nid = "third"\nconfiguration = "third.toml"\nmode = "same-process"\n')
    admin = administrator(load_server(setup.path), plugins)
    StraightLineSource.gate = asyncio.Event()  # "main" stays starting until the gate opens
    starting = asyncio.create_task(admin.start())
    try:
        async with httpx.AsyncClient(timeout=10) as c:
            for _ in range(200):
                try:
                    await c.get(f"{setup.base}/version")
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.02)
            empty = configuration(free_port())
            created = await c.post(f"{setup.base}/services", json={"id": "second", "mode": "same-process", "configuration": empty})
            assert created.status_code == 201, created.text
            deleting = asyncio.create_task(c.delete(f"{setup.base}/services/third"))  # not started yet
            await asyncio.sleep(0.1)
            StraightLineSource.gate.set()
            await starting
            assert (await deleting).status_code == 204
            health = (await c.get(f"{setup.base}/health?verbose=true")).json()
            assert sorted(s["id"] for s in health["services"]) == ["main", "second"]
            assert admin.handles.keys() == {"main", "second"}
            assert "third" not in setup.path.read_text()
    finally:
        StraightLineSource.gate.set()
        await asyncio.gather(starting, return_exceptions=True)
        await admin.stop()


async def test_a_listener_host_that_names_no_address_is_a_400(admin: Admin) -> None:
    assert admin.administrator is not None
    before = admin.snapshot()
    async with httpx.AsyncClient(timeout=10) as c:
        for host in ("", "\x13V", "a..b", "-a", "my_host", "fe80::1%eth0", ":::", "x" * 64):
            # Each started a service that could not bind (a failed service, or a 503 on a change).
            body = {"id": "second", "configuration": configuration(free_port(), listeners=[{"host": host, "port": free_port()}])}
            created = await c.post(f"{admin.base}/services", json=body)
            assert created.status_code == 400, (host, created.text)
            assert (
                f"listeners[0].host: expected an IP address or a host name (0.0.0.0 for every interface), got {host!r}"
                in (created.json()["error"]["message"])
            )
        assert admin.snapshot() == before
        for i, host in enumerate(("localhost", "127.0.0.1", "::1")):
            body = {
                "id": f"h{i}",
                "mode": "same-process",
                "configuration": configuration(0, listeners=[{"host": host, "port": free_port()}]),
            }
            created = await c.post(f"{admin.base}/services", json=body)
            assert created.status_code == 201 and created.json()["lifecycle"] == "ready", (host, created.text)


async def test_a_change_of_start_up_settings_the_service_cannot_start_with_keeps_it_serving(admin: Admin) -> None:
    # Before: the old service was stopped, the new one failed to start, and the answer was a 200.
    assert admin.administrator is not None
    failing = main_configuration(admin.main_port, listeners=unstartable(admin.root, admin.main_port))
    before, handle = admin.snapshot(), admin.administrator.handles["main"]
    async with httpx.AsyncClient(timeout=10) as c:
        response = await c.put(
            f"{admin.base}/services/main", json={"mode": "same-process", "startup_timeout": 30, "configuration": failing}
        )
        assert response.status_code == 503, response.text
        assert "previous one keeps serving" in response.json()["error"]["message"]
        assert (await c.get(f"http://127.0.0.1:{admin.main_port}/simple/1.0.0/route", params=ROUTE)).status_code == 200
        assert (await c.get(f"{admin.base}/services/main")).json()["lifecycle"] == "ready"
    assert admin.snapshot() == before
    assert admin.administrator.handles["main"] is handle and handle.managed.startup_timeout == 120.0
    assert admin.administrator.config.services[0].startup_timeout == 120.0


async def test_a_change_of_mode_the_service_cannot_start_in_restores_the_previous_one(admin: Admin) -> None:
    # Before: the service stayed down (failed) with the new files, and the answer was a 200.
    assert admin.administrator is not None
    failing = main_configuration(admin.main_port, listeners=unstartable(admin.root, admin.main_port))
    before = admin.snapshot()
    async with httpx.AsyncClient(timeout=30) as c:
        response = await c.put(
            f"{admin.base}/services/main", json={"mode": "child-process", "startup_timeout": 10, "configuration": failing}
        )
        assert response.status_code == 503, response.text
        message = response.json()["error"]["message"]
        assert "can't start with its new configuration" in message and "previous configuration was restored" in message, message
        described = (await c.get(f"{admin.base}/services/main")).json()
        assert described["mode"] == "same-process" and described["lifecycle"] == "ready", described
        assert (await c.get(f"http://127.0.0.1:{admin.main_port}/simple/1.0.0/route", params=ROUTE)).status_code == 200
    assert admin.snapshot() == before
    assert admin.administrator.config.services[0].mode == "same-process"


async def test_mode_or_workers_that_do_not_go_with_the_current_ones_are_a_409(admin: Admin) -> None:
    assert admin.administrator is not None
    same = main_configuration(admin.main_port)
    before = admin.snapshot()
    async with httpx.AsyncClient(timeout=10) as c:
        # "main" runs in the same process: several workers need child processes, which the request does not ask for.
        response = await c.put(f"{admin.base}/services/main", json={"workers": 2, "configuration": same})
        assert response.status_code == 409, response.text
        assert (
            f"{admin.path}: services[0].mode: service 'main' runs in the administrator's process "
            '(mode = "same-process"), with one worker: send mode = "child-process" with workers = 2'
        ) in response.json()["error"]["message"]
        # The same request with another problem is a 400 naming both.
        invalid = await c.put(f"{admin.base}/services/main", json={"workers": 2, "configuration": same | {"colour": 1}})
        assert invalid.status_code == 400 and "colour" in invalid.json()["error"]["message"]
        assert "send mode" in invalid.json()["error"]["message"]
        # Invalid on its own (whatever the current state): a 400.
        alone = await c.put(f"{admin.base}/services/main", json={"mode": "same-process", "workers": 2, "configuration": same})
        assert alone.status_code == 400, alone.text
    assert admin.snapshot() == before


async def test_a_server_file_changed_by_hand_is_a_409_for_service_writes(admin: Admin) -> None:
    assert admin.administrator is not None
    text = admin.path.read_text()
    async with httpx.AsyncClient(timeout=10) as c:
        for broken in ("[administrator.listener\n", text + "\n[administrator.logging]\nlevel = 3\n"):
            admin.path.write_text(broken)
            created = await c.post(
                f"{admin.base}/services", json={"id": "second", "mode": "same-process", "configuration": configuration(free_port())}
            )
            assert created.status_code == 409, created.text
            assert str(admin.path) in created.json()["error"]["message"]
            deleted = await c.delete(f"{admin.base}/services/main")
            assert deleted.status_code == 409, deleted.text
            assert admin.path.read_text() == broken
        assert "second" not in admin.administrator.handles and not (admin.root / "second.service.toml").exists()
        # A service taken out of the file by hand is still stopped by a DELETE.
        admin.path.write_text(text.split("[[services]]")[0])
        assert (await c.delete(f"{admin.base}/services/main")).status_code == 204
        assert "main" not in admin.administrator.handles
        with pytest.raises(httpx.ConnectError):
            await c.get(f"http://127.0.0.1:{admin.main_port}/simple/1.0.0/route", params=ROUTE)


async def test_a_change_of_port_that_fails_to_start_leaves_the_sockets_as_they_were(admin: Admin) -> None:
    # Before: the failed start had taken the old socket out of the service's sockets (it stayed open in the
    # old workers) and kept the new one bound: every later restart failed with "Address already in use".
    import socket

    not_a_certificate = str(admin.root / "service.toml")
    async with httpx.AsyncClient(timeout=30) as c:
        for mode in ("child-process", "same-process"):
            sid, port, moved = mode.split("-")[0], free_port(), free_port()
            created = await c.post(f"{admin.base}/services", json={"id": sid, "mode": mode, "configuration": configuration(port)})
            assert created.status_code == 201 and created.json()["lifecycle"] == "ready", created.text
            # Each fails once the new port is bound: the service's server can't load a certificate from a file that holds none.
            https = {"port": moved, "certfile": not_a_certificate, "keyfile": not_a_certificate}
            failing = {"mode": mode, "startup_timeout": 10, "configuration": configuration(moved, listeners=[https])}
            response = await c.put(f"{admin.base}/services/{sid}", json=failing)
            assert response.status_code == 503, response.text
            if mode == "same-process":
                assert f"can't load the certificate {not_a_certificate}" in response.json()["error"]["message"]
            with socket.create_server(("127.0.0.1", moved)):
                pass  # the new port is free again
            restarted = await c.get(f"{admin.base}/services/{sid}/restart")
            assert restarted.status_code == 200 and restarted.json()["lifecycle"] == "ready", restarted.text
            assert (await c.get(f"http://127.0.0.1:{port}/simple/1.0.0/getcapabilities")).status_code == 200
            assert (await c.delete(f"{admin.base}/services/{sid}")).status_code == 204


async def test_a_service_that_cannot_start_is_not_created(admin: Admin) -> None:
    # Before: a 201 with a failed service left in the server file, its files and the administrator's health (red, 503).
    import socket

    assert admin.administrator is not None
    before = admin.snapshot()
    async with httpx.AsyncClient(timeout=30) as c:
        with socket.create_server(("127.0.0.1", 0)) as taken:  # a port another program listens on
            port = taken.getsockname()[1]
            for mode, body in (
                (
                    "child-process",
                    {"startup_timeout": 10, "configuration": configuration(free_port(), listeners=unstartable(admin.root, free_port()))},
                ),
                ("same-process", {"configuration": configuration(port)}),
                ("child-process", {"configuration": configuration(port)}),
            ):
                response = await c.post(f"{admin.base}/services", json={"id": "second", "mode": mode, **body})
                assert response.status_code == 503, (mode, body, response.text)
                message = response.json()["error"]["message"]
                assert message.startswith("Service second can't start (") and message.endswith("): nothing was created"), message
                assert admin.snapshot() == before
                assert list(admin.administrator.handles) == ["main"]
                assert [m.id for m in admin.administrator.config.services] == ["main"]
                assert (await c.get(f"{admin.base}/health")).status_code == 200
                assert not (admin.root / "second").exists(), "the folders created for it are gone"
        created = await c.post(f"{admin.base}/services", json={"id": "second", "configuration": configuration(free_port())})
        assert created.status_code == 201, created.text


async def test_a_large_service_document_does_not_freeze_the_administrator(admin: Admin) -> None:
    # Before: the service file was written with tomlkit, quadratic in the number of items: a body of 30,000
    # keywords (330 kB, under the 1 MB limit) kept the administrator's event loop busy for about a minute.
    import asyncio

    keywords = [f"keyword-{i}" for i in range(30_000)]
    body = {"id": "large", "mode": "same-process", "configuration": configuration(free_port())}
    body["configuration"]["application"]["keywords"] = keywords
    async with httpx.AsyncClient(timeout=30) as c:
        creating = asyncio.create_task(c.post(f"{admin.base}/services", json=body))
        await asyncio.sleep(0.05)
        assert (await c.get(f"{admin.base}/version")).status_code == 200, "the administrator answers meanwhile"
        created = await creating
        assert created.status_code == 201, created.text
    assert tomllib.loads((admin.root / "large.service.toml").read_text())["application"]["keywords"] == keywords


async def test_an_integer_beyond_64_bits_is_a_400_and_a_stored_one_is_still_shown(admin: Admin) -> None:
    # Found by schemathesis: a service created with limits.max_body_bytes = 10**30 was stored (TOML has no
    # such integer); from then on GET /services and GET /services/{id} answered 500 for everyone.
    big = 10**30
    async with httpx.AsyncClient(timeout=30) as c:
        body = {"id": "big", "mode": "same-process", "configuration": configuration(free_port(), limits={"max_body_bytes": big})}
        refused = await c.post(f"{admin.base}/services", json=body)
        assert refused.status_code == 400, refused.text
        assert (
            f"limits.max_body_bytes: expected an integer of at most 64 bits (a TOML file holds no larger), got {big}"
            in (refused.json()["error"]["message"])
        )
        source = await c.put(f"{admin.base}/services/main/sources/a", json={"id": "a", "type": "straightline", "delay": -(2**64)})
        assert source.status_code == 400 and "delay: expected an integer of at most 64 bits" in source.json()["error"]["message"]
        # A service file edited by hand with such an integer is shown as it is, never a 500.
        service_file = admin.root / "service.toml"
        service_file.write_text(service_file.read_text() + f"\n[limits]\nmax_body_bytes = {big}\n")
        listed = await c.get(f"{admin.base}/services")
        assert listed.status_code == 200, listed.text
        assert listed.json()[0]["configuration"]["limits"]["max_body_bytes"] == big
        assert (await c.get(f"{admin.base}/services/main")).status_code == 200


async def test_the_allocator_of_a_service_is_set_and_changed_through_the_api(admin: Admin) -> None:
    port = free_port()
    async with httpx.AsyncClient(timeout=30) as c:
        created = await c.post(
            f"{admin.base}/services",
            json={"id": "second", "mode": "child-process", "workers": 1, "allocator": "system", "configuration": configuration(port)},
        )
        assert created.status_code == 201, created.text
        assert created.json()["allocator"] == "system"
        assert [p["allocator"] for p in created.json()["processes"]] == ["system"]
        assert tomllib.loads(admin.path.read_text())["services"][1]["allocator"] == "system"

        # Changed: the workers are replaced by ones started with the new allocator.
        changed = await c.put(f"{admin.base}/services/second", json={"allocator": "jemalloc", "configuration": configuration(port)})
        assert changed.status_code == 200, changed.text
        assert changed.json()["allocator"] == "jemalloc"
        assert [p["allocator"] for p in changed.json()["processes"]] == ["jemalloc"]
        assert tomllib.loads(admin.path.read_text())["services"][1]["allocator"] == "jemalloc"

        before = admin.snapshot()
        wrong = await c.put(f"{admin.base}/services/second", json={"allocator": "fast", "configuration": configuration(port)})
        assert wrong.status_code == 400, wrong.text
        expected = 'expected "auto", "system", "tcmalloc", "jemalloc" or the absolute path of a shared library'
        assert f"{admin.path}: services[1].allocator: {expected}, got 'fast'" in wrong.json()["error"]["message"]
        # A well-formed allocator this machine does not have: the request is valid, the machine lacks it (409).
        # A library outside the system's library folders: code the administrator does not allow in its workers (400).
        outside = await c.put(
            f"{admin.base}/services/second", json={"allocator": "/nowhere/libfast.so", "configuration": configuration(port)}
        )
        assert outside.status_code == 400, outside.text
        assert (
            f'{admin.path}: services[1].allocator: expected "auto", "system", "tcmalloc", "jemalloc", or a library'
            in outside.json()["error"]["message"]
        )
        system = allocator.library_folders()[-1] / "libfast-missing.so"
        missing = await c.put(f"{admin.base}/services/second", json={"allocator": str(system), "configuration": configuration(port)})
        assert missing.status_code == 409, missing.text
        assert f"{admin.path}: services[1].allocator: {expected}, got '{system}' (not found)" in missing.json()["error"]["message"]
        # "main" runs in the administrator's process, started already: its allocator can't be chosen.
        same = await c.put(
            f"{admin.base}/services/main", json={"allocator": "jemalloc", "configuration": main_configuration(admin.main_port)}
        )
        assert same.status_code == 409, same.text
        assert f"{admin.path}: services[0].allocator: 'jemalloc' needs mode = \"child-process\"" in same.json()["error"]["message"]
        assert admin.snapshot() == before
        assert [p["allocator"] for p in (await c.get(f"{admin.base}/services/second")).json()["processes"]] == ["jemalloc"]


async def test_durations_beyond_their_bounds_are_a_400_naming_the_bounds(admin: Admin) -> None:
    # Before: a start-up time-out of 5e-324 s was written, and the restart it caused answered a 503.
    before = admin.snapshot()
    same = main_configuration(admin.main_port)
    async with httpx.AsyncClient(timeout=30) as c:
        for body, problem in (
            ({"startup_timeout": 5e-324}, "startup_timeout: expected a number of seconds from 10 to 86400, got 5e-324"),
            ({"startup_timeout": 1e308}, "startup_timeout: expected a number of seconds from 10 to 86400, got 1e+308"),
            (
                {"configuration": main_configuration(admin.main_port, limits={"engine_timeout": 1e300})},
                "limits.engine_timeout: expected a number of seconds from 0.001 to 3600, got 1e+300",
            ),
            (
                {"configuration": main_configuration(admin.main_port, limits={"connect_retry_initial": 0.001})},
                "limits.connect_retry_initial: expected a number of seconds from 0.01 to 86400, got 0.001",
            ),
        ):
            response = await c.put(f"{admin.base}/services/main", json={"configuration": same} | body)
            assert response.status_code == 400 and problem in response.json()["error"]["message"], response.text
        schemas = (await c.get(f"{admin.base}/openapi.json")).json()["components"]["schemas"]
        assert schemas["ServiceChange"]["properties"]["startup_timeout"] | {"description": ""} == {
            "type": "number",
            "minimum": 10.0,
            "maximum": 86400.0,
            "description": "",
        }
        assert (await c.get(f"{admin.base}/services/main")).json()["lifecycle"] == "ready"
    assert admin.snapshot() == before


def tree(*roots: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every file and folder under ``roots`` with its mode (and a file's content): what a refused write must leave as it was."""
    found: dict[str, tuple[int, bytes | None]] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            info = path.lstat()
            found[str(path)] = (info.st_mode, path.read_bytes() if path.is_file() and not path.is_symlink() else None)
    return found


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_service_writes_naming_paths_or_libraries_the_administrator_does_not_allow_are_400_and_change_nothing(
    admin: Admin, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "cert.pem").write_text("not a certificate")
    library = outside / "libevil.so"
    library.write_bytes(b"\x7fELF" + b"\x00" * 60)  # "a shared library" to the loader: code in every worker
    (admin.root / "link").symlink_to(outside, target_is_directory=True)
    (outside / "cors.json").write_text('{"origin": "*"}')
    (outside / "log4js.json").write_text('{"mainConf": {}}')
    road2 = {"name": "r", "title": "R", "description": "R", "sources": {"directories": ["sources"]}}
    before = tree(admin.root, outside)
    port = free_port()
    refused: list[tuple[dict[str, Any], str]] = [
        ({"configuration": configuration(port, folders={"sources": [f"../{outside.name}/sources"]})}, "folders.sources[0]"),
        ({"configuration": configuration(port, folders={"sources": [str(outside / "sources")]})}, "folders.sources[0]"),
        ({"configuration": configuration(port, folders={"resources": ["link/resources"]})}, "folders.resources[0]"),
        ({"configuration": configuration(port, folders={"projections": str(outside)})}, "folders.projections"),
        ({"configuration": configuration(port, folders={"sources": ["~/sources"]})}, "folders.sources[0]"),
        (
            {"configuration": configuration(port, listeners=[{"port": port, "certfile": "link/cert.pem", "keyfile": "link/cert.pem"}])},
            "listeners[0].certfile",
        ),
        # The workers append to the access log: a file elsewhere (a shell's profile...) would grow with lines a client chose.
        ({"configuration": configuration(port) | {"access_log": {"enabled": True, "file": "link/profile"}}}, "access_log.file"),
        # The API keys' file the workers read, the routes' store they write.
        ({"configuration": configuration(port) | {"access": {"keys_file": "link/keys.toml"}}}, "access.keys_file"),
        ({"configuration": configuration(port) | {"ogcapi_routes": {"store": str(outside / "routes.sqlite")}}}, "ogcapi_routes.store"),
        ({"configuration": configuration(port) | {"password": "secret"}}, "password"),
        # Road2's shape of a service file: its folders as loaded.
        (
            {"configuration": {"application": {"name": "r", "title": "R", "description": "R", "sources": {"directories": [str(outside)]}}}},
            "folders.sources[0]",
        ),
        # Road2's CORS and log4js files, read when the service loads: never outside either.
        (
            {"configuration": {"application": road2 | {"network": {"cors": {"configuration": str(outside / "cors.json")}}}}},
            "application.network.cors.configuration",
        ),
        ({"configuration": {"application": road2 | {"logs": {"configuration": "link/log4js.json"}}}}, "application.logs.configuration"),
        ({"mode": "child-process", "allocator": str(library), "configuration": configuration(port)}, "allocator"),
        ({"mode": "child-process", "allocator": f"{admin.root}/link/libevil.so", "configuration": configuration(port)}, "allocator"),
    ]
    async with httpx.AsyncClient(timeout=10) as c:
        for body, key in refused:
            for method, url in (("POST", f"{admin.base}/services"), ("PUT", f"{admin.base}/services/main")):
                sent = body | ({"id": "second"} if method == "POST" else {"configuration": main_configuration(admin.main_port)})
                roadkit_shape = "folders" in body["configuration"] or "password" in body["configuration"]
                if "allocator" not in body:
                    # "main" keeps its port (else a port conflict would hide nothing, but say more).
                    keep_port = method == "PUT" and roadkit_shape and "listeners" not in body["configuration"]
                    sent["configuration"] = body["configuration"] | ({"listeners": [{"port": admin.main_port}]} if keep_port else {})
                response = await c.request(method, url, json=sent)
                assert response.status_code == 400, (method, body, response.text)
                # The key, and why: a folder or library the administrator does not allow, a password.
                named = [p for p in response.json()["error"]["message"].splitlines() if f": {key}: " in p or f".{key}: " in p]
                assert [p for p in named if "allow" in p or "root" in p or "password" in p], (key, response.text)
        assert (await c.get(f"http://127.0.0.1:{admin.main_port}/simple/1.0.0/route", params=ROUTE)).status_code == 200
    assert tree(admin.root, outside) == before
    assert not (outside / "sources").exists() and not (outside / "resources").exists()


async def test_a_library_of_the_system_folders_owned_by_root_is_an_allowed_allocator(admin: Admin) -> None:
    library = allocator.find("jemalloc") or allocator.find("tcmalloc")
    if library is None:
        pytest.skip("no tcmalloc or jemalloc installed")
    if library.stat().st_uid != 0:
        pytest.skip(f"{library} is not root's")
    async with httpx.AsyncClient(timeout=30) as c:
        created = await c.post(
            f"{admin.base}/services",
            json={"id": "second", "mode": "child-process", "allocator": str(library), "configuration": configuration(free_port())},
        )
        assert created.status_code == 201, created.text
        assert created.json()["allocator"] == str(library)


async def test_files_the_administrator_writes_are_its_own_0600_and_its_folders_0700(admin: Admin) -> None:
    async with httpx.AsyncClient(timeout=10) as c:
        body = {"id": "second", "mode": "same-process", "configuration": configuration(free_port())}
        created = await c.post(f"{admin.base}/services", json=body)
        assert created.status_code == 201, created.text
        published = await c.put(f"{admin.base}/services/second/sources/a", json=SOURCE_A)
        assert published.status_code == 201, published.text
    for path in (admin.path, admin.root / "second.service.toml", admin.root / "second" / "sources" / "a.source"):
        assert mode(path) == 0o600, path
    for folder in (admin.root / "second", admin.root / "second" / "sources", admin.root / "second" / "resources"):
        assert mode(folder) == 0o700, folder


async def test_writes_go_where_the_server_file_allows_and_its_group_reads_them(
    tmp_path: Path, plugins: Plugins, tmp_path_factory: pytest.TempPathFactory
) -> None:
    group = "nogroup" if "nogroup" in {g.gr_name for g in grp.getgrall()} else grp.getgrgid(os.getgid()).gr_name
    shared = tmp_path_factory.mktemp("shared")
    running = Admin(tmp_path, plugins)
    with running.path.open("a") as server:
        server.write(f'\n[administrator.writes]\nfolders = [".", "{shared}"]\ngroup = "{group}"\n')
    await running.start()
    try:
        async with httpx.AsyncClient(timeout=10) as c:
            folders = {"sources": [str(shared / "sources")], "resources": ["second/resources"], "projections": "projections"}
            body = {"id": "second", "mode": "same-process", "configuration": configuration(free_port(), folders=folders)}
            created = await c.post(f"{running.base}/services", json=body)
            assert created.status_code == 201, created.text
            published = await c.put(f"{running.base}/services/second/sources/a", json=SOURCE_A)
            assert published.status_code == 201, published.text
    finally:
        await running.stop()
    gid = grp.getgrnam(group).gr_gid
    for path in (running.path, tmp_path / "second.service.toml", shared / "sources" / "a.source"):
        assert (mode(path), path.stat().st_gid) == (0o640, gid), path
    assert (mode(shared / "sources"), (shared / "sources").stat().st_gid) == (0o750, gid)


def test_write_settings_are_checked_naming_the_key(tmp_path: Path) -> None:
    server = write(
        tmp_path / "server.toml",
        '[administrator.writes]\nfolders = ["nowhere"]\nhosts = ["db.example.org", "10.0.0.0/8", "not a host!"]\ngroup = "nosuchgroup"\n',
    )
    with pytest.raises(ConfigurationError) as raised:
        load_server(server)
    assert raised.value.problems == [
        f"{server}: administrator.writes.folders[0]: expected a folder, got 'nowhere' (not found)",
        f"{server}: administrator.writes.hosts[2]: expected a host name, an IP address or a network (10.0.0.0/8), got 'not a host!'",
        f"{server}: administrator.writes.group: expected a group of this machine, got 'nosuchgroup' (unknown)",
    ]


async def test_a_listener_host_that_is_not_an_address_of_this_machine_is_a_409(admin: Admin) -> None:
    # Before: the service was started, could not bind, and the write answered a 503.
    before = admin.snapshot()
    async with httpx.AsyncClient(timeout=30) as c:
        for host in ("192.0.2.1", "::ab:20"):  # a documentation network's address; an IPv6 address no interface has
            body = {"id": "second", "configuration": configuration(free_port(), listeners=[{"host": host, "port": free_port()}])}
            response = await c.post(f"{admin.base}/services", json=body)
            assert response.status_code == 409, (host, response.text)
            assert f"listeners[0].host: {host!r} is not an address of this machine" in response.json()["error"]["message"]
            changed = await c.put(f"{admin.base}/services/main", json={"configuration": body["configuration"]})
            assert changed.status_code == 409, (host, changed.text)
    assert admin.snapshot() == before
