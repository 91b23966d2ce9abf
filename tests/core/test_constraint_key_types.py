"""Constraint key types come from the source kinds (``Source.constraint_key_types``), not from core."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from roadkit.config.models import ResourceConfig, SourceConfig
from roadkit.routing.model import Constraint, ConstraintKeyType, Cost
from roadkit.routing.parameters import ConstraintParameter
from roadkit.routing.projections import ProjectionRegistry
from roadkit.routing.resources import build_resource
from roadkit.routing.source import Source
from roadkit.routing.units import CORE_UNITS, UnitRegistry


class ThirdPartySource(Source):
    kind = "thirdparty"
    operations = frozenset({"route"})
    constraint_key_types: ClassVar[dict[str, ConstraintKeyType]] = {
        "surface-thirdparty": ConstraintKeyType(("=", "!=")),
        "weight-thirdparty": ConstraintKeyType((">", "<"), numeric=True),
    }

    def costs(self) -> list[Cost]:
        return [Cost("car", "fastest")]


def _resource(keys: list[dict[str, Any]]) -> tuple[Any, list[str]]:
    source = ThirdPartySource(SourceConfig(path=Path("x.source"), id="s", type="thirdparty"), None)
    config = ResourceConfig(
        path=Path("r.resource"), id="r", type="thirdparty", sources=("s",), operations={"route": {"constraints": {"keys": keys}}}
    )
    return build_resource(config, {"s": source}, ProjectionRegistry.from_folder(None), UnitRegistry(CORE_UNITS))


def test_a_third_party_kind_brings_its_own_key_types() -> None:
    resource, problems = _resource(
        [
            {
                "keyType": "surface-thirdparty",
                "key": "surface",
                "availableConstraintType": ["banned"],
                "availableValues": [{"value": "gravel", "field": "gravel"}],
            },
            {"keyType": "weight-thirdparty", "key": "weight", "availableConstraintType": ["banned"], "field": "maxweight"},
        ]
    )
    assert problems == []
    parameter = resource.operations["route"].parameters["constraints"]
    assert isinstance(parameter, ConstraintParameter)
    assert parameter.parse('{"constraintType":"banned","key":"surface","operator":"!=","value":"gravel"}') == Constraint(
        "banned", "surface", "!=", "gravel", field="gravel"
    )
    assert parameter.parse({"constraintType": "banned", "key": "weight", "operator": ">", "value": 3.5}).field == "maxweight"
    capability = parameter.capability()["values"]["keys"]
    assert [k["availableOperators"] for k in capability] == [["=", "!="], [">", "<"]]


def test_a_key_type_the_sources_do_not_declare_is_a_configuration_error() -> None:
    resource, problems = _resource(
        [
            {
                "keyType": "name-osrm",
                "key": "wayType",
                "availableConstraintType": ["banned"],
                "availableValues": [{"value": "autoroute", "field": "motorway"}],
            },
        ]
    )
    assert resource is None
    assert any("keyType: expected one of surface-thirdparty, weight-thirdparty" in p and "'name-osrm'" in p for p in problems)


def test_numeric_key_types_need_a_field_and_numbers() -> None:
    _, problems = _resource([{"keyType": "weight-thirdparty", "key": "weight", "availableConstraintType": ["banned"]}])
    assert any("keys[0].field" in p for p in problems)
