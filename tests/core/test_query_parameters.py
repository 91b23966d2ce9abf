"""The simple API's query-string reading: Starlette's ``query_params`` (``parse_qsl``) result, whatever the query."""

from __future__ import annotations

import random
from typing import Any
from urllib.parse import parse_qsl

import pytest

from roadkit.apis.simple.inputs import query_parameters
from roadkit.errors import ParameterInvalid


def _reference(query: bytes) -> dict[str, Any] | str:
    """What the simple API read from ``request.query_params`` before: the parameters, or the error's parameter."""
    params: dict[str, Any] = {}
    for key, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if value == "":
            continue
        if key in params:
            return key
        params[key] = value
    return params


def _read(query: bytes) -> dict[str, Any] | str:
    try:
        return query_parameters(query)
    except ParameterInvalid as exc:
        assert exc.detail == "given more than once; expected a single value"
        return exc.parameter


CASES = [
    b"",
    b"&",
    b"&&a=1&&",
    b"a",
    b"a=",
    b"a=&a=1",
    b"a=1&a=2",
    b"=1",
    b"a==b",
    b"a=b=c&d",
    b"resource=monaco&start=7.41,43.72&end=7.42,43.73&getSteps=true",
    b"a=1+2&b=%41%zz&c=%ff",
    b"a=\xe9t\xe9&\xff=1",
    b"constraints={%22key%22:%22x%22}|{}&a+b=c",
]


@pytest.mark.parametrize("query", CASES)
def test_query_is_read_as_parse_qsl_reads_it(query: bytes) -> None:
    assert _read(query) == _reference(query)


def test_random_queries_are_read_as_parse_qsl_reads_them() -> None:
    rng = random.Random(11)
    alphabet = [b"a", b"b", b"=", b"&", b"%", b"+", b"2", b"0", b"\xe9", b",", b"|"]
    for _ in range(5000):
        query = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 14)))
        assert _read(query) == _reference(query), query
