"""Plugins made visible: ``roadkit plugins`` and ``GET /admin/1.0.0/plugins``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from roadkit.apis.admin import create_admin_app
from roadkit.cli import main
from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.server import administrator
from tests.core.test_administrator import server_file


def test_the_plugins_describe_each_distribution_and_what_it_contributes() -> None:
    described = {plugin["name"]: plugin for plugin in Plugins.create().describe()}
    assert list(described)[:4] == ["roadkit.defaults", "roadkit.apis.simple", "roadkit.apis.ogcapi_routes", "roadkit.cli"]  # core's first
    core = described["roadkit.apis.simple"]
    assert (core["distribution"], core["apis"], core["hooks"]) == ("roadkit", ["simple/1.0.0"], ["roadkit_apis"])
    assert described["roadkit.apis.ogcapi_routes"]["apis"] == ["ogcapi-routes/1.0"]
    osrm = described["osrm"]
    assert osrm["distribution"] == "roadkit-osrm" and osrm["version"]
    assert osrm["sourceKinds"] == ["osrm", "osrm-http"] and osrm["apis"] == ["osrm/1.0.0"] and osrm["commands"] == ["osrm-build"]
    assert osrm["hooks"] == ["roadkit_apis", "roadkit_commands", "roadkit_source_kinds"]
    assert described["valhalla"]["sourceKinds"] == ["valhalla", "valhalla-http"]
    assert "plugins" in described["roadkit.cli"]["commands"]


def test_an_extra_plugin_is_listed_without_a_distribution() -> None:
    class Extra:
        from roadkit import hookimpl

        @staticmethod
        @hookimpl
        def roadkit_cost_units() -> dict[str, tuple[str, float]]:
            return {"mile": ("distance", 1609.344)}

    extra = Extra()
    described = Plugins.create(load_entry_points=False, extra_plugins=[extra]).describe()
    assert [p["name"] for p in described][:4] == ["roadkit.defaults", "roadkit.apis.simple", "roadkit.apis.ogcapi_routes", "roadkit.cli"]
    last = described[-1]
    assert (last["distribution"], last["hooks"], last["sourceKinds"]) == ("", ["roadkit_cost_units"], [])


def test_the_command_prints_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    text = capsys.readouterr().out
    assert "osrm  [roadkit-osrm " in text and "    source kinds: osrm, osrm-http" in text and "    APIs: osrm/1.0.0" in text
    assert main(["plugins", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == Plugins.create().describe()


async def test_the_admin_api_lists_them(tmp_path: Path) -> None:
    plugins = Plugins.create()
    admin = administrator(load_server(server_file(tmp_path, 8079, 8080)), plugins)
    transport = httpx.ASGITransport(create_admin_app(admin))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8079") as client:
        answer = await client.get("/admin/1.0.0/plugins")
        document = (await client.get("/admin/1.0.0/openapi.json")).json()
    assert answer.status_code == 200 and answer.json() == plugins.describe()
    assert "/plugins" in document["paths"] and "Plugin" in document["components"]["schemas"]
    await admin.authenticator.close()
