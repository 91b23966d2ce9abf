"""The simple API's matrix on OSRM: answer for answer equal to osrm-routed's ``/table`` on the same Monaco datasets.

osrm-routed runs on each of the example's datasets; the same random points go to its ``/table``
(annotations duration and distance) and to roadkit's matrix. The snapped points, their snapping
distances, the durations (0.1 s) and the distances (1 m) must agree, cell by cell. The in-process
source and the ``osrm-http`` one (forwarding to osrm-routed) are both checked.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyproj import Transformer
from starlette.testclient import TestClient

from roadkit.config.loader import read_source
from roadkit.errors import ParameterInvalid, PointNotSnapped
from roadkit.routing.model import Constraint, Cost, MatrixRequest
from roadkit_osrm import OsrmHttpSource
from tests.engine_servers import EngineServer, osrm_routed, running

MATRIX = "/simple/1.0.0/matrix"
ALGORITHMS = {"car-fastest": "CH", "car-shortest": "CH", "pedestrian-fastest": "MLD"}
TO_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
MOTORWAY = '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}'


def monaco_points(count: int, seed: int) -> list[tuple[float, float]]:
    """Random points over Monaco and its neighbours (rounded as a client would send them)."""
    rng = random.Random(seed)
    return [(round(rng.uniform(7.40, 7.44), 5), round(rng.uniform(43.725, 43.752), 5)) for _ in range(count)]


def text(points: list[tuple[float, float]]) -> str:
    return "|".join(f"{x},{y}" for x, y in points)


@pytest.fixture(scope="module")
def routed(osrm_datasets: dict[str, Path]) -> Iterator[dict[str, EngineServer]]:
    """One osrm-routed per Monaco dataset, on free ports."""
    servers = {name: osrm_routed(osrm_datasets[name], algorithm) for name, algorithm in ALGORITHMS.items()}
    with running(*servers.values()):
        yield servers


def table(server: EngineServer, sources: list[tuple[float, float]], targets: list[tuple[float, float]] | None, **options: str) -> Any:
    """osrm-routed's table of ``sources`` to ``targets`` (the sources when None), durations and distances."""
    coordinates = sources + (targets or [])
    params = {"annotations": "duration,distance", **options}
    if targets is not None:
        params["sources"] = ";".join(str(i) for i in range(len(sources)))
        params["destinations"] = ";".join(str(i) for i in range(len(sources), len(coordinates)))
    path = "/table/v1/driving/" + ";".join(f"{x},{y}" for x, y in coordinates)
    with httpx.Client(trust_env=False) as client:
        answer = client.get(server.url + path, params=params, timeout=30).json()
    assert answer["code"] == "Ok", answer
    return answer


def assert_same_as_routed(body: dict[str, Any], answer: dict[str, Any]) -> None:
    """roadkit's matrix (seconds, meters, EPSG:4326) cell by cell against osrm-routed's table."""
    for ours, theirs in ((body["sources"], answer["sources"]), (body["targets"], answer["destinations"])):
        assert len(ours) == len(theirs)
        for point, waypoint in zip(ours, theirs, strict=True):
            assert point["geometry"] == pytest.approx(waypoint["location"], abs=1e-6)
            assert point["distance"] == pytest.approx(waypoint["distance"], abs=0.01)
    for key, tolerance in (("durations", 0.1), ("distances", 1.0)):
        assert len(body[key]) == len(answer[key])
        for row, expected in zip(body[key], answer[key], strict=True):
            assert len(row) == len(expected)
            for value, wanted in zip(row, expected, strict=True):
                assert (value is None) == (wanted is None)
                if value is not None:
                    assert abs(value - wanted) <= tolerance, (key, value, wanted)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_a_matrix_equals_osrm_routed_table_for_every_cost(client: TestClient, routed: dict[str, EngineServer], name: str) -> None:
    profile, optimization = name.split("-")
    sources, targets = monaco_points(30, 1), monaco_points(20, 2)
    params = {"resource": "monaco-osrm", "sources": text(sources), "targets": text(targets), "profile": profile}
    response = client.get(MATRIX, params=params | {"optimization": optimization, "timeUnit": "second", "distanceUnit": "meter"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["profile"], body["optimization"]) == (profile, optimization)
    assert len(body["durations"]) == 30 and {len(row) for row in body["durations"]} == {20}
    assert_same_as_routed(body, table(routed[name], sources, targets))


def test_without_targets_the_matrix_equals_osrm_routed_square_table(client: TestClient, routed: dict[str, EngineServer]) -> None:
    points = monaco_points(40, 3)
    body = client.get(MATRIX, params={"resource": "monaco-osrm", "sources": text(points)}).json()
    assert body["timeUnit"] == "second" and body["targets"] == body["sources"]
    assert_same_as_routed(body, table(routed["car-fastest"], points, None))
    assert all(body["durations"][i][i] == 0 for i in range(40))


@pytest.mark.parametrize("targets", [None, "7.41337,43.72956"])
def test_a_matrix_of_one_point_is_answered(client: TestClient, targets: str | None) -> None:
    params = {"resource": "monaco-osrm", "sources": "7.41337,43.72956"} | ({"targets": targets} if targets else {})
    body = client.get(MATRIX, params=params).json()
    assert body["durations"] == [[0]] and body["distances"] == [[0]]
    assert len(body["sources"]) == len(body["targets"]) == 1 and body["sources"] == body["targets"]


def test_the_largest_matrix_the_resource_allows_equals_osrm_routed(client: TestClient, routed: dict[str, EngineServer]) -> None:
    sources, targets = monaco_points(100, 4), monaco_points(100, 5)
    body = client.post(MATRIX, json={"resource": "monaco-osrm", "sources": [list(p) for p in sources], "targets": text(targets)}).json()
    assert_same_as_routed(body, table(routed["car-fastest"], sources, targets))
    over = client.get(MATRIX, params={"resource": "monaco-osrm", "sources": text(monaco_points(101, 6))})
    assert over.status_code == 400
    assert over.json()["error"]["message"] == "Parameter 'sources' is invalid: expected between 1 and 100 values, got 101"


def test_a_banned_motorway_equals_osrm_routed_exclude(client: TestClient, routed: dict[str, EngineServer]) -> None:
    # From above Eze (by the A8) to Monaco: the ban makes the trip longer.
    sources, targets = [(7.37612, 43.75813), (7.41337, 43.72956)], [(7.45165, 43.73148), (7.41983, 43.73115)]
    params = {"resource": "monaco-osrm", "sources": text(sources), "targets": text(targets)}
    free = client.get(MATRIX, params=params).json()
    banned = client.get(MATRIX, params=params | {"constraints": MOTORWAY}).json()
    assert banned["constraints"] == [{"type": "banned", "key": "waytype", "operator": "=", "value": "autoroute"}]
    assert_same_as_routed(banned, table(routed["car-fastest"], sources, targets, exclude="motorway"))
    assert banned["durations"][0][0] > free["durations"][0][0]


def test_units_and_crs_convert_the_engine_answer(client: TestClient) -> None:
    points = monaco_points(5, 7)
    base = client.get(MATRIX, params={"resource": "monaco-osrm", "sources": text(points)}).json()
    mercator = [TO_3857.transform(*p) for p in points]
    params = {"resource": "monaco-osrm", "sources": text(mercator), "crs": "EPSG:3857", "timeUnit": "minute", "distanceUnit": "kilometer"}
    converted = client.get(MATRIX, params=params).json()
    assert converted["crs"] == "EPSG:3857"
    for ours, theirs in zip(converted["sources"], base["sources"], strict=True):
        assert ours["geometry"] == pytest.approx(list(TO_3857.transform(*theirs["geometry"])), abs=0.01)
        assert ours["distance"] == pytest.approx(theirs["distance"] / 1000, abs=1e-5)
    for row, expected in zip(converted["durations"], base["durations"], strict=True):
        assert row == pytest.approx([v / 60 for v in expected], abs=0.01)
    for row, expected in zip(converted["distances"], base["distances"], strict=True):
        assert row == pytest.approx([v / 1000 for v in expected], abs=0.005)


async def test_the_osrm_http_source_answers_the_same_matrix(tmp_path: Path, client: TestClient, routed: dict[str, EngineServer]) -> None:
    path = tmp_path / "remote.source"
    path.write_text(
        '{"id": "remote", "type": "osrm-http", "projection": "EPSG:4326", '
        f'"http": {{"servers": ["{routed["pedestrian-fastest"].url}"]}}, "cost": {{"profile": "pedestrian", "optimization": "fastest"}}}}'
    )
    source = OsrmHttpSource.from_config(read_source(path))
    await source.connect()
    try:
        sources, targets = monaco_points(12, 8), monaco_points(9, 9)
        result = await source.matrix(MatrixRequest(tuple(sources), tuple(targets), Cost("pedestrian", "fastest")))
        params = {"resource": "monaco-osrm", "sources": text(sources), "targets": text(targets), "profile": "pedestrian"}
        body = client.get(MATRIX, params=params).json()
        assert result.durations == body["durations"] and result.distances == body["distances"]
        assert [list(p.point) for p in result.sources] == [p["geometry"] for p in body["sources"]]
        # A class the dataset cannot exclude: the engine's refusal, a 400 naming constraints.
        bogus = Constraint("banned", "k", "=", "v", field="bogus")
        with pytest.raises(ParameterInvalid, match="constraints"):
            await source.matrix(MatrixRequest(tuple(sources), tuple(targets), Cost("pedestrian", "fastest"), (bogus,)))
    finally:
        await source.disconnect()


def test_osrm_names_a_point_it_snaps_nowhere_by_its_parameter_and_index() -> None:
    from roadkit_osrm.mapping import TableQuery

    square = TableQuery(((7.41, 43.73), (7.42, 43.73)), ((7.41, 43.73), (7.42, 43.73)))
    error = square.error("NoSegment", "Could not find a matching segment for coordinate 1")
    assert (
        isinstance(error, PointNotSnapped)
        and error.message == "Parameter 'sources' is invalid: point 1: no road of the network is near this point"
    )
    two = TableQuery(((7.41, 43.73),), ((7.42, 43.73), (7.43, 43.73)))
    assert two.error("NoSegment", "Could not find a matching segment for coordinate 2").message.startswith(
        "Parameter 'targets' is invalid: point 1:"
    )
    assert not isinstance(two.error("NoSegment", "Could not find a matching segment"), PointNotSnapped)


def test_after_a_long_matrix_the_source_computes_matrices_in_its_child_process(
    client: TestClient, routed: dict[str, EngineServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a large network a 100 x 100 table takes seconds (33 s on a million edges) and osrm-bindings holds the GIL:
    after one such matrix, the source's next ones run in its engine's child process, with the same answers."""
    from roadkit_osrm import source as osrm_source

    source = client.app.state.service.sources["monaco-osrm-car-fastest"]  # type: ignore[attr-defined]
    monkeypatch.setattr(osrm_source, "INLINE_MATRIX_SECONDS", 0.0)  # every Monaco matrix counts as long
    monkeypatch.setattr(source, "long_matrices", False)
    sources, targets = monaco_points(30, 11), monaco_points(20, 12)
    params = {"resource": "monaco-osrm", "sources": text(sources), "targets": text(targets)}
    inline = client.get(MATRIX, params=params).json()
    assert source.long_matrices and source.long_calls._process is None  # that one ran in the worker
    in_child = client.get(MATRIX, params=params).json()
    assert source.long_calls._process is not None and source.long_calls._process.returncode is None
    assert in_child == inline
    assert_same_as_routed(in_child, table(routed["car-fastest"], sources, targets))
    # The child's errors are the worker's: a point snapped nowhere names its parameter and index.
    far = client.get(MATRIX, params=params | {"targets": "7.41,43.73|1.0,1.0"})
    assert far.status_code == 400 and far.json()["error"]["message"].startswith("Parameter 'targets' is invalid: point 1:")
