"""GetCapabilities, the OpenAPI documents and their viewer, and renamed operations."""

from __future__ import annotations

from pathlib import Path

import pytest
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from roadkit.config import load_service
from roadkit.plugins import Plugins
from roadkit.serving.app import create_app

CAPS = "/simple/1.0.0/getcapabilities"


def test_capabilities_describe_service_operations_and_resources(client: TestClient) -> None:
    caps = client.get(CAPS).json()
    assert caps["info"]["name"] == "roadkit-monaco"
    assert caps["info"]["language"] == "en"
    assert "routing" in caps["info"]["keywords"]["keyword"]  # Road2's {"keyword": ...}
    assert caps["info"]["contact"] == {"email": "roadkit@example.org"}
    assert caps["provider"]["name"] == "roadkit demo"
    assert caps["api"] == {"name": "simple", "version": "1.0.0"}
    assert [op["id"] for op in caps["operations"]] == ["route", "nearest", "matrix"]
    route = caps["operations"][0]
    names = [p["name"] for p in route["parameters"]]
    assert names[:4] == ["resource", "start", "end", "intermediates"]
    intermediates = route["parameters"][3]
    assert intermediates["min"] == 0 and intermediates["max"] == 10 and intermediates["style"] == "pipeDelimited"
    steps = next(p for p in route["parameters"] if p["name"] == "getSteps")
    assert "instruction" in steps["description"] and "attributes" in steps["description"]
    (resource,) = caps["resources"]
    assert resource["id"] == "monaco-osrm"
    params = {p["id"]: p for p in resource["availableOperations"][0]["availableParameters"]}
    assert params["profile"] == {"id": "profile", "values": ["car", "pedestrian"], "defaultValue": "car"}
    assert params["geometryFormat"]["values"] == ["geojson", "polyline", "wkt"]
    assert params["crs"]["values"] == ["EPSG:4326", "EPSG:3857", "EPSG:2154"]
    assert params["start"]["values"]["bbox"] == "7.349,43.71,7.491,43.77"
    assert params["getSteps"]["defaultValue"] is True
    keys = params["constraints"]["values"]["keys"]
    assert keys == [
        {
            "key": "waytype",
            "availableConstraintType": ["banned"],
            "availableOperators": ["="],
            "values": ["autoroute", "peage", "bac", "tunnel", "pont"],
        }
    ]
    nearest = {p["id"]: p for p in resource["availableOperations"][1]["availableParameters"]}
    assert nearest["nbPoints"]["values"] == {"min": 1, "max": 10}


def test_capability_urls_use_the_request_host(client: TestClient, osrm_example: Path) -> None:
    forwarded = {"x-forwarded-host": "maps.example.org", "x-forwarded-proto": "https"}
    plain = client.get(CAPS).json()
    assert plain["operations"][0]["url"] == "http://testserver/simple/1.0.0/route?"
    forged = client.get(CAPS, headers=forwarded).json()  # no trusted proxy: anyone could have written them
    assert forged["operations"][0]["url"] == "http://testserver/simple/1.0.0/route?"
    behind = osrm_example / "service-behind-proxy.toml"  # beside service.toml: the same relative paths
    behind.write_text((osrm_example / "service.toml").read_text() + '\n[http]\ntrusted_proxies = ["10.0.0.0/8"]\n')
    with TestClient(create_app(load_service(behind), Plugins.create()), client=("10.0.0.5", 40000)) as proxy:
        proxied = proxy.get(CAPS, headers=forwarded).json()
    assert proxied["operations"][0]["url"] == "https://maps.example.org/simple/1.0.0/route?"
    assert proxied["info"]["url"] == "https://maps.example.org/simple/1.0.0/"


def test_renamed_operations_are_served_and_advertised(osrm_example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTE_ROUTE", "itineraire")
    monkeypatch.setenv("NEAREST_ROUTE", "plus-proche")
    app = create_app(load_service(osrm_example / "service.toml"), Plugins.create())
    with TestClient(app) as renamed:
        caps = renamed.get(CAPS).json()
        assert [op["url"].rsplit("/", 1)[1] for op in caps["operations"]] == ["itineraire?", "plus-proche?", "matrix?"]
        ok = renamed.get(
            "/simple/1.0.0/itineraire", params={"resource": "monaco-osrm", "start": "7.41337,43.72956", "end": "7.41983,43.73115"}
        )
        assert ok.status_code == 200
        assert renamed.get("/simple/1.0.0/route").status_code == 404
        paths = renamed.get("/simple/1.0.0/openapi.json").json()["paths"]
        assert "/itineraire" in paths and "/route" not in paths


def test_simple_api_openapi_document_is_valid_and_linked(client: TestClient) -> None:
    index = client.get("/simple/1.0.0/").json()
    desc = next(link["href"] for link in index["links"] if link["rel"] == "service-desc")
    assert desc == "http://testserver/simple/1.0.0/openapi.json"
    document = client.get(desc).json()
    validate(document)
    assert document["openapi"] == "3.1.0"
    # Only the operations a resource offers (no isochrone on the OSRM-only example).
    assert set(document["paths"]) == {"/getcapabilities", "/route", "/nearest", "/matrix"}


def test_viewer_works_offline_and_links_to_the_definition(client: TestClient) -> None:
    page = client.get("/simple/1.0.0/openapi")
    assert page.status_code == 200
    assert "http://testserver/simple/1.0.0/openapi.json" in page.text
    assert "//cdn" not in page.text and "unpkg" not in page.text
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-standalone-preset.js", "viewer.js"):
        response = client.get(f"/simple/1.0.0/openapi/assets/{asset}")
        assert response.status_code == 200 and len(response.content) > 50, asset
