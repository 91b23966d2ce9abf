"""Native OSRM API: resources, profiles and their aliases, Road2's URL shape, and roadkit's own errors."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from roadkit.config import load_service
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.serving.app import create_app
from roadkit.serving.service import Service

START, END = "7.41337,43.72956", "7.41983,43.73115"
COORDS = f"{START};{END}"


def test_resources_lists_profiles_optimizations_aliases_and_services(client: TestClient) -> None:
    response = client.get("/osrm/1.0.0/resources")
    assert response.status_code == 200
    resources = {r["id"]: r for r in response.json()}
    osrm = resources["monaco-osrm"]
    assert osrm["profiles"] == [
        {"id": "car", "optimizations": [{"id": "fastest"}, {"id": "shortest"}], "aliases": ["driving"]},
        {"id": "pedestrian", "optimizations": [{"id": "fastest"}], "aliases": ["foot", "walking"]},
    ]
    assert osrm["services"] == ["route", "nearest", "table", "trip", "match", "tile"]


def _simple_distance(client: TestClient, profile: str, optimization: str) -> float:
    response = client.get(
        "/simple/1.0.0/route",
        params={
            "resource": "monaco-osrm",
            "start": START,
            "end": END,
            "profile": profile,
            "optimization": optimization,
            "distanceUnit": "meter",
        },
    )
    assert response.status_code == 200, response.text
    return float(response.json()["distance"])


@pytest.mark.parametrize(
    ("path", "profile", "optimization"),
    [
        (f"/osrm/1.0.0/monaco-osrm/route/v1/car/{COORDS}", "car", "fastest"),
        (f"/osrm/1.0.0/monaco-osrm/route/v1/driving/{COORDS}", "car", "fastest"),
        (f"/osrm/1.0.0/monaco-osrm/route/v1/foot/{COORDS}.json", "pedestrian", "fastest"),
        (f"/osrm/1.0.0/monaco-osrm/car/shortest/route/v1/_/{COORDS}", "car", "shortest"),
        (f"/osrm/1.0.0/monaco-osrm/pedestrian/fastest/route/v1/_/{COORDS}?overview=false", "pedestrian", "fastest"),
    ],
)
def test_the_profile_chooses_the_source(client: TestClient, path: str, profile: str, optimization: str) -> None:
    response = client.get(path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    route = response.json()["routes"][0]
    assert route["distance"] == pytest.approx(_simple_distance(client, profile, optimization), abs=0.05)


def test_shortest_and_fastest_differ_through_road2_urls(client: TestClient) -> None:
    far = "7.37612,43.75813;7.45165,43.73148"
    fastest = client.get(f"/osrm/1.0.0/monaco-osrm/car/fastest/route/v1/_/{far}").json()["routes"][0]
    shortest = client.get(f"/osrm/1.0.0/monaco-osrm/car/shortest/route/v1/_/{far}").json()["routes"][0]
    assert shortest["distance"] < fastest["distance"]


def test_unknown_profile_names_the_known_ones(client: TestClient) -> None:
    response = client.get(f"/osrm/1.0.0/monaco-osrm/route/v1/bike/{COORDS}")
    assert response.status_code == 400
    assert response.json() == {
        "code": "InvalidProfile",
        "message": "Profile bike not found on resource monaco-osrm (known: car, driving, foot, pedestrian, walking)",
    }
    # Road2's URL: Road2's messages for what only its URL names.
    road2 = client.get(f"/osrm/1.0.0/monaco-osrm/pedestrian/shortest/route/v1/_/{COORDS}")
    assert road2.status_code == 400
    assert road2.json()["message"] == (
        "Parameters 'profile' and 'optimization' are not compatible: "
        "profile pedestrian with optimization shortest is not offered by resource monaco-osrm"
    )
    bad_profile = client.get(f"/osrm/1.0.0/monaco-osrm/bike/fastest/route/v1/_/{COORDS}")
    assert bad_profile.status_code == 400
    assert bad_profile.json()["message"].startswith("Parameter 'profileId' is invalid: it does not exist on this resource (known: car")
    bad_optimization = client.get(f"/osrm/1.0.0/monaco-osrm/car/greenest/route/v1/_/{COORDS}")
    assert bad_optimization.status_code == 400
    assert bad_optimization.json()["message"] == (
        "Parameter 'optimizationId' is invalid: it does not exist on this resource (known: fastest, shortest)"
    )


def test_unknown_resource_is_a_404(client: TestClient) -> None:
    response = client.get(f"/osrm/1.0.0/nowhere/route/v1/car/{COORDS}")
    assert response.status_code == 404
    assert response.json() == {"code": "InvalidResource", "message": "Resource 'nowhere' does not exist on this service"}
    # Road2's URL: Road2's 400 and message.
    road2 = client.get(f"/osrm/1.0.0/nowhere/car/fastest/route/v1/_/{COORDS}")
    assert road2.status_code == 400
    assert road2.json() == {"code": "InvalidResource", "message": "Parameter 'resourceId' is invalid: it does not exist on this service"}


def test_what_the_binding_cannot_do_is_refused_clearly(client: TestClient) -> None:
    response = client.get(f"/osrm/1.0.0/monaco-osrm/route/v1/car/{COORDS}.flatbuffers")
    assert response.status_code == 400
    assert response.json() == {"code": "InvalidOptions", "message": "The flatbuffers output format is not available on this service"}
    by_legs = client.get(f"/osrm/1.0.0/monaco-osrm/trip/v1/car/{COORDS}?overview=by_legs")
    assert (by_legs.status_code, by_legs.json()) == (
        400,
        {"code": "InvalidOptions", "message": "overview=by_legs is not available on this service"},
    )


def test_osrm_errors_keep_osrm_routed_codes(client: TestClient) -> None:
    cases = {
        f"/osrm/1.0.0/monaco-osrm/foo/v1/car/{COORDS}": ("InvalidService", "Service foo not found!"),
        f"/osrm/1.0.0/monaco-osrm/route/v2/car/{COORDS}": ("InvalidVersion", "Service route not found!"),
        f"/osrm/1.0.0/monaco-osrm/route/v1/car/{COORDS}?steps=maybe": ("InvalidQuery", "Query string malformed close to position 54"),
        "/osrm/1.0.0/monaco-osrm/route/v1/car/7.41,43.73": ("InvalidOptions", "Number of coordinates needs to be at least two."),
        "/osrm/1.0.0/monaco-osrm/route/v1/car/7.41,43.73;1,100": ("InvalidValue", "Invalid coordinate value."),
        f"/osrm/1.0.0/monaco-osrm/route/v1/car/{COORDS}?radiuses=0.1;0.1": (
            "NoSegment",
            "Could not find a matching segment for coordinate 0",
        ),
    }
    for path, (code, message) in cases.items():
        response = client.get(path)
        assert (response.status_code, response.json()) == (400, {"code": code, "message": message}), path


def test_the_index_and_unknown_paths(client: TestClient) -> None:
    assert client.get("/osrm/1.0.0/").json()["resources"] == "/osrm/1.0.0/resources"
    # A wrong method on a path the API serves is a 405 listing the allowed ones (RFC 9110; found by schemathesis: was a 404).
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        for path, allowed in (("/resources", "GET, HEAD"), ("/", "GET, HEAD"), ("/openapi.json", "GET, HEAD")):
            response = client.request(method, f"/osrm/1.0.0{path}")
            assert (response.status_code, response.headers.get("allow")) == (405, allowed), (method, path)
    # A URL with coordinates takes GET only, one that ends at the profile POST only (route, nearest, table, match):
    # the Allow the OpenAPI document agrees with (found by schemathesis: Allow listed POST on the coordinate paths).
    for method in ("PUT", "PATCH", "DELETE", "OPTIONS", "POST"):
        table = f"car/shortest/table/v1/_/{COORDS}.json?annotations=distance"
        for path in (f"route/v1/car/{COORDS}", table, "tile/v1/car/tile(1,2,12).mvt"):
            response = client.request(method, f"/osrm/1.0.0/monaco-osrm/{path}", json={})
            assert (response.status_code, response.headers.get("allow")) == (405, "GET, HEAD"), (method, path, response.text)
            assert response.json()["code"] == "MethodNotAllowed"
    for method in ("GET", "HEAD", "PUT", "OPTIONS"):
        for path in ("route/v1/car", "nearest/v1/driving/", "car/fastest/match/v1/_"):
            response = client.request(method, f"/osrm/1.0.0/monaco-osrm/{path}")
            assert (response.status_code, response.headers.get("allow")) == (405, "POST"), (method, path)
    # What osrm-routed answers with a 400 stays so: a POST on a URL that is no GET URL either, a GET on trip's.
    refused = (("POST", "route/v1/car/x", "InvalidUrl"), ("POST", "trip/v1/car", "NotImplemented"), ("GET", "trip/v1/car", "InvalidUrl"))
    for method, path, code in refused:
        response = client.request(method, f"/osrm/1.0.0/monaco-osrm/{path}", json={"coordinates": [[7.41, 43.73], [7.42, 43.74]]})
        assert (response.status_code, response.json()["code"]) == (400, code), (method, path, response.text)
    missing = client.get("/osrm/1.0.0/resources/x/y")
    assert missing.status_code == 404 and missing.json()["code"] == "InvalidResource", missing.text
    # A line break (%0A) anywhere in the path still reaches the native API (found by schemathesis: Starlette's
    # path pattern stops at it, and the answer was the core's 404, not osrm-routed's shape).
    unknown = client.get("/osrm/1.0.0/x%0Ay/route/v1/car/7.41,43.73;7.42,43.74")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "InvalidResource"), unknown.text
    broken = client.get(f"/osrm/1.0.0/monaco-osrm/route/v1/car/{COORDS}%0A")
    assert (broken.status_code, broken.json()["code"]) == (400, "InvalidUrl"), broken.text
    elsewhere = client.get("/osrm/1.0.0/x%0A")
    assert (elsewhere.status_code, elsewhere.json()["code"]) == (404, "InvalidUrl"), elsewhere.text


def test_the_demo_serves_the_native_api() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "monaco"
    apis = {(a.name, a.version) for a in load_service(example / "service.toml").apis}
    assert ("osrm", "1.0.0") in apis


def test_bad_native_settings_are_a_start_up_error_naming_the_file_and_key(osrm_example: Path, tmp_path: Path) -> None:
    example = tmp_path / "monaco"
    shutil.copytree(osrm_example, example, symlinks=True)
    resource = example / "resources" / "monaco-osrm.resource"
    resource.write_text(resource.read_text().replace("max_table_size = 100", 'max_table_size = "big"\nmax_tables = 3'))
    service = Service(load_service(example / "service.toml"), Plugins.create())
    with pytest.raises(ConfigurationError) as caught:
        asyncio.run(service.start())
    problems = caught.value.problems
    assert f"{resource}: apis.osrm.limits.max_table_size: expected an integer (-1 for unlimited), got 'big'" in problems
    assert f"{resource}: apis.osrm.limits.max_tables: unknown limit (expected one of " in "\n".join(problems)
    assert service.state == "failed"


def test_a_republished_resource_brings_its_new_native_settings(osrm_example: Path, tmp_path: Path) -> None:
    example = tmp_path / "monaco"
    shutil.copytree(osrm_example, example, symlinks=True)
    resource = example / "resources" / "monaco-osrm.resource"
    three = "7.41337,43.72956;7.41983,43.73115;7.4246,43.7383"
    app = create_app(load_service(example / "service.toml"), Plugins.create())
    with TestClient(app) as client:
        assert client.get(f"/osrm/1.0.0/monaco-osrm/route/v1/driving/{three}").status_code == 200
        resource.write_text(
            resource.read_text()
            .replace("max_viaroute_size = 500", "max_viaroute_size = 2")
            .replace('driving = "car/fastest"', 'auto = "car/fastest"')
        )
        assert client.portal is not None
        client.portal.call(app.state.service.publish_resource, "monaco-osrm")
        too_big = client.get(f"/osrm/1.0.0/monaco-osrm/route/v1/auto/{three}")
        assert (too_big.status_code, too_big.json()) == (
            400,
            {"code": "TooBig", "message": "Number of entries 3 is higher than current maximum (2)"},
        )
        assert client.get(f"/osrm/1.0.0/monaco-osrm/route/v1/driving/{three}").json()["code"] == "InvalidProfile"


def test_the_openapi_document_is_valid_and_served(client: TestClient) -> None:
    from openapi_spec_validator import validate

    index = client.get("/osrm/1.0.0/").json()
    document = client.get("/osrm/1.0.0/openapi.json").json()
    validate(document)
    assert index["links"][0]["href"] == "http://testserver/osrm/1.0.0/openapi.json"
    assert document["servers"] == [{"url": "http://testserver/osrm/1.0.0"}]
    # One path per resource and service it answers (OSRM's URL, Road2's per optimization, POST's without coordinates).
    expected = {"/resources"}
    for resource in client.get("/osrm/1.0.0/resources").json():
        optimizations = {o["id"] for p in resource["profiles"] for o in p["optimizations"]}
        for service in resource["services"]:
            heads = [f"/{resource['id']}/{service}/v1/{{profile}}"]
            heads += [f"/{resource['id']}/{{profile}}/{o}/{service}/v1/_" for o in optimizations]
            expected |= {f"{head}/{{coordinates}}" for head in heads}
            if service in ("route", "nearest", "table", "match"):
                expected |= set(heads)
    assert set(document["paths"]) == expected
    assert "/monaco-valhalla/table/v1/{profile}/{coordinates}" not in expected, "Valhalla answers route and nearest only"
    table = document["paths"]["/monaco-osrm/table/v1/{profile}/{coordinates}"]["get"]
    options = {p["name"]: p["schema"] for p in table["parameters"] if p["in"] == "query"}
    assert options["fallback_coordinate"] == {"type": "string", "enum": ["input", "snapped"]}
    assert "alternatives" not in options and "steps" not in options
    route = document["paths"]["/monaco-osrm/route/v1/{profile}"]["post"]
    assert set(route["responses"]) == {"200", "400", "413", "415", "503", "504"}
    body = route["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["coordinates"] and body["properties"]["alternatives"]["anyOf"][1]["maximum"] == 3
    assert client.get("/osrm/1.0.0/openapi").status_code == 200


def test_post_requests_on_roadkit_urls(client: TestClient) -> None:
    body = {"coordinates": [[7.41337, 43.72956], [7.41983, 43.73115]], "steps": True}
    road2 = client.post("/osrm/1.0.0/monaco-osrm/car/shortest/route/v1/_", json=body)
    by_get = client.get(f"/osrm/1.0.0/monaco-osrm/car/shortest/route/v1/_/{COORDS}?steps=true")
    assert road2.status_code == 200 and road2.json()["routes"] == by_get.json()["routes"]
    plain = client.post("/osrm/1.0.0/monaco-osrm/route/v1/car", content=b"{}", headers={"content-type": "text/plain"})
    assert (plain.status_code, plain.json()["code"]) == (415, "InvalidContentType")
    huge = client.post("/osrm/1.0.0/monaco-osrm/route/v1/car", content=b" " * 1_000_001, headers={"content-type": "application/json"})
    assert huge.status_code == 413 and huge.json()["code"] == "InvalidQuery"
    trip = client.post("/osrm/1.0.0/monaco-osrm/trip/v1/car", json=body)
    assert (trip.status_code, trip.json()["code"]) == (400, "NotImplemented")


def test_a_sources_own_limits_narrow_the_resources() -> None:
    from roadkit.contract.native_osrm import NativeLimits

    assert NativeLimits().narrowed({"max_viaroute_size": 20}).max_viaroute_size == 20
    assert NativeLimits().narrowed({"max_viaroute_size": 900}).max_viaroute_size == 500, "never above the resource's"
    assert NativeLimits(max_viaroute_size=-1).narrowed({"max_viaroute_size": 20}).max_viaroute_size == 20, "-1: unlimited"
    assert NativeLimits(max_alternatives=0).narrowed({"max_alternatives": 2}).max_alternatives == 0, "0 alternatives is a limit"
    assert NativeLimits(max_viaroute_size=2).exceeded("route", {"coordinates": [(0, 0)] * 3}) == (
        "TooBig",
        "Number of entries 3 is higher than current maximum (2)",
    )


def test_the_document_describes_the_area_every_source_of_a_path_takes() -> None:
    import re
    from typing import Any

    from roadkit.contract.native_osrm import NativeAnswer, NativeLimits, NativeSource
    from roadkit_osrm.native.openapi import WORLD, area, coordinates_schema

    class Boxed(NativeSource):
        """A source of the native protocol that refuses coordinates outside its box (None: anywhere)."""

        native_services = ("route",)

        def __init__(self, box: tuple[float, float, float, float] | None = None) -> None:
            self.box = box

        @property
        def native_bbox(self) -> tuple[float, float, float, float] | None:
            return self.box

        async def native(self, request: Any) -> NativeAnswer:
            raise NotImplementedError

    osrm, monaco, east = Boxed(), Boxed((7.349, 43.71, 7.491, 43.77)), Boxed((7.4, 43.0, 8.0, 44.0))
    assert area([osrm]) == WORLD, "osrm-routed snaps anywhere"
    assert area([osrm, monaco, east]) == (7.4, 43.71, 7.491, 43.77), "the narrowest: their intersection"
    pattern = re.compile(coordinates_schema("route", NativeLimits(max_viaroute_size=3), area([monaco]))["schema"]["pattern"])
    assert pattern.fullmatch("7.41,43.73;7.42,43.74") and pattern.fullmatch("7.41,43.73;7.42,43.74;7.43,43.75.json")
    assert not pattern.fullmatch("7.41,43.73;7.42,43.74;7.43,43.75;7.44,43.75"), "max_viaroute_size"
    assert not pattern.fullmatch("7.41,43.73;7.348,43.74") and not pattern.fullmatch("-7.41,43.73;7.42,43.74")
