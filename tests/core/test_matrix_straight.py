"""The simple API's matrix operation on the ``straight`` test kind: parameters, limits, errors, crs and units.

The straight kind's matrix holds great-circle distances and their durations at 10 m/s (car), every
point snapped where it is: the numbers are computable. The engines' matrices are compared with
their own servers in the engine tests; the ``island`` kind below adds what only an engine gives
(a point no road is near, a pair with no path).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pyproj import Transformer
from starlette.testclient import TestClient

from roadkit import hookimpl
from roadkit.apis.simple.openapi_exact import matrix_counts
from roadkit.errors import PointNotSnapped
from roadkit.routing.model import MatrixRequest, MatrixResponse
from roadkit.routing.resources import ResourceOperation
from roadkit.routing.source import Source
from roadkit.testing import great_circle, service_client, straight_plugins, straight_resource, straight_source, write_service
from roadkit.testing.straight import StraightSource

MATRIX = "/simple/1.0.0/matrix"
MONACO = "7.349,43.71,7.491,43.77"
POINTS = [(7.41337, 43.72956), (7.41983, 43.73115), (7.4246, 43.7383)]
CAR = 10.0  # m/s
TO_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
#: The island kind: no road west of this longitude, no path to a target north of this latitude.
WEST, NORTH = 7.40, 43.75


def text(points: Sequence[tuple[float, float]]) -> str:
    return "|".join(f"{x},{y}" for x, y in points)


class IslandSource(StraightSource):
    """Straight lines, but a point west of ``WEST`` snaps nowhere and a target north of ``NORTH`` is unreachable."""

    kind = "island"
    resource_type = "straight"

    async def matrix(self, request: MatrixRequest) -> MatrixResponse:
        for name, points in (("sources", request.sources), ("targets", request.targets)):
            for index, point in enumerate(points):
                if point[0] < WEST:
                    raise PointNotSnapped(name, index)
        answer = await super().matrix(request)
        cut = [j for j, target in enumerate(request.targets) if target[1] > NORTH]
        for row in (*answer.durations, *answer.distances):
            for j in cut:
                row[j] = None
        return answer


class IslandPlugin:
    @hookimpl
    def roadkit_source_kinds(self) -> Sequence[type[Source]]:
        return [IslandSource]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """Resource ``lines`` (straight; at most 20 sources, 30 targets, 400 cells), ``island`` and ``no-matrix``."""
    no_matrix = straight_resource("no-matrix", bbox=MONACO).split("[operations.matrix]")[0]
    island = straight_source("island").replace('type = "straight"', 'type = "island"')
    service = write_service(
        tmp_path_factory.mktemp("matrix"),
        {"straight": straight_source(), "island": island},
        {
            "lines": straight_resource("lines", bbox=MONACO),
            "island": straight_resource("island", sources=["island"], bbox=MONACO),
            "no-matrix": no_matrix,
        },
    )
    with service_client(service, straight_plugins(IslandPlugin())) as test_client:
        yield test_client


def error_of(response: Any, status: int = 400) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"errorType", "message"}
    return str(body["error"]["message"])


def flat(matrix: list[list[Any]]) -> list[Any]:
    return [value for row in matrix for value in row]


def expected(sources: Sequence[tuple[float, float]], targets: Sequence[tuple[float, float]]) -> list[list[float]]:
    return [[great_circle(a, b) for b in targets] for a in sources]


# -- answers -----------------------------------------------------------------------------------------


def test_a_get_matrix_answers_every_source_to_every_target(client: TestClient) -> None:
    response = client.get(MATRIX, params={"resource": "lines", "sources": text(POINTS[:2]), "targets": text(POINTS[2:])})
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == [
        "resource",
        "resourceVersion",
        "profile",
        "optimization",
        "crs",
        "timeUnit",
        "distanceUnit",
        "sources",
        "targets",
        "durations",
        "distances",
        "constraints",
    ]
    assert (body["resource"], body["profile"], body["optimization"], body["crs"]) == ("lines", "car", "fastest", "EPSG:4326")
    assert (body["timeUnit"], body["distanceUnit"]) == ("second", "meter")
    assert body["sources"] == [{"geometry": list(p), "distance": 0.0} for p in POINTS[:2]]
    assert body["targets"] == [{"geometry": list(POINTS[2]), "distance": 0.0}]
    meters = expected(POINTS[:2], POINTS[2:])
    assert flat(body["distances"]) == pytest.approx(flat(meters))
    assert flat(body["durations"]) == pytest.approx(flat([[d / CAR for d in row] for row in meters]))
    assert 800 < body["distances"][1][0] < body["distances"][0][0] < 1400


def test_without_targets_the_matrix_is_sources_by_sources(client: TestClient) -> None:
    body = client.get(MATRIX, params={"resource": "lines", "sources": text(POINTS)}).json()
    assert len(body["targets"]) == 3 and body["targets"] == body["sources"]
    assert flat(body["distances"]) == pytest.approx(flat(expected(POINTS, POINTS)))
    assert [body["durations"][i][i] for i in range(3)] == [0.0, 0.0, 0.0]


def test_post_takes_arrays_of_points_and_answers_as_get(client: TestClient) -> None:
    get = client.get(MATRIX, params={"resource": "lines", "sources": text(POINTS[:2]), "targets": text(POINTS)}).json()
    post = client.post(
        MATRIX,
        json={"resource": "lines", "sources": [list(POINTS[0]), f"{POINTS[1][0]},{POINTS[1][1]}"], "targets": [list(p) for p in POINTS]},
    )
    assert post.status_code == 200, post.text
    assert post.json() == get


def test_profile_and_optimization_pick_the_cost(client: TestClient) -> None:
    body = client.get(MATRIX, params={"resource": "lines", "sources": text(POINTS[:2]), "profile": "pedestrian"}).json()
    assert body["profile"] == "pedestrian"
    assert body["durations"][0][1] == pytest.approx(body["distances"][0][1] / 1.0)  # 3.6 km/h
    refused = client.get(
        MATRIX, params={"resource": "lines", "sources": text(POINTS[:2]), "profile": "pedestrian", "optimization": "shortest"}
    )
    assert "Parameters 'profile' and 'optimization' are not compatible: profile 'pedestrian' with optimization 'shortest'" in error_of(
        refused
    )


def test_units_convert_durations_distances_and_snapping_distances(client: TestClient) -> None:
    params = {"resource": "lines", "sources": text(POINTS[:2]), "targets": text(POINTS[2:])}
    base = client.get(MATRIX, params=params).json()
    converted = client.get(MATRIX, params=params | {"timeUnit": "minute", "distanceUnit": "kilometer"}).json()
    assert (converted["timeUnit"], converted["distanceUnit"]) == ("minute", "kilometer")
    assert flat(converted["durations"]) == pytest.approx(flat([[v / 60 for v in row] for row in base["durations"]]))
    assert flat(converted["distances"]) == pytest.approx(flat([[v / 1000 for v in row] for row in base["distances"]]))
    standard = client.get(MATRIX, params=params | {"timeUnit": "standard"}).json()
    seconds = base["durations"][0][0]
    assert standard["durations"][0][0] == f"00:{int(seconds // 60):02d}:{seconds % 60:04.1f}"
    hours = client.get(MATRIX, params=params | {"timeUnit": "hour"}).json()
    assert hours["durations"][1][0] == pytest.approx(base["durations"][1][0] / 3600)


def test_points_in_another_crs_are_answered_in_it(client: TestClient) -> None:
    mercator = [TO_3857.transform(*p) for p in POINTS]
    body = client.get(MATRIX, params={"resource": "lines", "sources": text(mercator), "crs": "EPSG:3857"}).json()
    assert body["crs"] == "EPSG:3857"
    for answered, sent in zip(body["sources"], mercator, strict=True):
        assert answered["geometry"] == pytest.approx(list(sent), abs=0.01)
    assert flat(body["distances"]) == pytest.approx(flat(expected(POINTS, POINTS)), abs=0.01)
    lonlat = client.get(MATRIX, params={"resource": "lines", "sources": text(POINTS), "crs": "EPSG:3857"})
    assert "Parameter 'sources' is invalid: point 0: x = 7.41337 is not in the bbox" in error_of(lonlat)


def test_a_pair_with_no_path_is_null(client: TestClient) -> None:
    north = (7.42, 43.76)
    body = client.get(MATRIX, params={"resource": "island", "sources": text(POINTS[:2]), "targets": text([POINTS[2], north])}).json()
    assert [row[1] for row in body["durations"]] == [None, None] and [row[1] for row in body["distances"]] == [None, None]
    assert all(isinstance(row[0], float) for row in body["durations"])


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_point_no_road_is_near_is_a_400_naming_the_parameter_and_the_index(client: TestClient, method: str) -> None:
    targets = [POINTS[0], POINTS[1], (7.36, 43.73)]
    params = {"resource": "island", "sources": text(POINTS[:1]), "targets": text(targets)}
    response = client.get(MATRIX, params=params) if method == "GET" else client.post(MATRIX, json=params)
    message = error_of(response)
    assert message == "Parameter 'targets' is invalid: point 2: no road of the network is near this point"
    assert response.json()["error"]["errorType"] == "point_not_snapped"


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"sources": "7.41337,43.72956|7.41983,nope"}, "Parameter 'sources' is invalid: point 1: expected a point 'x,y'"),
        ({"sources": "7.41337,43.72956|"}, "Parameter 'sources' is invalid: point 1: expected a point 'x,y'"),
        ({"sources": "7.41337,43.72956|8.5,43.72"}, "Parameter 'sources' is invalid: point 1: x = 8.5 is not in the bbox"),
        ({"sources": "7.41337,43.72956", "targets": "7.4,43.72|7.4,43.72|7.4,43.9"}, "Parameter 'targets' is invalid: point 2: y = 43.9"),
        ({"sources": "7.41337,43.72956,1"}, "Parameter 'sources' is invalid: point 0: expected a point"),
        ({"sources": "1e3,43.7"}, "Parameter 'sources' is invalid: point 0: expected a point"),
        ({}, "Parameter 'sources' not found"),
        (
            {"sources": "7.41337,43.72956", "timeUnit": "day"},
            "Parameter 'timeUnit' is invalid: expected one of hour, minute, second, standard",
        ),
        ({"sources": "7.41337,43.72956", "crs": "EPSG:2154"}, "Parameter 'crs' is invalid"),
    ],
)
def test_bad_get_parameters_are_400s_naming_them(client: TestClient, params: dict[str, str], message: str) -> None:
    assert error_of(client.get(MATRIX, params={"resource": "lines", **params})).startswith(message)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"sources": [[7.41337, 43.72956], [7.41983]]}, "Parameter 'sources' is invalid: point 1: expected a point 'x,y', got [7.41983]"),
        ({"sources": [[7.41337, 43.72956], {"x": 1}]}, "Parameter 'sources' is invalid: point 1: expected a point 'x,y'"),
        ({"sources": [[7.41337, 43.72956], [True, 43.7]]}, "Parameter 'sources' is invalid: point 1: expected a point 'x,y'"),
        ({"sources": []}, "Parameter 'sources' is invalid: expected at least one value, got an empty array"),
        ({"sources": [[7.41337, 43.72956]], "targets": []}, "Parameter 'targets' is invalid: expected at least one value"),
        ({"sources": 3}, "Parameter 'sources' is invalid: expected '|'-separated values or a JSON array, got 3"),
        (
            {"sources": [[7.41337, 43.72956]], "targets": [[7.3, 43.72]]},
            "Parameter 'targets' is invalid: point 0: x = 7.3 is not in the bbox",
        ),
    ],
)
def test_bad_post_parameters_are_400s_naming_them(client: TestClient, body: dict[str, Any], message: str) -> None:
    assert error_of(client.post(MATRIX, json={"resource": "lines", **body})).startswith(message)


def test_a_resource_that_does_not_list_matrix_refuses_it(client: TestClient) -> None:
    response = client.get(MATRIX, params={"resource": "no-matrix", "sources": text(POINTS)})
    assert error_of(response) == "Operation 'matrix' is not permitted on this resource"


# -- limits ------------------------------------------------------------------------------------------


def test_too_many_sources_or_targets_are_refused_naming_the_parameter_and_the_limit(client: TestClient) -> None:
    many = [POINTS[0]] * 21
    assert error_of(client.get(MATRIX, params={"resource": "lines", "sources": text(many)})) == (
        "Parameter 'sources' is invalid: expected between 1 and 20 values, got 21"
    )
    body = {"resource": "lines", "sources": [list(POINTS[0])], "targets": [list(POINTS[0])] * 31}
    assert error_of(client.post(MATRIX, json=body)) == "Parameter 'targets' is invalid: expected between 1 and 30 values, got 31"
    # Refused before any point is read: the first of 10,000 points is not a point at all.
    assert "got 10000" in error_of(client.get(MATRIX, params={"resource": "lines", "sources": "|".join(["x"] * 10_000)}))


def test_too_many_cells_are_refused_naming_the_limit(client: TestClient) -> None:
    twenty = text([POINTS[0]] * 20)
    ok = client.get(MATRIX, params={"resource": "lines", "sources": twenty, "targets": twenty})
    assert ok.status_code == 200 and len(ok.json()["durations"]) == 20
    over = client.get(MATRIX, params={"resource": "lines", "sources": twenty, "targets": text([POINTS[0]] * 21)})
    assert error_of(over) == "Parameter 'targets' is invalid: 20 sources x 21 targets make 420 cells: expected at most 400 on this resource"


def test_capabilities_publish_the_matrix_and_its_limits(client: TestClient) -> None:
    caps = client.get("/simple/1.0.0/getcapabilities").json()
    operation = next(o for o in caps["operations"] if o["id"] == "matrix")
    assert operation["url"] == "http://testserver/simple/1.0.0/matrix?" and operation["methods"] == ["GET", "POST"]
    sources = next(p for p in operation["parameters"] if p["name"] == "sources")
    assert sources["required"] == "true" and sources["style"] == "pipeDelimited"
    resources = {r["id"]: r for r in caps["resources"]}
    assert "matrix" not in [o["id"] for o in resources["no-matrix"]["availableOperations"]]
    matrix = next(o for o in resources["lines"]["availableOperations"] if o["id"] == "matrix")
    assert matrix["limits"] == {"sources": 20, "targets": 30, "cells": 400}
    parameters = {p["id"]: p for p in matrix["availableParameters"]}
    assert (parameters["sources"]["min"], parameters["sources"]["max"]) == (1, 20)
    assert (parameters["targets"]["min"], parameters["targets"]["max"]) == (1, 30)
    assert parameters["sources"]["values"] == {"bbox": MONACO, "projection": "EPSG:4326"}
    assert parameters["optimization"]["values"] == ["fastest", "shortest"]


def test_the_openapi_document_describes_the_matrix_within_its_limits(client: TestClient) -> None:
    document = client.get("/simple/1.0.0/openapi.json").json()
    assert "/matrix" in document["paths"]
    post = document["paths"]["/matrix"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    variant = next(v for v in post["anyOf"] if v["properties"]["resource"] == {"const": "lines"})
    schemas = document["components"]["schemas"]

    def resolved(schema: dict[str, Any]) -> dict[str, Any]:
        return schemas[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema

    def items(name: str) -> int:
        schema = resolved(variant["properties"][name])
        if {"const": ""} in schema["anyOf"]:  # optional: the value, or empty
            schema = resolved(schema["anyOf"][0])
        return int(next(s for s in schema["anyOf"] if s.get("type") == "array")["maxItems"])

    # 20 sources alone make 400 cells, 20 x 20 too: within the cells, as the service accepts.
    assert (items("sources"), items("targets")) == (20, 20)
    assert variant["required"] == ["resource", "sources"]
    assert "MatrixResponse" in schemas


def test_the_document_lowers_the_counts_to_stay_within_the_cells() -> None:
    def counts(sources: int, targets: int, cells: int) -> dict[str, int]:
        return matrix_counts(ResourceOperation("matrix", {}, {"sources": sources, "targets": targets, "cells": cells}))

    assert counts(100, 100, 10_000) == {"sources": 100, "targets": 100}
    assert counts(100, 100, 2_500) == {"sources": 50, "targets": 50}
    assert counts(10, 1000, 5_000) == {"sources": 10, "targets": 500}
    for limits in ((100, 100, 2_500), (10, 1000, 5_000), (7, 3, 20)):
        found = counts(*limits)
        assert found["sources"] * found["targets"] <= limits[2] and found["sources"] ** 2 <= limits[2]


def test_matrix_route_renames_the_operation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MATRIX_ROUTE", "matrice")
    service = write_service(tmp_path, {"straight": straight_source()}, {"lines": straight_resource("lines", bbox=MONACO)})
    with service_client(service, straight_plugins()) as renamed:
        assert renamed.get("/simple/1.0.0/matrice", params={"resource": "lines", "sources": text(POINTS)}).status_code == 200
        assert renamed.get("/simple/1.0.0/matrix", params={"resource": "lines", "sources": text(POINTS)}).status_code == 404
        caps = renamed.get("/simple/1.0.0/getcapabilities").json()
        assert [o["url"] for o in caps["operations"] if o["id"] == "matrix"] == ["http://testserver/simple/1.0.0/matrice?"]
        assert "/matrice" in renamed.get("/simple/1.0.0/openapi.json").json()["paths"]


@pytest.mark.parametrize(
    ("limits", "problem"),
    [
        ("{ sources = 0 }", "operations.matrix.limits.sources: expected a positive integer, got 0"),
        ('{ cells = "many" }', "operations.matrix.limits.cells: expected a positive integer, got 'many'"),
        ("{ rows = 3 }", "operations.matrix.limits.rows: unknown limit (expected sources, targets or cells)"),
    ],
)
def test_bad_limits_in_a_resource_file_name_the_file_and_key(tmp_path: Path, limits: str, problem: str) -> None:
    from roadkit.errors import ConfigurationError

    resource = straight_resource("lines", bbox=MONACO).replace("limits = { sources = 20, targets = 30, cells = 400 }", f"limits = {limits}")
    service = write_service(tmp_path, {"straight": straight_source()}, {"lines": resource})
    with pytest.raises(ConfigurationError) as raised, service_client(service, straight_plugins()):
        pass
    assert any(p.endswith(problem) and "lines.resource" in p for p in raised.value.problems), raised.value.problems


def test_distances_are_great_circle_lengths() -> None:
    # The fixture's expectations rest on the kind's haversine: one degree of longitude at 43.73 N.
    assert great_circle((7.0, 43.73), (8.0, 43.73)) == pytest.approx(111_195 * math.cos(math.radians(43.73)), rel=0.001)
