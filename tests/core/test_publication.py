"""Publication through the admin API: sources and resources read, written and removed on a running service."""

from __future__ import annotations

import asyncio
import os
import tomllib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from roadkit import hookimpl
from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.process.administrator import Administrator
from roadkit.routing.source import Source
from roadkit.server import administrator
from roadkit.serving.documents import is_safe_id
from roadkit.testing.services import plugins_for_tests
from tests.core.conftest import StraightLineSource, TestPlugin, free_port, make_service, write

SOURCE_A = {"id": "a", "type": "straightline", "profiles": ["car"]}
RESOURCE = {
    "id": "lines",
    "type": "straightline",
    "sources": ["a"],
    "operations": {"route": {"start": {"bbox": "-10,-10,10,10"}, "end": {"bbox": "-10,-10,10,10"}}, "nearest": {}},
}
ROUTE = {"resource": "lines", "start": "0,0", "end": "1,1"}


def empty_server(root: Path, admin_port: int, service_port: int) -> Path:
    """A server whose only service has no source and no resource."""
    make_service(root, port=service_port, sources={}, resource_sources="")
    return write(
        root / "server.toml",
        f"""
# A comment the administrator keeps.
[administrator.listener]
port = {admin_port}

[[services]]
id = "main"
configuration = "service.toml"
mode = "same-process"
""",
    )


class Running:
    """An administrator on free ports with an HTTP client; ``admin`` and ``service`` are base URLs."""

    def __init__(self, root: Path, admin: Administrator, admin_port: int, service_port: int, client: httpx.AsyncClient) -> None:
        self.root = root
        self.administrator = admin
        self.admin = f"http://127.0.0.1:{admin_port}/admin/1.0.0"
        self.service = f"http://127.0.0.1:{service_port}"
        self.client = client

    async def route(self, **params: str) -> httpx.Response:
        return await self.client.get(f"{self.service}/simple/1.0.0/route", params=ROUTE | params)

    def snapshot(self) -> dict[str, bytes]:
        """Every file under the service folder, to prove a refused write changed nothing."""
        return {str(p.relative_to(self.root)): p.read_bytes() for p in sorted(self.root.rglob("*")) if p.is_file()}


@pytest.fixture
async def running(tmp_path: Path, plugins: Plugins) -> AsyncIterator[Running]:
    admin_port, service_port = free_port(), free_port()
    admin = administrator(load_server(empty_server(tmp_path, admin_port, service_port)), plugins)
    await admin.start()
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            yield Running(tmp_path, admin, admin_port, service_port, client)
    finally:
        await admin.stop()


def memory(admin: Administrator) -> tuple[dict[str, Any], dict[str, Any]]:
    service = admin.handles["main"].service  # type: ignore[attr-defined]
    return dict(service.sources), dict(service.resources)


async def test_an_empty_service_populated_through_the_admin_api_serves_routes(running: Running) -> None:
    c = running.client
    assert (await running.route()).json()["error"]["message"] == "Operation 'route' is not permitted on this service"
    assert (await c.get(f"{running.admin}/services/main/sources")).json() == []

    created = await c.put(f"{running.admin}/services/main/sources/a", json={"type": "straightline", "profiles": ["car"]})
    assert created.status_code == 201, created.text
    assert created.json() == SOURCE_A
    assert tomllib.loads((running.root / "sources" / "a.source").read_text()) == SOURCE_A
    health = (await c.get(f"{running.admin}/health?verbose=true")).json()
    assert health["services"][0]["sources"] == [{"id": "a", "type": "straightline", "state": "green"}]

    created = await c.put(f"{running.admin}/services/main/resources/lines", json=RESOURCE)
    assert created.status_code == 201, created.text
    assert (running.root / "resources" / "lines.resource").is_file()
    route = await running.route()
    assert route.status_code == 200, route.text
    assert route.json()["resource"] == "lines"

    assert (await c.get(f"{running.admin}/services/main/resources/lines")).json() == RESOURCE
    assert [r["id"] for r in (await c.get(f"{running.admin}/services/main/resources")).json()] == ["lines"]
    capabilities = (await c.get(f"{running.service}/simple/1.0.0/getcapabilities")).json()
    assert [r["id"] for r in capabilities["resources"]] == ["lines"]


async def test_a_changed_resource_applies_from_the_next_request(running: Running) -> None:
    c = running.client
    await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A)
    await c.put(f"{running.admin}/services/main/resources/lines", json=RESOURCE)
    assert (await running.route(start="5,5")).status_code == 200
    narrower = RESOURCE | {"operations": {"route": {"start": {"bbox": "-1,-1,1,1"}, "end": {"bbox": "-1,-1,1,1"}}}}
    changed = await c.put(f"{running.admin}/services/main/resources/lines", json=narrower)
    assert changed.status_code == 200, changed.text
    refused = await running.route(start="5,5")
    assert refused.status_code == 400 and "start" in refused.json()["error"]["message"]
    assert (await running.route(start="0.5,0.5")).status_code == 200
    assert "nearest" not in running.administrator.handles["main"].service.resources["lines"].operations  # type: ignore[attr-defined]


async def test_a_replaced_source_is_connected_before_it_serves(running: Running) -> None:
    c = running.client
    await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A)
    await c.put(f"{running.admin}/services/main/resources/lines", json=RESOURCE)
    before = running.administrator.handles["main"].service.sources["a"]  # type: ignore[attr-defined]
    StraightLineSource.gate = asyncio.Event()
    replacing = asyncio.create_task(c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A | {"profiles": ["car", "bike"]}))
    for _ in range(100):
        await asyncio.sleep(0.02)
        if StraightLineSource.connections >= 2:
            break
    # The new engine is still connecting: requests are served by the old one, none refused.
    results = await asyncio.gather(*(running.route() for _ in range(10)))
    assert [r.status_code for r in results] == [200] * 10
    assert running.administrator.handles["main"].service.sources["a"] is before  # type: ignore[attr-defined]
    StraightLineSource.gate.set()
    assert (await replacing).status_code == 200
    after = running.administrator.handles["main"].service
    assert after.sources["a"] is not before  # type: ignore[attr-defined]
    assert after.resources["lines"].sources == [after.sources["a"]]  # type: ignore[attr-defined]
    assert (await running.route(profile="bike")).status_code == 200


async def test_removal_of_resources_and_sources(running: Running) -> None:
    c = running.client
    await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A)
    await c.put(f"{running.admin}/services/main/resources/lines", json=RESOURCE)
    in_use = await c.delete(f"{running.admin}/services/main/sources/a")
    assert in_use.status_code == 409 and "lines" in in_use.json()["error"]["message"]
    assert (running.root / "sources" / "a.source").is_file()

    assert (await c.delete(f"{running.admin}/services/main/resources/lines")).status_code == 204
    gone = await running.route()  # the service has no resource left, so no route operation either
    assert gone.status_code == 400 and gone.json()["error"]["message"] == "Operation 'route' is not permitted on this service"
    assert (await c.get(f"{running.admin}/services/main/resources/lines")).status_code == 404
    assert not (running.root / "resources" / "lines.resource").exists()

    assert (await c.delete(f"{running.admin}/services/main/sources/a")).status_code == 204
    assert not (running.root / "sources" / "a.source").exists()
    assert (await c.get(f"{running.admin}/health?verbose=true")).json()["services"][0]["sources"] == []
    assert (await c.delete(f"{running.admin}/services/main/sources/a")).status_code == 404
    assert (await c.delete(f"{running.admin}/services/nope/sources/a")).status_code == 404
    assert (await c.get(f"{running.admin}/services/main/sources/a")).status_code == 404


async def test_invalid_documents_give_400_naming_every_problem_and_change_nothing(running: Running) -> None:
    c = running.client
    await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A)
    await c.put(f"{running.admin}/services/main/resources/lines", json=RESOURCE)
    files, (sources, resources) = running.snapshot(), memory(running.administrator)

    bad_source = await c.put(
        f"{running.admin}/services/main/sources/a", json={"id": "b", "type": "nokind", "projection": "EPSG:1", "bbox": "1,2"}
    )
    assert bad_source.status_code == 400
    message = bad_source.json()["error"]["message"]
    source_file = running.root / "sources" / "a.source"
    assert f"{source_file}: id: expected 'a' (the id in the URL), got 'b'" in message
    bad_source = await c.put(f"{running.admin}/services/main/sources/a", json={"type": "nokind", "projection": "EPSG:1", "bbox": "1,2"})
    message = bad_source.json()["error"]["message"]
    assert f"{source_file}: bbox: expected 'xmin,ymin,xmax,ymax'" in message
    bad_source = await c.put(f"{running.admin}/services/main/sources/a", json={"type": "nokind", "projection": "EPSG:1"})
    message = bad_source.json()["error"]["message"]
    assert "type: no installed plugin provides source kind 'nokind'" in message
    assert "projection: unknown projection 'EPSG:1'" in message
    assert "type: resource 'lines' of type 'straightline' uses this source" in message
    options = await c.put(
        f"{running.admin}/services/main/sources/a", json={"type": "straightline", "profiles": "car", "colour": "red", "delay": None}
    )
    problems = options.json()["error"]["message"].splitlines()
    assert f"{source_file}: delay: null is not allowed (leave the key out instead)" in problems
    options = await c.put(f"{running.admin}/services/main/sources/a", json={"type": "straightline", "profiles": 3, "colour": "red"})
    problems = options.json()["error"]["message"]
    assert "profiles" in problems and "colour" in problems

    bad_resource = await c.put(
        f"{running.admin}/services/main/resources/lines",
        json=RESOURCE
        | {
            "sources": ["a", "ghost"],
            "operations": {"route": {"start": {"bbox": "-10,-10,10,10"}, "end": {"bbox": "-10,-10,10,10"}}},
        },
    )
    assert bad_resource.status_code == 409  # a valid document naming a source the service does not have
    assert "sources[1]: unknown source 'ghost'" in bad_resource.json()["error"]["message"]
    bad_parameters = await c.put(
        f"{running.admin}/services/main/resources/lines",
        json=RESOURCE
        | {
            "operations": {"route": {"profile": {"values": 3}, "colour": {}}, "fly": {}},
        },
    )
    message = bad_parameters.json()["error"]["message"]
    resource_file = running.root / "resources" / "lines.resource"
    assert f"{resource_file}: operations.route.profile.values" in message
    assert f"{resource_file}: operations.route.colour: unknown parameter of route" in message
    assert f"{resource_file}: operations.fly: unknown operation" in message
    # A resource that offers no operation would refuse every request: a 400 naming operations.
    for nothing in ({"operations": {}}, {}):
        idle = await c.put(
            f"{running.admin}/services/main/resources/lines", json={k: v for k, v in RESOURCE.items() if k != "operations"} | nothing
        )
        assert idle.status_code == 400
        assert f"{resource_file}: operations: expected at least one operation" in idle.json()["error"]["message"]
    for body, expected in ((b"[1, 2]", "expected a JSON object"), (b"{not json", "expected JSON")):
        response = await c.put(f"{running.admin}/services/main/resources/lines", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400 and expected in response.json()["error"]["message"]
    assert (await c.put(f"{running.admin}/services/main/sources/..a", json=SOURCE_A)).status_code == 400
    assert (await c.put(f"{running.admin}/services/main/sources/a", content=b"{}")).status_code == 400  # no JSON content type

    assert running.snapshot() == files
    assert memory(running.administrator) == (sources, resources)
    assert (await running.route()).status_code == 200


async def test_ids_that_are_not_safe_file_names_are_refused_with_400_and_write_nothing(running: Running) -> None:
    c = running.client
    files = running.snapshot()
    outside = sorted(running.root.parent.iterdir())
    # Encoded so that they reach the server as they are: "/" and dot segments, a final newline
    # (which a "$"-anchored pattern alone would accept), hidden files, too long, not a file name.
    for oid in ("..%2F..%2Fx", "..%2Fx", "a%2F..%2F..%2Fx", "%2E%2E", ".hidden", "-a", "a%20b", "a%00", "%C3%A9", "a" * 129):
        for kind, body in (("sources", SOURCE_A), ("resources", RESOURCE)):
            url = f"{running.admin}/services/main/{kind}/{oid}"
            for method in ("PUT", "GET", "DELETE"):
                response = await c.request(method, url, json=body if method == "PUT" else None)
                assert response.status_code == 400, (method, url, response.text)
                assert f"Parameter '{kind[:-1]}' is invalid: expected letters, digits" in response.json()["error"]["message"]
    assert running.snapshot() == files
    assert sorted(running.root.parent.iterdir()) == outside
    assert (await c.put(f"{running.admin}/services/main/sources/a.b-c_1", json=SOURCE_A | {"id": "a.b-c_1"})).status_code == 201


def test_a_safe_id_is_the_whole_string() -> None:
    assert is_safe_id("a.b-c_1") and is_safe_id("A" * 128)
    # "$" also matches before a final newline: a file named "a\n.source" must not be possible.
    for unsafe in ("a\n", "a/b", "..", ".a", "_a", "", "A" * 129, None, 3):
        assert not is_safe_id(unsafe), unsafe


async def test_publication_survives_an_administrator_restart(tmp_path: Path, plugins: Plugins) -> None:
    admin_port, service_port = free_port(), free_port()
    path = empty_server(tmp_path, admin_port, service_port)
    admin = administrator(load_server(path), plugins)
    await admin.start()
    try:
        async with httpx.AsyncClient() as c:
            base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
            assert (await c.put(f"{base}/sources/a", json=SOURCE_A)).status_code == 201
            assert (await c.put(f"{base}/resources/lines", json=RESOURCE)).status_code == 201
    finally:
        await admin.stop()
    again = administrator(load_server(path), plugins)
    await again.start()
    try:
        async with httpx.AsyncClient() as c:
            route = await c.get(f"http://127.0.0.1:{service_port}/simple/1.0.0/route", params=ROUTE)
        assert route.status_code == 200, route.text
    finally:
        await again.stop()
    assert not [p for p in tmp_path.rglob("*.tmp")], "no temporary file is left behind"


async def test_publication_on_a_stopped_service_is_read_when_it_starts(tmp_path: Path, plugins: Plugins) -> None:
    admin_port, service_port = free_port(), free_port()
    admin = administrator(load_server(empty_server(tmp_path, admin_port, service_port)), plugins)
    await admin.start()
    try:
        handle = admin.handles["main"]
        await handle.stop()
        async with httpx.AsyncClient() as c:
            base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
            assert (await c.put(f"{base}/sources/a", json=SOURCE_A)).status_code == 201
            assert (await c.put(f"{base}/resources/lines", json=RESOURCE)).status_code == 201
            await handle.start()
            route = await c.get(f"http://127.0.0.1:{service_port}/simple/1.0.0/route", params=ROUTE)
        assert route.status_code == 200, route.text
    finally:
        await admin.stop()


async def test_the_admin_openapi_document_covers_every_write_endpoint(running: Running) -> None:
    from openapi_spec_validator import validate
    from starlette.routing import Mount, Route

    from roadkit.apis.admin import create_admin_app

    document = (await running.client.get(f"{running.admin}/openapi.json")).json()
    validate(document)
    mount = next(r for r in create_admin_app(running.administrator).routes if isinstance(r, Mount))
    served = {
        (route.path.replace(":path}", "}"), method.lower())
        for route in mount.routes
        if isinstance(route, Route)
        and route.methods
        and "{path" not in route.path
        and route.path != "/"
        and not route.path.startswith("/openapi")
        and route.name != "not_allowed"  # a route that only answers 405 serves nothing
        for method in route.methods - {"HEAD"}
    }
    documented = {(path, method) for path, operations in document["paths"].items() for method in operations}
    assert served - documented == set()
    assert {
        ("/services", "post"),
        ("/services/{service}", "put"),
        ("/services/{service}", "delete"),
        ("/services/{service}/sources/{source}", "put"),
        ("/services/{service}/resources/{resource}", "delete"),
    } <= documented
    viewer = await running.client.get(f"{running.admin}/openapi")
    assert viewer.status_code == 200 and "openapi.json" in viewer.text


async def test_a_blank_service_id_is_a_documented_400_on_every_operation(running: Running) -> None:
    # Found by schemathesis (fuzzing, negative cases): GET .../%0D/resources answered a 400 its operation did not document.
    document = (await running.client.get(f"{running.admin}/openapi.json")).json()
    operations = [
        (method, path)
        for path, by_method in document["paths"].items()
        if path.startswith("/services/{service}")
        for method in by_method
        if method != "put"  # a PUT reads its body: tested below with one
    ]
    assert len(operations) >= 8
    for method, path in operations:
        url = running.admin + path.format(service="%0D", source="a", resource="a", projection="EPSG:4326")
        answer = await running.client.request(method.upper(), url)
        assert answer.status_code == 400, (method, path, answer.text)
        assert "Parameter 'service'" in answer.json()["error"]["message"]
        assert "400" in document["paths"][path][method]["responses"], (method, path)
    put = await running.client.put(f"{running.admin}/services/%20/resources/a", json=RESOURCE)
    assert put.status_code == 400 and "Parameter 'service'" in put.json()["error"]["message"]


class RemoteLineSource(StraightLineSource):
    """A remote kind that serves the straightline kind's resources (as osrm-http serves osrm's)."""

    kind = "remoteline"
    resource_type = "straightline"


class RemotePlugin:
    @hookimpl
    def roadkit_source_kinds(self) -> Sequence[type[Source]]:
        return [RemoteLineSource]


async def test_a_remote_kind_serves_its_engine_types_resources(tmp_path: Path, plugins: Plugins) -> None:
    plugins = Plugins.create(load_entry_points=False, extra_plugins=[TestPlugin(), RemotePlugin()])
    admin_port, service_port = free_port(), free_port()
    admin = administrator(load_server(empty_server(tmp_path, admin_port, service_port)), plugins)
    await admin.start()
    try:
        async with httpx.AsyncClient() as c:
            base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
            assert (await c.put(f"{base}/sources/a", json=SOURCE_A | {"type": "remoteline"})).status_code == 201
            created = await c.put(f"{base}/resources/lines", json=RESOURCE)
            assert created.status_code == 201, created.text
            assert (await c.get(f"http://127.0.0.1:{service_port}/simple/1.0.0/route", params=ROUTE)).status_code == 200
            still = await c.put(f"{base}/sources/a", json=SOURCE_A | {"type": "remoteline", "profiles": ["car", "bike"]})
            assert still.status_code == 200, still.text
    finally:
        await admin.stop()


async def test_a_resource_whose_source_is_red_is_served_once_the_source_is_fixed(running: Running) -> None:
    c = running.client
    red = await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A | {"fail": True})
    assert red.status_code == 201, red.text
    source_health = (await c.get(f"{running.admin}/health?verbose=true")).json()["services"][0]["sources"][0]
    assert source_health["state"] == "red" and "refused to load" in source_health["reason"]
    assert (await c.put(f"{running.admin}/services/main/resources/lines", json=RESOURCE)).status_code == 201
    assert (await running.route()).status_code == 400  # written, but no available source to serve it
    assert (await c.get(f"{running.admin}/services/main/resources/lines")).status_code == 200
    fixed = await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A)
    assert fixed.status_code == 200, fixed.text
    assert (await running.route()).status_code == 200
    assert (await c.get(f"{running.admin}/health")).json()["state"] == "green"


async def test_a_write_that_fails_on_disk_is_a_503_and_changes_nothing(running: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import roadkit.config.writer

    c = running.client
    await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A)
    files, (sources, resources) = running.snapshot(), memory(running.administrator)

    def full(src: str, dst: str) -> None:
        raise OSError(28, os.strerror(28))

    monkeypatch.setattr(roadkit.config.writer.os, "replace", full)
    failed = await c.put(f"{running.admin}/services/main/resources/lines", json=RESOURCE)
    assert failed.status_code == 503
    assert (
        failed.json()["error"]["message"]
        == f"Can't write {running.root / 'resources' / 'lines.resource'}: No space left on device; nothing was changed"
    )
    replaced = await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A | {"profiles": ["bike"]})
    assert replaced.status_code == 503
    assert running.snapshot() == files, "no change and no temporary file left"
    assert memory(running.administrator) == (sources, resources)


async def test_publication_the_service_folders_do_not_allow_is_a_409(running: Running) -> None:
    c, service_file = running.client, running.root / "service.toml"
    text = service_file.read_text()
    # A file named after the id that defines another id: the service's files conflict, the document is fine.
    write(running.root / "sources" / "a.source", 'id = "other"\ntype = "straightline"\n')
    taken = await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A)
    assert taken.status_code == 409, taken.text
    assert (
        f"{running.root / 'sources' / 'a.source'}: id: this file exists and does not define source 'a'" in taken.json()["error"]["message"]
    )
    (running.root / "sources" / "a.source").unlink()
    # A service with no sources or resources folder has nowhere to publish into.
    service_file.write_text(text.replace('sources = ["sources"]', "sources = []").replace('resources = ["resources"]', "resources = []"))
    for kind, body in (("sources", SOURCE_A), ("resources", RESOURCE)):
        refused = await c.put(f"{running.admin}/services/main/{kind}/{body['id']}", json=body)
        assert refused.status_code == 409, refused.text
        assert f"{service_file}: folders.{kind}: the service has no {kind} folder to publish into" in refused.json()["error"]["message"]
    # ... and a document with problems of its own is a 400 that names them and the conflict.
    invalid = await c.put(f"{running.admin}/services/main/sources/a", json=SOURCE_A | {"bbox": "1,2"})
    assert invalid.status_code == 400 and "bbox" in invalid.json()["error"]["message"]
    assert "no sources folder" in invalid.json()["error"]["message"]
    # A service file changed by hand so that it no longer loads: every publication call is a 409 naming it.
    service_file.write_text("[application]\n")
    for method, url in (
        ("GET", "sources"),
        ("GET", "resources"),
        ("GET", "sources/a"),
        ("PUT", "sources/a"),
        ("PUT", "resources/lines"),
        ("DELETE", "sources/a"),
        ("DELETE", "resources/lines"),
    ):
        body = SOURCE_A if url == "sources/a" else RESOURCE
        response = await c.request(method, f"{running.admin}/services/main/{url}", json=body if method == "PUT" else None)
        assert response.status_code == 409, (method, url, response.text)
        assert f"{service_file}: application.name: required key is missing" in response.json()["error"]["message"]


def files_under(*roots: Path) -> dict[str, bytes | str | None]:
    """Every file, link and folder under ``roots`` (a folder: None), to prove a refused write changed nothing."""
    return {
        str(p): (str(p.readlink()) if p.is_symlink() else None if p.is_dir() else p.read_bytes())
        for root in roots
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
async def with_engines(tmp_path: Path) -> AsyncIterator[Running]:
    """As ``running``, with the installed engine plugins (pgrouting, osrm-http...) and a hand-written database file."""
    admin_port, service_port = free_port(), free_port()
    write(tmp_path / "far.database.toml", 'host = "10.20.30.40"\ndatabase = "roadkit"\n')
    plugins = plugins_for_tests(TestPlugin(), entry_points=True)
    admin = administrator(load_server(empty_server(tmp_path, admin_port, service_port)), plugins)
    await admin.start()
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            yield Running(tmp_path, admin, admin_port, service_port, client)
    finally:
        await admin.stop()


PG_COSTS = [{"profile": "car", "optimization": "fastest", "cost_column": "cost_s_car", "reverse_cost_column": "reverse_cost_s_car"}]


async def test_sources_naming_hosts_or_passwords_the_administrator_does_not_allow_are_400_and_change_nothing(
    with_engines: Running,
) -> None:
    running = with_engines
    before = files_under(running.root)
    osrm_http = {"type": "osrm-http", "cost": {"profile": "car", "optimization": "fastest"}}
    refused = [
        (osrm_http | {"http": {"servers": ["http://127.0.0.1:5000", "http://10.9.8.7:5000"]}}, "http.servers[1]", "'10.9.8.7'"),
        (osrm_http | {"http": {"servers": ["https://engine.example.org"]}}, "http.servers[0]", "'engine.example.org'"),
        (osrm_http | {"http": {"servers": ["http://[::ffff:10.0.0.1]:5000"]}}, "http.servers[0]", "'::ffff:a00:1'"),
        (
            {"type": "pgrouting", "storage": {"dsn": "postgresql://roadkit@db.example.org:5432/roadkit"}, "costs": PG_COSTS},
            "storage.dsn",
            "",
        ),
        ({"type": "pgrouting", "storage": {"dsn": "host=192.168.1.2 dbname=roadkit"}, "costs": PG_COSTS}, "storage.dsn", ""),
        ({"type": "pgrouting", "storage": {"database": "../far.database.toml"}, "costs": PG_COSTS}, "storage.database", "'10.20.30.40'"),
        ({"type": "pgrouting", "storage": {"dsn": "postgresql://roadkit:secret@127.0.0.1/roadkit"}, "costs": PG_COSTS}, "storage.dsn", ""),
        ({"type": "pgrouting", "storage": {"dsn": "host=127.0.0.1 password=secret"}, "costs": PG_COSTS}, "storage.dsn", ""),
        (osrm_http | {"http": {"servers": ["http://user:secret@127.0.0.1:5000"]}}, "http.servers[0]", "password"),
        (SOURCE_A | {"password": "secret"}, "password", "password"),
    ]
    for body, key, why in refused:
        body = {k: v for k, v in body.items() if k != "id"}
        response = await running.client.put(f"{running.admin}/services/main/sources/x", json=body)
        assert response.status_code == 400, (body, response.text)
        message = response.json()["error"]["message"]
        assert f"{running.root / 'sources' / 'x.source'}: {key}: " in message and why in message, (key, message)
        assert "secret" not in message
    assert files_under(running.root) == before


async def test_a_publication_into_a_folder_that_leads_out_is_a_400_and_writes_nothing(
    tmp_path: Path, plugins: Plugins, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    admin_port, service_port = free_port(), free_port()
    server = empty_server(tmp_path, admin_port, service_port)
    (tmp_path / "sources").rmdir()
    (tmp_path / "sources").symlink_to(outside, target_is_directory=True)  # the service's sources folder, linked out
    (tmp_path / "resources" / "escape.resource").symlink_to(outside / "escape.resource")
    before = files_under(tmp_path, outside)
    admin = administrator(load_server(server), plugins)
    await admin.start()
    try:
        async with httpx.AsyncClient(timeout=10) as c:
            base = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main"
            source = await c.put(f"{base}/sources/a", json=SOURCE_A)
            assert source.status_code == 400, source.text
            assert f"{tmp_path / 'service.toml'}: folders.sources: the file of this source: expected a path inside" in source.text
            assert source.json()["error"]["message"].endswith(f"got {str(outside / 'a.source')!r}")
            resource = await c.put(f"{base}/resources/escape", json=RESOURCE | {"id": "escape"})
            assert resource.status_code == 400, resource.text  # a dangling link out is no file to replace
            assert f"{tmp_path / 'service.toml'}: folders.resources: the file of this resource: expected a path inside" in resource.text
    finally:
        await admin.stop()
    assert files_under(tmp_path, outside) == before
    assert list(outside.iterdir()) == []


async def test_answers_of_the_admin_api_show_no_password(running: Running) -> None:
    # A hand-written source file (the administrator's own) may hold passwords: answers hide them.
    write(
        running.root / "sources" / "pg.source",
        'id = "pg"\ntype = "pgrouting"\n[storage]\ndsn = "postgresql://roadkit:s3cret@db:5432/roadkit"\n'
        '[storage.base]\npassword = "s3cret"\nconninfo = "host=db password=s3cret dbname=x"\n',
    )
    one = await running.client.get(f"{running.admin}/services/main/sources/pg")
    assert one.status_code == 200
    assert one.json()["storage"] == {
        "dsn": "postgresql://roadkit:***@db:5432/roadkit",
        "base": {"password": "***", "conninfo": "host=db password=*** dbname=x"},
    }
    for path in ("/services/main/sources", "/services/main/sources/pg", "/services", "/services/main", "/configuration", "/health"):
        answer = await running.client.get(f"{running.admin}{path}")
        assert "s3cret" not in answer.text, path


OSRM_CAR = {"type": "osrm", "projection": "EPSG:4326", "cost": {"profile": "car", "optimization": "fastest"}}
VALHALLA_CAR = {"type": "valhalla", "projection": "EPSG:4326", "costs": [{"profile": "car", "costing": "auto", "optimization": "fastest"}]}


async def test_sources_whose_data_lies_outside_the_allowed_folders_are_400_naming_the_key_and_change_nothing(
    with_engines: Running, tmp_path_factory: pytest.TempPathFactory
) -> None:
    running = with_engines
    root = running.root
    outside = tmp_path_factory.mktemp("outside")
    write(outside / "far.database.toml", 'host = "10.1.2.3"\ndatabase = "roadkit"\n')
    (root / "data").symlink_to(outside, target_is_directory=True)  # a folder inside that leads out
    (root / "osrm").mkdir()
    (root / "osrm" / "v2").symlink_to(outside, target_is_directory=True)  # version v2 of ../osrm/monaco.osrm, linked out
    (root / "valhalla").mkdir()
    (root / "valhalla" / "tiles").symlink_to(outside, target_is_directory=True)  # the default tile folder, linked out
    before = files_under(root, outside)
    refused: list[tuple[dict[str, Any], str, Path]] = [
        (OSRM_CAR | {"storage": {"file": str(outside / "monaco.osrm")}}, "storage.file", outside / "monaco.osrm"),
        (OSRM_CAR | {"storage": {"file": "../data/monaco.osrm"}}, "storage.file", root / "data" / "monaco.osrm"),
        (OSRM_CAR | {"storage": {"file": "../osrm/monaco.osrm"}, "version": "v2"}, "storage.file", root / "osrm" / "v2" / "monaco.osrm"),
        (
            OSRM_CAR | {"storage": {"file": "../osrm/monaco.osrm"}, "preparation": {"osm": str(outside / "monaco.osm.pbf")}},
            "preparation.osm",
            outside / "monaco.osm.pbf",
        ),
        (
            OSRM_CAR
            | {"storage": {"file": "../osrm/monaco.osrm"}, "preparation": {"osm": "../monaco.osm.pbf", "profile": "../data/evil.lua"}},
            "preparation.profile",
            root / "data" / "evil.lua",
        ),
        (VALHALLA_CAR | {"storage": {"config": str(outside / "valhalla.json")}}, "storage.config", outside / "valhalla.json"),
        (
            VALHALLA_CAR | {"storage": {"config": "../valhalla/valhalla.json", "tar": "../data/tiles.tar"}},
            "storage.tar",
            root / "data" / "tiles.tar",
        ),
        (VALHALLA_CAR | {"storage": {"config": "../valhalla/valhalla.json"}}, "storage.config", root / "valhalla" / "tiles"),
        (
            {"type": "pgrouting", "storage": {"database": str(outside / "far.database.toml")}, "costs": PG_COSTS},
            "storage.database",
            outside / "far.database.toml",
        ),
    ]
    for body, key, path in refused:
        response = await running.client.put(f"{running.admin}/services/main/sources/x", json=body)
        assert response.status_code == 400, (body, response.text)
        problems = response.json()["error"]["message"].splitlines()
        # One problem: the path, not a file read there (the database file's host is never looked at).
        assert len(problems) == 1, (key, problems)
        assert problems[0].startswith(f"{root / 'sources' / 'x.source'}: {key}: expected a path inside the folders"), (key, problems)
        assert f"({str(root)!r}; administrator.writes.folders of the server file), got " in problems[0], (key, problems)
        assert repr(os.path.realpath(path)) in problems[0], (key, problems)  # as given, or as the link it goes through leads
    assert files_under(root, outside) == before
    # Inside the allowed folders the same document passes the check (its dataset is missing: a 503 from the engine).
    inside = await running.client.put(
        f"{running.admin}/services/main/sources/x", json=OSRM_CAR | {"storage": {"file": "../osrm/monaco.osrm"}}
    )
    assert "administrator allows" not in inside.text, inside.text


async def test_error_answers_of_the_admin_api_show_no_password(running: Running) -> None:
    # The client's own password, quoted back in a 400 about a wrong place.
    dsn = "postgresql://roadkit:s3cret@db.example.org/roadkit"
    refused = [
        SOURCE_A | {"id": dsn},
        SOURCE_A | {"id": "host=db password='s3 cret'"},
        SOURCE_A | {"id": {"password": "s3cret", "user": "roadkit"}},
    ]
    for body in refused:
        response = await running.client.put(f"{running.admin}/services/main/sources/a", json=body)
        assert response.status_code == 400, (body, response.text)
        assert "s3cret" not in response.text and "***" in response.text, response.text
    for method, url in (("POST", "/services"), ("PUT", "/services/main")):
        body = {"id": "x", "configuration": {"application": {"name": dsn}, "listeners": [{"port": dsn}]}}
        response = await running.client.request(method, f"{running.admin}{url}", json=body)
        assert response.status_code == 400, response.text
        assert "s3cret" not in response.text and "postgresql://roadkit:***@db.example.org" in response.text, response.text
    # A service file changed by hand (the administrator's own) whose text a 409 quotes.
    service_file = running.root / "service.toml"
    service_file.write_text(
        service_file.read_text().replace("[application]", f'[application]\ncontact = {{ url = "{dsn}", password = "s3cret" }}')
    )
    for path in ("/services/main/sources", "/services/main/sources/a"):
        response = await running.client.get(f"{running.admin}{path}")
        assert response.status_code == 409, response.text
        assert "s3cret" not in response.text and "***" in response.text, response.text
    # A path holding a password, quoted in a 404.
    missing = await running.client.get(f"{running.admin}/services/{dsn}")
    assert missing.status_code == 404 and "s3cret" not in missing.text, missing.text


async def test_other_methods_on_a_sources_version_route_are_405_allowing_post(running: Running) -> None:
    # Starlette gives them to the ``{source:path}`` routes, which would read "a/version" as a source id.
    for method in ("GET", "PUT", "DELETE", "OPTIONS"):
        response = await running.client.request(method, f"{running.admin}/services/main/sources/a/version")
        assert response.status_code == 405, (method, response.text)
        assert response.headers["allow"] == "POST"
