"""The admin API never fails open: hostile values in its path parameters and in every member of its bodies are 4xx answers.

The operations, their path parameters and the members of their bodies come from the admin API's OpenAPI
document; each body member holds each hostile JSON value (and, where the document says it is a number,
each hostile text). The answer names the member (its key path, as configuration errors do).
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from roadkit.plugins import Plugins
from tests.core.conftest import free_port
from tests.core.test_service_management import Admin, configuration
from tests.hostile import HOSTILE_JSON, HOSTILE_TEXTS, check_refused

#: Finite numbers no setting takes (beyond every bound the configuration gives).
EXTREME_NUMBERS = {"1e308": "1e308", "-1e308": "-1e308", "2**64": str(2**64), "-2**63-1": str(-(2**63) - 1)}


@pytest.fixture
async def admin(tmp_path: Path, plugins: Plugins) -> AsyncIterator[Admin]:
    running = Admin(tmp_path, plugins)
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


def valid_bodies() -> dict[tuple[str, str], dict[str, Any]]:
    """A valid body of each write (method, path of the OpenAPI document)."""
    service = {"id": "hostile", "mode": "same-process", "configuration": configuration(free_port())}
    return {
        ("post", "/services"): service,
        ("put", "/services/{service}"): {"mode": "same-process", "configuration": configuration(free_port())},
        ("put", "/services/{service}/sources/{source}"): {"type": "straightline", "profiles": ["car"]},
        ("put", "/services/{service}/resources/{resource}"): {
            "type": "straightline",
            "sources": ["a"],
            "operations": {"route": {"start": {"bbox": "-10,-10,10,10"}, "end": {"bbox": "-10,-10,10,10"}}},
        },
    }


def members(
    schema: Mapping[str, Any], document: Mapping[str, Any], value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], bool]]:
    """(key path, is a number) of each member of ``schema`` that ``value`` (a valid body) holds or may hold.

    Goes through ``$ref``, ``anyOf``/``oneOf``/``allOf`` and the arrays ``value`` holds (their first item).
    """
    if "$ref" in schema:
        target: Any = document
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        yield from members(target, document, value, path)
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, ()):
            if isinstance(branch, dict):
                yield from members(branch, document, value, path)
    types = {schema.get("type")} | {b.get("type") for b in schema.get("anyOf", ()) if isinstance(b, dict)}
    if path and types & {"integer", "number"}:
        yield path, True
    # A member of a table the valid body leaves out is fuzzed too, unless the table needs other keys.
    if isinstance(value, dict) or (value is None and not schema.get("required")):
        for name, sub in schema.get("properties", {}).items():
            if isinstance(sub, dict):
                yield (*path, name), False
                yield from members(sub, document, (value or {}).get(name), (*path, name))
    elif isinstance(value, list) and value and isinstance(schema.get("items"), dict):
        yield from members(schema["items"], document, value[0], (*path, 0))


def with_member(body: dict[str, Any], path: tuple[str | int, ...], literal: str) -> bytes:
    """``body`` as JSON text with the member at ``path`` holding the JSON text ``literal``."""
    marker = "\u0000hostile\u0000"
    target: Any = copy.deepcopy(body)
    holder = target
    for step in path[:-1]:
        holder = holder.setdefault(step, {}) if isinstance(holder, dict) else holder[step]
    holder[path[-1]] = marker
    return json.dumps(target).replace(json.dumps(marker), literal).encode()


def named(path: tuple[str | int, ...]) -> str:
    """The member's name as messages give it: its last key."""
    return str(next(step for step in reversed(path) if isinstance(step, str)))


async def test_hostile_values_in_every_admin_body_member_are_4xx_naming_it(admin: Admin) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        document = (await client.get(f"{admin.base}/openapi.json")).json()
        fuzzed: dict[str, int] = {}
        for (method, path), body in valid_bodies().items():
            schema = document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
            url = admin.base + path.format(service="main", source="a", resource="lines")
            found: dict[tuple[str | int, ...], bool] = {}  # a member reached by several branches: a number if one says so
            for where, number in members(schema, document, body):
                found[where] = found.get(where, False) or number
            for where, number in found.items():
                literals = dict(HOSTILE_JSON)
                if number:
                    literals |= EXTREME_NUMBERS | {f"text {k}": json.dumps(v) for k, v in HOSTILE_TEXTS.items()}
                for label, literal in literals.items():
                    what = f"{method.upper()} {path} {where}: {label}"
                    response = await client.request(
                        method.upper(), url, content=with_member(body, where, literal), headers={"content-type": "application/json"}
                    )
                    fuzzed[path] = fuzzed.get(path, 0) + 1
                    check_refused(response, None if "3000" in label else named(where), what=what)
        assert set(fuzzed) == {path for _, path in valid_bodies()}, fuzzed
        assert (await client.get(f"{admin.base}/services")).json()[0]["id"] == "main" and len(
            (await client.get(f"{admin.base}/services")).json()
        ) == 1


async def test_hostile_values_in_every_admin_path_parameter_are_4xx_naming_it(admin: Admin) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        document = (await client.get(f"{admin.base}/openapi.json")).json()
        count = 0
        for path, operations in document["paths"].items():
            for method, operation in operations.items():
                names = [p["name"] for p in operation.get("parameters", ()) if p.get("in") == "path"]
                for name in names:
                    for label, text in HOSTILE_TEXTS.items():
                        if text == "" or len(text) > 60_000:
                            continue  # no value is another path; an HTTP client refuses URLs past 64 kB
                        values = {
                            "service": "main",
                            "source": "a",
                            "resource": "lines",
                            "projection": "EPSG:4326",
                            name: quote(text, safe=""),
                        }
                        what = f"{method.upper()} {path} {name}={label}"
                        response = await client.request(method.upper(), admin.base + path.format(**values), json={})
                        count += 1
                        check_refused(response, name, what=what)
        assert count > 100
