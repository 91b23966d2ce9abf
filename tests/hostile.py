"""Hostile values for every parameter of an API, and what every answer to them must be.

A value a client sends may be any text: NaN, infinities, numbers of thousands of digits, numbers a
double cannot hold, other bases, deep nesting, megabytes. Each must be a 4xx JSON answer with the
security headers, naming the parameter (a limit on the whole request, 413 or 414, names the limit).
The fuzz tests take the parameters from each API's OpenAPI document, so a new parameter is covered
without a change here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from starlette.datastructures import Headers
from starlette.testclient import TestClient

from roadkit.testing.asgi import asgi_messages, http_scope
from roadkit.web.security import DEFAULT_SECURITY_HEADERS

#: Hostile values as a query string carries them (text).
HOSTILE_TEXTS: dict[str, str] = {
    "NaN": "NaN",
    "nan": "nan",
    "Infinity": "Infinity",
    "-inf": "-inf",
    "1e999": "1e999",
    "-1e999": "-1e999",
    "5000 digits": "9" * 5000,
    "400 digits": "9" * 400,
    "overflowing double": "1797693134862315" + "9" * 300,
    "hexadecimal": "0x10",
    "underscores": "1_000",
    "empty": "",
    "3000 brackets": "[" * 3000,
    "2 MB": "7" * 2_000_000,
}

#: Hostile JSON values as a body carries them (the JSON text of the value, written as it is).
HOSTILE_JSON: dict[str, str] = {
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "1e999": "1e999",
    "-1e999": "-1e999",
    "5000 digits": "9" * 5000,
    "400 digits": "9" * 400,
    "-400 digits": "-" + "9" * 400,
    "overflowing double": "1797693134862315" + "9" * 300 + ".0",
    "points of NaN": "[NaN, NaN]",
    "points of 1e999": "[1e999, 1]",
    "3000 brackets": "[" * 3000 + "]" * 3000,
    "3000 braces": '{"a":' * 3000 + "1" + "}" * 3000,
}

#: Statuses that refuse the whole request for its size, naming the limit rather than a parameter.
SIZE_STATUSES = (413, 414, 431)


class RawAnswer:
    """An answer read straight from the ASGI app (what a test client's response gives the checks)."""

    def __init__(self, messages: Sequence[Mapping[str, Any]]) -> None:
        start = messages[0]
        self.status_code: int = start["status"]
        self.headers = Headers(raw=start.get("headers", []))
        self.content = b"".join(m.get("body", b"") for m in messages[1:])
        self.text = self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


def raw_get(client: TestClient, path: str, query: bytes) -> RawAnswer:
    """A GET of ``path?query`` sent to the client's app as it is (an HTTP client refuses URLs past 64 kB)."""
    assert client.portal is not None
    messages = client.portal.call(asgi_messages, client.app, http_scope(path, query))
    return RawAnswer(messages)


def json_with(base: Mapping[str, Any], name: str, literal: str) -> bytes:
    """A JSON object of ``base`` with ``name`` holding the JSON text ``literal`` as it is."""
    members = [f"{json.dumps(k)}:{json.dumps(v)}" for k, v in base.items() if k != name]
    members.append(f"{json.dumps(name)}:{literal}")
    return ("{" + ",".join(members) + "}").encode()


def check_refused(response: Any, name: str | None, *, what: str, message_of: Any = None) -> str:
    """Assert a 4xx JSON answer with the security headers whose message names ``name``; the message.

    ``message_of``: how to read the message from the JSON body (Road2's ``error.message`` by default).
    """
    status = response.status_code
    assert 400 <= status < 500, f"{what}: status {status}: {response.text[:300]}"
    assert response.headers.get("content-type", "").startswith("application/json"), f"{what}: {response.headers}"
    for header, value in DEFAULT_SECURITY_HEADERS.items():
        assert response.headers.get(header) == value, f"{what}: no {header} header"
    body = response.json()
    message = str(message_of(body) if message_of else body["error"]["message"])
    assert len(message) < 2000, f"{what}: a message of {len(message)} characters repeats the value"
    if name is not None and status not in SIZE_STATUSES:
        assert name in message, f"{what}: the message does not name {name!r}: {message}"
    return message


def schema_properties(schema: Mapping[str, Any], document: Mapping[str, Any]) -> Iterator[str]:
    """The property names of an object schema (through ``$ref``, ``anyOf``, ``oneOf`` and ``allOf``)."""
    if "$ref" in schema:
        target: Any = document
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        yield from schema_properties(target, document)
        return
    yield from schema.get("properties", {})
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, ()):
            yield from schema_properties(branch, document)


def operation_parameters(document: Mapping[str, Any], path: str, method: str) -> list[str]:
    """The names of an operation's parameters: query parameters (an object one's properties), then body members."""
    operation = document["paths"][path][method]
    names: list[str] = []
    for parameter in operation.get("parameters", ()):
        if "$ref" in parameter:
            parameter = document["components"]["parameters"][parameter["$ref"].rsplit("/", 1)[1]]
        if parameter.get("in") != "query":
            continue
        schema = parameter.get("schema", {})
        if (
            parameter.get("style", "form") == "form"
            and parameter.get("explode", True)
            and (schema.get("type") == "object" or "anyOf" in schema)
        ):
            names += schema_properties(schema, document)
        else:
            names.append(parameter["name"])
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is not None:
        names += schema_properties(body, document)
    return list(dict.fromkeys(names))
