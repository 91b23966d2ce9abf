"""The unit registry: built from the roadkit_cost_units hook, checked when resources are built."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from roadkit import hookimpl
from roadkit.config import load_service
from roadkit.errors import ConfigurationError, ParameterInvalid, PluginError
from roadkit.plugins import Plugins
from roadkit.routing.units import CORE_UNITS, UnitRegistry
from roadkit.serving.app import create_app
from roadkit.serving.service import Service
from tests.core.conftest import TestPlugin, make_service, run

MILE = 1609.344


class Miles:
    @hookimpl
    def roadkit_cost_units(self) -> dict[str, tuple[str, float]]:
        return {"mile": ("distance", MILE)}


def _with_units(path: Path, distance_units: str) -> Path:
    resource = path.parent / "resources" / "lines.resource"
    text = resource.read_text().replace(
        "[operations.nearest]", f'distanceUnit = {{ values = [{distance_units}], default = "meter" }}\n[operations.nearest]'
    )
    resource.write_text(text)
    return path


def test_a_plugin_unit_is_accepted_and_converts_route_totals(tmp_path: Path) -> None:
    plugins = Plugins.create(load_entry_points=False, extra_plugins=[TestPlugin(), Miles()])
    service = Service(load_service(_with_units(make_service(tmp_path), '"meter", "mile"')), plugins)
    run(service.start())
    params = {"resource": "lines", "start": "0,0", "end": "0,1"}
    with TestClient(create_app(service, manage_lifecycle=False)) as client:
        meters = client.get("/simple/1.0.0/route", params={**params, "distanceUnit": "meter"})
        miles = client.get("/simple/1.0.0/route", params={**params, "distanceUnit": "mile"})
        capabilities = client.get("/simple/1.0.0/getcapabilities").json()
    assert meters.status_code == miles.status_code == 200, miles.text
    assert miles.json()["distanceUnit"] == "mile"
    assert miles.json()["distance"] == pytest.approx(meters.json()["distance"] / MILE)
    (route,) = [op for op in capabilities["resources"][0]["availableOperations"] if op["id"] == "route"]
    (unit,) = [p for p in route["availableParameters"] if p["id"] == "distanceUnit"]
    assert "mile" in str(unit["values"])


def test_a_plugin_unit_is_offered_by_a_resource_that_lists_no_units(tmp_path: Path) -> None:
    plugins = Plugins.create(load_entry_points=False, extra_plugins=[TestPlugin(), Miles()])
    service = Service(load_service(make_service(tmp_path)), plugins)
    run(service.start())
    with TestClient(create_app(service, manage_lifecycle=False)) as client:
        miles = client.get("/simple/1.0.0/route", params={"resource": "lines", "start": "0,0", "end": "0,1", "distanceUnit": "mile"})
    assert miles.status_code == 200, miles.text


def test_an_unknown_unit_in_a_resource_is_a_configuration_error_naming_the_file(tmp_path: Path, plugins: Plugins) -> None:
    service = Service(load_service(_with_units(make_service(tmp_path), '"meter", "mile"')), plugins)  # no Miles plugin
    with pytest.raises(ConfigurationError) as raised:
        run(service.start())
    (problem,) = raised.value.problems
    assert str(tmp_path / "resources" / "lines.resource") in problem
    assert "operations.route.distanceUnit.values" in problem and "'mile'" in problem and "meter, kilometer" in problem


def test_a_time_unit_is_no_distance_unit(tmp_path: Path, plugins: Plugins) -> None:
    service = Service(load_service(_with_units(make_service(tmp_path), '"meter", "minute"')), plugins)
    with pytest.raises(ConfigurationError, match="unknown distance unit 'minute'"):
        run(service.start())


def test_the_registry_refuses_bad_plugin_units_and_converts_both_ways() -> None:
    with pytest.raises(PluginError, match=r"'league'.*cost type 'length'"):
        UnitRegistry({"league": ("length", 4828.0)})
    with pytest.raises(PluginError, match=r"'nothing'.*not a positive number"):
        UnitRegistry({"nothing": ("distance", 0)})
    units = UnitRegistry(CORE_UNITS)
    assert units.names("time") == ["hour", "minute", "second", "standard"]
    assert units.to_engine("kilometer", 2.5, "distance") == 2500.0
    assert units.from_engine("minute", 90.0) == 1.5
    assert units.from_engine("standard", 3723.2) == "01:02:03.2"
    with pytest.raises(ParameterInvalid, match="unknown time unit 'meter'"):
        units.to_engine("meter", 1.0, "time", parameter="timeUnit")


def test_a_later_plugin_redefines_a_unit() -> None:
    class RoundMile:
        @hookimpl
        def roadkit_cost_units(self) -> dict[str, tuple[str, float]]:
            return {"mile": ("distance", 1600.0)}

    units = Plugins.create(load_entry_points=False, extra_plugins=[Miles(), RoundMile()]).cost_units()
    assert units["mile"].factor == 1600.0


def test_a_units_writer_writes_as_from_engine() -> None:
    units = UnitRegistry({**CORE_UNITS, "furlong": ("distance", 201.168)})
    for name in [*CORE_UNITS, "furlong"]:
        write = units.writer(name)
        for value in (0.0, 0.4, 59.5, 61.0, 3599.6, 86400.0 * 2 + 1.25, 12345.678):
            assert write(value) == units.from_engine(name, value)
