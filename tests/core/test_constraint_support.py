"""The core side of constraint support: what sources say they apply shapes resources, capabilities and 400s."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from starlette.testclient import TestClient

from roadkit import hookimpl
from roadkit.config import load_service
from roadkit.plugins import Plugins
from roadkit.routing.model import ConstraintKeyType
from roadkit.routing.source import Source
from roadkit.serving.app import create_app
from tests.core.conftest import StraightLineSource, make_service, run, write


class PickySource(StraightLineSource):
    """Bans one field at a time, and only the fields named ``ok*``; never prefers nor avoids."""

    kind = "picky"
    constraint_key_types: ClassVar[Mapping[str, ConstraintKeyType]] = {"name-osrm": ConstraintKeyType(("=",))}

    def constraint_problem(self, operation: str, constraint_type: str, key_type: str, field: str | None) -> str | None:
        return None if constraint_type == "banned" else "this engine has no preference weights"

    def supported_bans(self, fields: Collection[str], most: int) -> Collection[frozenset[str]] | None:
        return [frozenset({f}) for f in fields if f.startswith("ok")]


class PickyPlugin:
    @hookimpl
    def roadkit_source_kinds(self) -> Sequence[type[Source]]:
        return [PickySource]


def picky_service(root: Path, values: list[tuple[str, str]], types: str = '["banned"]') -> Path:
    service = make_service(root, sources={"p": 'id = "p"\ntype = "picky"\n'}, resource_sources="")
    available = ", ".join(f'{{ value = "{v}", field = "{f}" }}' for v, f in values)
    write(
        root / "resources" / "picky.resource",
        f'id = "picky"\ntype = "picky"\nsources = ["p"]\n\n[operations.route]\n\n[operations.route.constraints]\n'
        f'keys = [{{ keyType = "name-osrm", key = "way", availableConstraintType = {types}, availableValues = [{available}] }}]\n',
    )
    return service


def client_of(service: Path) -> TestClient:
    return TestClient(create_app(load_service(service), Plugins.create(load_entry_points=False, extra_plugins=[PickyPlugin()])))


def constraints_capability(client: TestClient) -> dict[str, Any]:
    resource = client.get("/simple/1.0.0/getcapabilities").json()["resources"][0]
    route = resource["availableOperations"][0]
    return next(p for p in route["availableParameters"] if p["id"] == "constraints")["values"]  # type: ignore[no-any-return]


def ban(value: str) -> str:
    return f'{{"constraintType":"banned","key":"way","operator":"=","value":"{value}"}}'


def test_values_no_source_can_ban_are_left_out_and_combinations_advertised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with client_of(picky_service(tmp_path, [("a", "ok_a"), ("b", "ok_b"), ("c", "never")])) as client:
        values = constraints_capability(client)
        assert values["keys"][0]["values"] == ["a", "b"]
        assert values["bannedCombinations"] == [
            {"profile": "car", "optimization": "fastest", "combinations": [[{"key": "way", "value": "a"}], [{"key": "way", "value": "b"}]]}
        ]
        response = client.get(
            "/simple/1.0.0/route", params={"resource": "picky", "start": "0,0", "end": "1,1", "constraints": f"{ban('a')}|{ban('b')}"}
        )
        assert response.status_code == 400
        assert response.json()["error"]["message"] == (
            "Parameter 'constraints' is invalid: banning way=a, way=b together is not possible with profile 'car' and optimization "
            "'fastest' on this resource (possible bans: way=a; way=b)"
        )
        assert (
            client.get(
                "/simple/1.0.0/route", params={"resource": "picky", "start": "0,0", "end": "1,1", "constraints": ban("a")}
            ).status_code
            == 200
        )
    assert "no source of the resource can ban way=c (engine field 'never'): left out" in caplog.text


def test_too_many_values_to_list_are_still_checked(tmp_path: Path) -> None:
    values = [(f"v{i}", f"ok{i}") for i in range(13)]
    with client_of(picky_service(tmp_path, values)) as client:
        assert "bannedCombinations" not in constraints_capability(client)
        response = client.get(
            "/simple/1.0.0/route", params={"resource": "picky", "start": "0,0", "end": "1,1", "constraints": f"{ban('v1')}|{ban('v2')}"}
        )
        assert response.status_code == 400 and "(possible bans: too many to list)" in response.json()["error"]["message"]


def test_a_type_a_source_never_applies_is_a_configuration_problem(tmp_path: Path) -> None:
    from roadkit.errors import ConfigurationError
    from roadkit.serving.service import Service

    path = picky_service(tmp_path, [("a", "ok_a")], types='["banned", "prefer"]')
    service = Service(load_service(path), Plugins.create(load_entry_points=False, extra_plugins=[PickyPlugin()]))
    with pytest.raises(ConfigurationError) as caught:
        run(service.start())
    assert caught.value.problems == [
        f"{tmp_path / 'resources' / 'picky.resource'}: operations.route.constraints.keys[key=way].availableConstraintType: 'prefer' is not "
        "applied by source 'p' (picky): this engine has no preference weights"
    ]
