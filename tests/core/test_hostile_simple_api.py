"""The simple API never fails open: hostile values in every parameter, GET and POST, are 4xx answers naming it.

The parameters come from the service's OpenAPI document (a new parameter is fuzzed without a change
here); the engine is the ``straight`` test kind, as parsing is core's whatever the engine. Constraints
(which the straight kind has none of) are fuzzed on OSRM in ``tests/engine_a/test_hostile_native_api.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient

from roadkit.errors import ParameterInvalid
from roadkit.routing.json_input import MAX_JSON_DEPTH, JsonInputError, read_json
from roadkit.routing.model import ConstraintKeyType
from roadkit.routing.operations import OPERATIONS
from roadkit.routing.parameters import ConstraintParameter, build_parameter
from roadkit.testing import service_client, straight_plugins, straight_resource, straight_source, write_service
from tests.hostile import HOSTILE_JSON, HOSTILE_TEXTS, check_refused, json_with, operation_parameters, raw_get

MONACO = "7.349,43.71,7.491,43.77"
#: A valid request of each operation, on the straight resource ``lines``.
VALID: dict[str, dict[str, Any]] = {
    "/route": {"resource": "lines", "start": "7.41337,43.72956", "end": "7.41983,43.73115"},
    "/isochrone": {"resource": "lines", "point": "7.41337,43.72956", "costValue": "100"},
    "/nearest": {"resource": "lines", "coordinates": "7.41337,43.72956"},
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    service = write_service(
        tmp_path_factory.mktemp("hostile"), {"straight": straight_source()}, {"lines": straight_resource("lines", bbox=MONACO)}
    )
    with service_client(service, straight_plugins()) as test_client:
        yield test_client


def fuzz_simple_api(client: TestClient, valid: Mapping[str, Mapping[str, Any]]) -> int:
    """Every hostile value in every parameter of every operation, GET and POST; the number of requests."""
    document = client.get("/simple/1.0.0/openapi.json").json()
    sent = 0
    for path, base in valid.items():
        assert client.get(f"/simple/1.0.0{path}", params=base).status_code == 200, f"{path}: the valid request fails"
        for method in ("get", "post"):
            names = operation_parameters(document, path, method)
            assert set(base) <= set(names), f"{method} {path}: the document lists {names}"
            for name in names:
                for label, text in HOSTILE_TEXTS.items():
                    what = f"{method.upper()} {path} {name}={label}"
                    if method == "get":
                        response = raw_get(client, f"/simple/1.0.0{path}", urlencode({**base, name: text}).encode())
                    else:
                        response = client.post(f"/simple/1.0.0{path}", json={**base, name: text})
                    sent += 1
                    if text == "" and name not in base:
                        # An empty value is an absent one (Road2's rule): the optional parameter's default.
                        assert response.status_code == 200, f"{what}: {response.text[:300]}"
                        continue
                    check_refused(response, name if text else None, what=what)
                if method == "post":
                    for label, literal in HOSTILE_JSON.items():
                        what = f"POST {path} {name}: {label}"
                        response = client.post(
                            f"/simple/1.0.0{path}", content=json_with(base, name, literal), headers={"content-type": "application/json"}
                        )
                        sent += 1
                        # Nesting past the bound refuses the whole body before any parameter is read.
                        message = check_refused(response, None if "3000" in label else name, what=what)
                        if "3000" in label:
                            assert f"nested deeper than {MAX_JSON_DEPTH} levels" in message, f"{what}: {message}"
    return sent


def test_hostile_values_in_every_parameter_are_400s_naming_it(client: TestClient) -> None:
    sent = fuzz_simple_api(client, VALID)
    assert sent > 1000  # every operation's parameters were reached


def test_a_number_json_reads_as_infinity_is_a_400_naming_the_parameter(client: TestClient) -> None:
    body = json_with(VALID["/nearest"], "nbPoints", "1e999")
    response = client.post("/simple/1.0.0/nearest", content=body, headers={"content-type": "application/json"})
    message = check_refused(response, "nbPoints", what="nbPoints=1e999")
    assert message == "Parameter 'nbPoints' is invalid: expected a finite number of at most 64 characters, got 1e999"


def test_integers_are_bounded_to_32_bits_and_points_to_finite_numbers(client: TestClient) -> None:
    big = client.get("/simple/1.0.0/nearest", params={**VALID["/nearest"], "nbPoints": str(2**31)})
    assert "expected an integer from -2147483648 to 2147483647" in check_refused(big, "nbPoints", what="2**31")
    far = client.post("/simple/1.0.0/nearest", json={**VALID["/nearest"], "coordinates": [1e308, 43.7]})
    assert "is not in the bbox" in check_refused(far, "coordinates", what="1e308")
    long_point = client.get("/simple/1.0.0/nearest", params={**VALID["/nearest"], "coordinates": "7." + "1" * 80 + ",43.7"})
    assert "at most 64 characters" in check_refused(long_point, "coordinates", what="80 digits")


def test_a_query_longer_than_the_body_limit_is_a_414(client: TestClient) -> None:
    response = raw_get(client, "/simple/1.0.0/route", urlencode({**VALID["/route"], "profile": "x" * 1_000_001}).encode())
    assert "Query string too long: at most 1000000 bytes" in check_refused(response, None, what="a long query")
    assert response.status_code == 414


def test_the_json_reader_refuses_what_python_would_read_or_crash_on() -> None:
    for text, where in (
        ('{"a": NaN}', "a"),
        ('{"a": [1, {"b": -Infinity}]}', "a[1].b"),
        ('{"a": 1e999}', "a"),
        ('{"a": ' + "1" * 5000 + "}", "a"),
        ("[" * 3000, ""),
        ('["\\n", ' + "[" * 3000 + "]" * 3000 + "]", ""),  # an escape before a quotation mark hides no nesting
        ('["' + "[" * 100 + '"]', None),  # brackets inside a string are no nesting
        ('["\\"' + "[" * 100 + '"]', None),  # nor after an escaped quotation mark
    ):
        if where is None:
            assert read_json(text) == [text[2:-2].replace('\\"', '"')]
            continue
        with pytest.raises(JsonInputError) as caught:
            read_json(text)
        assert caught.value.where == where, text[:40]
    assert read_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    with pytest.raises(JsonInputError, match="nested deeper than"):
        read_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))


def test_a_cost_ratio_must_be_a_finite_positive_number() -> None:
    # The constraint parameter is core's, whatever the engine (pgRouting's SQL multiplies costs by the ratio).
    spec = next(s for s in OPERATIONS["route"] if s.name == "constraints")
    settings = {
        "keys": [
            {
                "keyType": "name-pgr",
                "key": "waytype",
                "availableConstraintType": ["banned", "prefer", "avoid"],
                "availableValues": [{"value": "tunnel", "field": "tunnel"}],
            }
        ]
    }
    problems: list[str] = []
    parameter = build_parameter(spec, settings, None, "r", problems, {"name-pgr": ConstraintKeyType()})
    assert not problems and isinstance(parameter, ConstraintParameter)
    good = '{"constraintType": "avoid", "key": "waytype", "operator": "=", "value": "tunnel", "costRatio": %s}'
    assert parameter.parse(good % "2").ratio == 2
    for ratio in ("NaN", "Infinity", "-1", "0", "1e999", "1e300", '"2"', "true"):
        with pytest.raises(ParameterInvalid, match="constraints") as caught:
            parameter.parse(good % ratio)
        assert "costRatio" in caught.value.message or "finite number" in caught.value.message, ratio
    for ratio in (float("nan"), float("inf")):  # also when the value comes as a Python object, not JSON text
        with pytest.raises(ParameterInvalid, match="costRatio"):
            parameter.parse({"constraintType": "avoid", "key": "waytype", "operator": "=", "value": "tunnel", "costRatio": ratio})


def test_a_value_whose_conversion_to_the_engines_unit_overflows_is_a_400(client: TestClient) -> None:
    units = client.app.state.service.units  # type: ignore[attr-defined]
    assert units.to_engine("hour", 2.0, "time") == 7200
    with pytest.raises(ParameterInvalid, match=r"Parameter 'costValue' is invalid: 1e\+308 hour is beyond"):
        units.to_engine("hour", 1e308, "time")
