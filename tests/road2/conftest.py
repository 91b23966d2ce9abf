"""The Monaco demo as Road2's request scenarios expect it: one service with the three engines'
resources (OSRM, Valhalla, pgRouting on the test cluster), run by an administrator on free ports."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.conftest import copy_example
from tests.core.conftest import free_port
from tests.engine_b.conftest import valhalla_data, valhalla_example  # noqa: F401  (fixtures used below)
from tests.engine_c.conftest import pg_cluster, pg_dsn  # noqa: F401  (fixtures used below)


@dataclass(frozen=True)
class Demo:
    admin: str  # http://host:port/admin/1.0.0
    service: str  # http://host:port


def edit(path: Path, *changes: tuple[str, str]) -> None:
    """Each ``(pattern, replacement)`` applied to one line of ``path``: an example that changed fails here."""
    text = path.read_text()
    for pattern, replacement in changes:
        text, count = re.subn(f"(?m){pattern}", replacement, text)
        assert count == 1, (path, pattern, count)
    path.write_text(text)


@pytest.fixture(scope="session")
def road2_demo(tmp_path_factory: pytest.TempPathFactory, osrm_example: Path, valhalla_example: Path, pg_dsn: str) -> Iterator[Demo]:  # noqa: F811
    """The demo's service (``main``) with its three resources, started by an administrator in a thread."""
    root = tmp_path_factory.mktemp("road2")
    data = root / "data"
    data.mkdir()
    # The engines' data built by their own fixtures, in the layout the example's sources read.
    (data / "osrm").symlink_to((osrm_example / "data" / "osrm").resolve(), target_is_directory=True)
    (data / "valhalla").symlink_to((valhalla_example / "data" / "valhalla").resolve(), target_is_directory=True)
    example = copy_example(root / "monaco", data, ("gtfs",))
    (example / "pgrouting.database.toml").write_text(f'dsn = "{pg_dsn}"\npool_size = 4\n', encoding="utf-8")
    admin_port, service_port = free_port(), free_port()
    # Free ports, and the service in the administrator's process: no worker processes to start.
    edit(example / "service.toml", (r"^port = 8080$", f"port = {service_port}"))
    edit(
        example / "server.toml",
        (r"^port = 8079$", f"port = {admin_port}"),
        (r'^mode = "child-process"$', 'mode = "same-process"'),
        (r"^workers = .*$", ""),
    )
    server = example / "server.toml"
    admin = administrator(load_server(server), Plugins.create())
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(admin.start(), loop).result(timeout=120)
    demo = Demo(f"http://127.0.0.1:{admin_port}/admin/1.0.0", f"http://127.0.0.1:{service_port}")
    try:
        deadline = time.monotonic() + 60
        while httpx.get(f"{demo.admin}/health").status_code != 200:
            assert time.monotonic() < deadline, httpx.get(f"{demo.admin}/health").text
            time.sleep(0.1)
        yield demo
    finally:
        asyncio.run_coroutine_threadsafe(admin.stop(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
