"""The engine-agnostic model's helpers."""

from __future__ import annotations

import pytest

from roadkit.model import way_name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Boulevard Albert 1er", "Boulevard Albert 1er"),
        ("", ""),  # an unnamed way stays an empty string
        ('{"name": "Avenue de la Costa", "nature": "route"}', {"name": "Avenue de la Costa", "nature": "route"}),
        ('["A", "B"]', ["A", "B"]),
        ("{not json", "{not json"),  # looks like JSON, is not: kept as it is
        ("[Monaco] quai", "[Monaco] quai"),
    ],
)
def test_way_name_parses_json_names_only(name: str, expected: object) -> None:
    assert way_name(name) == expected
