"""The native OSRM API, and the simple API's constraints, never fail open: hostile values are 4xx answers.

Every option of every service, from the API's OpenAPI document, GET (the query and the coordinates)
and POST (each member of the body), on the Monaco OSRM example. The native API keeps osrm-routed's
messages: a query that does not parse is named by its position (``Query string malformed close to
position N``), which must fall on the hostile option; a body that is no JSON says ``invalid JSON``.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote, urlencode

from starlette.testclient import TestClient

from tests.hostile import HOSTILE_JSON, HOSTILE_TEXTS, check_refused, json_with, raw_get

START, END = "7.41337,43.72956", "7.41983,43.73115"
TRACE = [(7.41338, 43.72955), (7.41196, 43.72806), (7.41360, 43.72725), (7.41536, 43.72872)]  # along a street: matched
COORDS = {"nearest": START, "tile": "tile(17059,11948,15).mvt", "match": ";".join(f"{x},{y}" for x, y in TRACE)}
BODY_COORDS = {"nearest": [[7.41337, 43.72956]], "match": [list(point) for point in TRACE]}
_POSITION = re.compile(r"^(?:Query|URL) string malformed close to position (\d+)")


def native_message(body: Any) -> str:
    return str(body["message"])


def check_named(response: Any, name: str, span: tuple[int, int] | None, *, what: str) -> None:
    """A 4xx naming ``name``: by name, or by a position within ``span``, where its value is (osrm-routed's way)."""
    message = check_refused(response, None, what=what, message_of=native_message)
    if response.status_code in (413, 414) or message.startswith("invalid JSON:"):
        return
    position = _POSITION.match(message)
    if position is None or span is None:
        assert name.lower() in message.lower(), f"{what}: the message does not name {name!r}: {message}"
        return
    assert span[0] <= int(position.group(1)) <= span[1], f"{what}: position {position.group(1)} is not on {span}"


def test_hostile_values_in_every_native_option_are_4xx_naming_it(client: TestClient) -> None:
    document = client.get("/osrm/1.0.0/openapi.json").json()
    fuzzed: set[tuple[str, str, str]] = set()
    for path, operations in document["paths"].items():
        if "{profile}" not in path or "/_" in path:
            continue  # Road2's URL shape is read by the same parser: each service's own shape is enough
        service = path.split("/")[2]
        for method, operation in operations.items():
            names = [p["name"] for p in operation.get("parameters", ()) if p["in"] == "query" or p["name"] == "coordinates"]
            body_schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            names += list(body_schema.get("properties", {}))
            for name in names:
                fuzzed.add((service, method, name))
                if method == "get":
                    fuzz_get(client, path, service, name)
                else:
                    fuzz_post(client, path.replace("{profile}", "car"), service, name)
    services = {s for s, _, _ in fuzzed}
    assert services == {"route", "nearest", "table", "trip", "match", "tile"}, services
    options = {n for _, m, n in fuzzed if m == "get"}
    assert {"number", "radiuses", "bearings", "scale_factor", "fallback_speed", "timestamps", "waypoints", "alternatives"} <= options
    assert {n for _, m, n in fuzzed if m == "post"} >= {"coordinates", "number", "radiuses", "bearings", "scale_factor"}


def fuzz_get(client: TestClient, path: str, service: str, name: str) -> None:
    coords = COORDS.get(service, f"{START};{END}")
    valid = client.get(f"/osrm/1.0.0{path.replace('{profile}', 'car').replace('{coordinates}', coords)}")
    assert valid.status_code == 200, f"GET {service}: the valid request fails: {valid.text[:200]}"
    for label, value in HOSTILE_TEXTS.items():
        what = f"GET {service} {name}={label}"
        if name == "coordinates":
            url = path.replace("{profile}", "car").replace("{coordinates}", quote(value, safe=""))
            query = b""
        else:
            url = path.replace("{profile}", "car").replace("{coordinates}", coords)
            query = urlencode({name: value}).encode()
        response = raw_get(client, f"/osrm/1.0.0{url}", query)
        if value == "":
            # An empty list (``bearings=``) is osrm-routed's "none given"; no coordinates, a POST's URL (405);
            # ``approaches=`` is one empty approach for several points (the binding's 400 has no message).
            if response.status_code not in (200, 405):
                check_refused(response, None, what=what, message_of=native_message)
            continue
        # Where the value is in the text osrm-routed's positions count in (from the service, URI-decoded).
        start = len("/" + path.split("{profile}")[0].split("/", 2)[2] + "car/")
        if name != "coordinates":
            start += len(f"{coords}?")
        check_named(response, name, (start, start + len(value) + (0 if name == "coordinates" else len(name) + 1)), what=what)


def fuzz_post(client: TestClient, path: str, service: str, name: str) -> None:
    base = {"coordinates": BODY_COORDS.get(service, [[7.41337, 43.72956], [7.41983, 43.73115]])}
    assert client.post(f"/osrm/1.0.0{path}", json=base).status_code == 200, f"POST {service}: the valid request fails"
    bodies = {label: json_with(base, name, literal) for label, literal in HOSTILE_JSON.items()}
    bodies |= {f"text {label}": json_with(base, name, json.dumps(text)) for label, text in HOSTILE_TEXTS.items()}
    for label, body in bodies.items():
        what = f"POST {service} {name}: {label}"
        response = client.post(f"/osrm/1.0.0{path}", content=body, headers={"content-type": "application/json"})
        check_named(response, name, None, what=what)


def test_a_number_of_5000_digits_is_osrm_routeds_400_with_the_security_headers(client: TestClient) -> None:
    # Was a bare text 500 without the security headers: int() of more than 4300 digits raised in the parser.
    url = f"/osrm/1.0.0/monaco-osrm/nearest/v1/car/{START}"
    response = raw_get(client, url, b"number=" + b"9" * 5000)
    message = check_refused(response, None, what="number=9*5000", message_of=native_message)
    assert (response.status_code, response.json()["code"]) == (400, "InvalidQuery")
    assert message == f"Query string malformed close to position {len('/nearest/v1/car/' + START + '?number=')}"
    body = json_with({"coordinates": [[7.41337, 43.72956]]}, "number", "9" * 5000)
    posted = client.post("/osrm/1.0.0/monaco-osrm/nearest/v1/car", content=body, headers={"content-type": "application/json"})
    assert check_refused(posted, None, what="POST number", message_of=native_message) == "invalid JSON: Number longer than 64 characters."


def test_hostile_constraints_are_400s_naming_constraints(client: TestClient) -> None:
    route = {"resource": "monaco-osrm", "start": START, "end": END}
    assert client.get("/simple/1.0.0/route", params=route).status_code == 200
    banned = '{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"%s}'
    assert client.get("/simple/1.0.0/route", params={**route, "constraints": banned % ""}).status_code == 200
    for label, value in {
        **HOSTILE_TEXTS,
        "3000 nested arrays": "[" * 3000 + "]" * 3000,
        "a costRatio of NaN": banned % ',"costRatio":NaN',
        "a costRatio of 1e999": banned % ',"costRatio":1e999',
        "a value of Infinity": banned.replace('"autoroute"', "Infinity") % "",
    }.items():
        if value == "":
            continue
        what = f"constraints={label}"
        check_refused(raw_get(client, "/simple/1.0.0/route", urlencode({**route, "constraints": value}).encode()), "constraints", what=what)
        posted = client.post("/simple/1.0.0/route", json={**route, "constraints": value})
        check_refused(posted, "constraints", what=f"POST {what}")
    deep = client.get("/simple/1.0.0/route", params={**route, "constraints": "[" * 3000})
    assert "nested deeper than 32 levels" in check_refused(deep, "constraints", what="deep")
