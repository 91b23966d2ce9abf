"""CostTable: how a source with several costs finds the one a request names."""

from __future__ import annotations

from typing import Literal

import attrs
import pytest

from roadkit.contract.sources import Cost, CostTable, ParameterInvalid


@attrs.frozen
class Entry:
    profile: str
    optimization: str | None = None
    cost_type: Literal["time", "distance"] | None = None
    setting: str = ""


TABLE = CostTable(
    "src",
    [
        Entry("car", "fastest", "time", "car-fast"),
        Entry("car", "shortest", "distance", "car-short"),
        Entry("car", None, "distance", "car-iso-distance"),
    ],
)


def test_costs_are_declared_in_configuration_order() -> None:
    assert TABLE.costs() == [Cost("car", "fastest", "time"), Cost("car", "shortest", "distance"), Cost("car", None, "distance")]


def test_the_route_key_wins_over_the_isochrone_key() -> None:
    assert TABLE.find(Cost("car", "shortest", "time")).setting == "car-short"


def test_the_isochrone_key_is_used_without_an_optimization() -> None:
    assert TABLE.find(Cost("car", None, "time")).setting == "car-fast"
    assert TABLE.find(Cost("car", None, "distance")).setting == "car-iso-distance"  # the later entry of a key


def test_an_unknown_cost_is_a_400_naming_the_profile() -> None:
    with pytest.raises(ParameterInvalid) as caught:
        TABLE.find(Cost("bike", "fastest"))
    assert caught.value.status == 400
    assert "profile" in caught.value.message and "bike/fastest" in caught.value.message
