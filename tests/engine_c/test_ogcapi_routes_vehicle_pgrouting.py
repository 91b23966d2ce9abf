"""OGC API – Routes on pgRouting: the height and weight classes (a ways table with limit columns) and obstacles.

The Monaco graph has no limit columns: the tests copy its schema into ``monaco_limits``, add a height and a
weight column, put low limits on the edges in the middle of a route, and point a copy of the example's
source at it. Abstract tests (``test_ats_*``) follow OGC API – Routes Part 1, annex A.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from shapely import LineString, Point, Polygon, box
from starlette.testclient import TestClient

from roadkit.config.loader import read_source
from roadkit.errors import ConfigurationError, SourceUnavailable
from roadkit.plugins import Plugins
from roadkit.routing.source import SourceState
from roadkit.testing import service_client
from roadkit_pgrouting.source import PgRoutingSource
from tests import ogcapi_routes_support as ogc
from tests.engine_c.conftest import make_pg_example

RID = "monaco-pgrouting"
ROUTES = f"/ogcapi-routes/1.0/{RID}/routes"
SCHEMA = "monaco_limits"
COPY = f"""
DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA};
CREATE TABLE {SCHEMA}.ways (LIKE monaco.ways INCLUDING ALL);
INSERT INTO {SCHEMA}.ways SELECT * FROM monaco.ways;
CREATE TABLE {SCHEMA}.ways_vertices_pgr (LIKE monaco.ways_vertices_pgr INCLUDING ALL);
INSERT INTO {SCHEMA}.ways_vertices_pgr SELECT * FROM monaco.ways_vertices_pgr;
CREATE TABLE {SCHEMA}.turn_restrictions (LIKE monaco.turn_restrictions INCLUDING ALL);
INSERT INTO {SCHEMA}.turn_restrictions SELECT * FROM monaco.turn_restrictions;
ALTER TABLE {SCHEMA}.ways ADD COLUMN maxheight float8, ADD COLUMN maxweight real;
ANALYZE {SCHEMA}.ways;
"""
#: Within this distance of the waypoint the route starts and ends (the abstract tests' tolerance).
TOLERANCE_M = 60.0
#: Where the limits go: the edges within a few metres of the middle of the route from START to END.
MIDDLE = 3.0
LOW_HEIGHT, LOW_WEIGHT = 3.0, 7.5


def run_sql(dsn: str, sql: str, *args: Any) -> Any:
    async def go() -> Any:
        conn = await asyncpg.connect(dsn)
        try:
            if not args:  # a script of several statements
                return await conn.execute(sql)
            return await conn.fetch(sql, *args)
        finally:
            await conn.close()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def limits_example(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example on the copy of the graph, its source naming the limit columns."""
    run_sql(pg_dsn, COPY)
    example = make_pg_example(tmp_path_factory.mktemp("monaco-limits"), pg_dsn)
    source = example / "sources" / "monaco-pgrouting.source"
    text = source.read_text(encoding="utf-8")
    assert 'schema = "monaco"\n' in text
    source.write_text(
        text.replace('schema = "monaco"\n', f'schema = "{SCHEMA}"\nmax_height_column = "maxheight"\nmax_weight_column = "maxweight"\n'),
        encoding="utf-8",
    )
    return example


@pytest.fixture(scope="module")
def client(limits_example: Path) -> Iterator[TestClient]:
    with service_client(limits_example / "service.toml", Plugins.create()) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def limited(client: TestClient, pg_dsn: str) -> list[Point]:
    """Low limits on the edges in the middle of the plain route from START to END: the middle of each such edge."""
    line = overview_line(ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END))))
    middle = line.interpolate(0.5, normalized=True)
    rows = run_sql(
        pg_dsn,
        f"""UPDATE {SCHEMA}.ways SET maxheight = $3, maxweight = $4
        WHERE ST_DWithin(the_geom::geography, ST_SetSRID(ST_MakePoint($1, $2), 4326)::geography, {MIDDLE})
        RETURNING ST_X(ST_LineInterpolatePoint(the_geom, 0.5)) AS x, ST_Y(ST_LineInterpolatePoint(the_geom, 0.5)) AS y""",
        middle.x,
        middle.y,
        LOW_HEIGHT,
        LOW_WEIGHT,
    )
    assert rows, "no edge under the middle of the route"
    return [Point(row["x"], row["y"]) for row in rows]


def overview_line(route: dict[str, Any]) -> LineString:
    return LineString(route["features"][0]["geometry"]["coordinates"])


def passes(line: LineString, points: list[Point]) -> bool:
    """Whether the route runs along one of the limited edges (through its middle)."""
    return any(line.distance(point) < 1e-6 for point in points)


def near(route: dict[str, Any], start: list[float], end: list[float]) -> bool:
    coordinates = route["features"][0]["geometry"]["coordinates"]
    return ogc.distance_m(coordinates[0], start) < TOLERANCE_M and ogc.distance_m(coordinates[-1], end) < TOLERANCE_M


def test_the_classes_are_declared_where_the_source_has_the_columns(client: TestClient, pg_example: Path) -> None:
    classes = client.get(f"/ogcapi-routes/1.0/{RID}/conformance").json()["conformsTo"]
    assert {ogc.SPEC + "height", ogc.SPEC + "weight", ogc.SPEC + "obstacles"} <= set(classes)
    document = client.get(f"/ogcapi-routes/1.0/{RID}/api").json()
    assert "height" in str(document) and "weight" in str(document)
    # The example's graph has no limit columns: no height nor weight there, and a request with one is a 400.
    with service_client(pg_example / "service.toml", Plugins.create()) as plain:
        classes = plain.get(f"/ogcapi-routes/1.0/{RID}/conformance").json()["conformsTo"]
        assert ogc.SPEC + "height" not in classes and ogc.SPEC + "weight" not in classes and ogc.SPEC + "obstacles" in classes
        answer = plain.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, weight=3))
        assert answer.status_code == 400 and "inputs.weight" in answer.json()["error"]["message"]


def test_a_vehicle_below_the_limits_takes_the_limited_edges(client: TestClient, limited: list[Point]) -> None:
    for vehicle in ({"height": LOW_HEIGHT - 0.5}, {"weight": LOW_WEIGHT}, {"height": LOW_HEIGHT, "weight": 1.0}):
        route = ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, **vehicle)))
        assert passes(overview_line(route), limited), vehicle
        properties = route["features"][0]["properties"]
        assert properties.get("maxHeight_m") == vehicle.get("height") and properties.get("maxWeight_t") == vehicle.get("weight")


def test_a_vehicle_above_a_limit_goes_round_it(client: TestClient, limited: list[Point]) -> None:
    plain = ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END)))
    assert passes(overview_line(plain), limited)
    for vehicle in ({"height": LOW_HEIGHT + 0.5}, {"weight": LOW_WEIGHT + 0.1}, {"height": 1.0, "weight": 40.0}):
        route = ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, **vehicle)))
        assert not passes(overview_line(route), limited), vehicle
        assert near(route, ogc.START, ogc.END)
        assert route["features"][0]["properties"]["length_m"] > plain["features"][0]["properties"]["length_m"]
    # Beside "inputs", as the abstract tests send them.
    beside = {**ogc.definition(ogc.START, ogc.END), "height": LOW_HEIGHT + 1}
    assert not passes(overview_line(ogc.valid_route(client.post(ROUTES, json=beside))), limited)


def test_no_route_for_a_vehicle_above_every_limit_is_422(client: TestClient, pg_dsn: str) -> None:
    run_sql(pg_dsn, f"UPDATE {SCHEMA}.ways SET maxheight = 2.0 WHERE maxheight IS NULL")
    try:
        # Every edge now has a limit, none above LOW_HEIGHT.
        answer = client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, height=LOW_HEIGHT + 0.5))
        assert answer.status_code == 422, answer.text
        ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, height=2.0)))
    finally:
        run_sql(pg_dsn, f"UPDATE {SCHEMA}.ways SET maxheight = NULL WHERE maxheight = 2.0")


def test_heights_and_weights_out_of_range_are_400(client: TestClient) -> None:
    for member, value in (("height", -1), ("height", "4"), ("height", 101), ("weight", True), ("weight", 1e9), ("weight", None)):
        for body in (ogc.definition(ogc.START, ogc.END, **{member: value}), {**ogc.definition(ogc.START, ogc.END), member: value}):
            answer = client.post(ROUTES, json=body)
            assert answer.status_code == 400, (member, value, answer.text)
            assert member in answer.json()["error"]["message"]


def check_compute_route_success(client: TestClient, dimension: str, values: tuple[float, ...]) -> None:
    """Every ordered pair of three positions and each value of ``dimension`` beside ``inputs``, as annex A sends them."""
    key = "maxHeight_m" if dimension == "height" else "maxWeight_t"
    for (start, end), value in itertools.product(itertools.permutations(ogc.FIVE[:3], 2), values):
        answer = client.post(ROUTES, json={**ogc.definition(start, end), dimension: value}, headers={"accept": "application/geo+json"})
        route = ogc.valid_route(answer)
        assert near(route, start, end), (start, end, value)
        assert route["features"][0]["properties"].get(key, value) >= value


def test_ats_height_compute_route_success(client: TestClient, limited: list[Point]) -> None:
    """/conf/height/compute-route-success: routes for vehicles 2, 3 and 5 m high between every ordered pair of three positions."""
    check_compute_route_success(client, "height", (2, 3, 5))


def test_ats_weight_compute_route_success(client: TestClient, limited: list[Point]) -> None:
    """/conf/weight/compute-route-success: routes for vehicles of 3, 5 and 10 t between every ordered pair of three positions."""
    check_compute_route_success(client, "weight", (3, 5, 10))


def rectangle(start: list[float], end: list[float]) -> list[list[float]]:
    """A rectangle between two positions (the middle fifth of the box they span), as the abstract test asks."""
    (x0, x1), (y0, y1) = sorted((start[0], end[0])), sorted((start[1], end[1]))
    lonm, lonn = x0 + 0.4 * (x1 - x0), x0 + 0.6 * (x1 - x0)
    latm, latn = y0 + 0.4 * (y1 - y0), y0 + 0.6 * (y1 - y0)
    return [[lonm, latm], [lonn, latm], [lonn, latn], [lonm, latn], [lonm, latm]]


def test_ats_obstacles_compute_route_success(client: TestClient) -> None:
    """/conf/obstacles/compute-route-success: every ordered pair of three of five positions, a rectangle between
    them as obstacle (beside ``inputs``): the route starts and ends at the positions and never crosses it."""
    for start, end in itertools.permutations(ogc.FIVE[:3], 2):
        ring = rectangle(start, end)
        obstacles = {"type": "MultiPolygon", "coordinates": [[ring]]}
        answer = client.post(ROUTES, json={**ogc.definition(start, end), "obstacles": obstacles})
        route = ogc.valid_route(answer)
        assert near(route, start, end)
        assert not overview_line(route).intersects(Polygon(ring)), (start, end)
        assert route["features"][0]["properties"]["obstacles"].startswith("avoided")


def test_a_route_goes_round_an_obstacle_on_its_way(client: TestClient) -> None:
    line = overview_line(ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END))))
    middle = line.interpolate(0.5, normalized=True)
    block = box(middle.x - 0.0003, middle.y - 0.0003, middle.x + 0.0003, middle.y + 0.0003)
    assert line.intersects(block)
    ring = [list(point) for point in block.exterior.coords]
    for obstacles in ({"value": {"type": "MultiPolygon", "coordinates": [[ring]]}}, {"type": "MultiPolygon", "coordinates": [[ring[:-1]]]}):
        route = ogc.valid_route(client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, obstacles=obstacles)))
        assert not overview_line(route).intersects(block)
        assert near(route, ogc.START, ogc.END)


def test_no_route_round_an_obstacle_is_422(client: TestClient) -> None:
    # A band from the sea to beyond the graph's northern edge, between START and END: no way across.
    band = [[7.4160, 43.60], [7.4165, 43.60], [7.4165, 43.90], [7.4160, 43.90], [7.4160, 43.60]]
    answer = client.post(
        ROUTES, json=ogc.definition(ogc.START, ogc.END, obstacles={"value": {"type": "MultiPolygon", "coordinates": [[band]]}})
    )
    assert answer.status_code == 422, answer.text
    around_end = [
        [x + dx, y + dy]
        for (x, y), (dx, dy) in zip(
            [ogc.END] * 5, [(-1e-3, -1e-3), (1e-3, -1e-3), (1e-3, 1e-3), (-1e-3, 1e-3), (-1e-3, -1e-3)], strict=True
        )
    ]
    answer = client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, obstacles={"type": "MultiPolygon", "coordinates": [[around_end]]}))
    assert answer.status_code == 422 and "waypoint 1 is inside an obstacle" in answer.text


def test_obstacles_are_bounded(client: TestClient) -> None:
    ring = rectangle(ogc.START, ogc.END)
    too_many = {"type": "MultiPolygon", "coordinates": [[ring]] * 21}
    answer = client.post(ROUTES, json=ogc.definition(ogc.START, ogc.END, obstacles=too_many))
    assert answer.status_code == 400 and "inputs.obstacles.coordinates" in answer.text
    long_ring = [[7.40 + i * 1e-5, 43.70] for i in range(200)] + [[7.40, 43.71], [7.40, 43.70]]
    answer = client.post(
        ROUTES, json={**ogc.definition(ogc.START, ogc.END), "obstacles": {"type": "MultiPolygon", "coordinates": [[long_ring]]}}
    )
    assert answer.status_code == 400 and "obstacles.coordinates[0][0]" in answer.text


def limits_source(example: Path, folder: Path, height_column: str) -> Path:
    """The example's source file on the copy of the graph, its height limit in ``height_column``."""
    text = (example / "sources" / "monaco-pgrouting.source").read_text(encoding="utf-8")
    text = text.replace('max_height_column = "maxheight"', f"max_height_column = {json.dumps(height_column)}")
    text = text.replace('"../pgrouting.database.toml"', json.dumps(str(example / "pgrouting.database.toml")))
    path = folder / "limits.source"
    path.write_text(text, encoding="utf-8")
    return path


def test_limit_columns_are_identifiers(limits_example: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"storage\.max_height_column: expected an SQL identifier"):
        PgRoutingSource.from_config(read_source(limits_source(limits_example, tmp_path, "maxheight; DROP TABLE x")))


@pytest.mark.parametrize("column, reason", [("no_such_column", "has no column no_such_column"), ("name", "a limit column must be numeric")])
async def test_a_missing_or_text_limit_column_makes_the_source_red(limits_example: Path, tmp_path: Path, column: str, reason: str) -> None:
    source = PgRoutingSource.from_config(read_source(limits_source(limits_example, tmp_path, column)))
    try:
        with pytest.raises(SourceUnavailable):
            await source.connect()
        assert source.state is SourceState.RED and reason in source.health()["reason"]
    finally:
        await source.disconnect()
