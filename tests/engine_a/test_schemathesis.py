"""schemathesis against both OpenAPI documents of the Monaco OSRM demo, every check, 0 failures.

The documents are generated per service: a request they call valid is accepted, one they call
invalid is refused, every status and header is documented (405 with ``Allow``), every answer matches
its schema. The run is bounded (a fixed seed, a few dozen examples per operation) to stay around a
minute; the rules the documents must keep are on the coordination board and in
``core/src/roadkit/apis/simple/openapi_exact.py``.

The admin API's read operations run on the demo the simple API is tested on; its write operations
(create, modify, delete, restart, publication) run on demos of their own, from other temporary
copies of the example: schemathesis creates services (writing their files beside the copy's server
file), replaces the service ``main``'s configuration, restarts it, publishes and deletes sources
and resources. The service documents it sends get free ports (``schemathesis_hooks.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.schemathesis_support import run, run_native_api, serve


@pytest.fixture(scope="module")
def demo(osrm_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The demo of the simple API and the admin API's reads."""
    yield from serve(osrm_example, tmp_path_factory)


@pytest.fixture
def writable_demo(osrm_example: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Another demo on another copy, for the write operations (they change it)."""
    yield from serve(osrm_example, tmp_path_factory)


#: schemathesis.toml of the write run. Path parameters name the demo's service (``main``), so that
#: the operations reach their checks instead of answering 404 for random ids. A source's own keys
#: (an OSRM dataset, a Valhalla tile extract...) and a resource's operations and parameters are
#: checked by the source kind and the resource type, not described by the document: a document of
#: the right shape may still be a 400 naming them, for those two operations only.
WRITE_CONFIG = """
# A changed configuration is answered once the new workers are ready: seconds on a loaded machine.
request-timeout = 120.0
# A write waits for workers to start: seconds on a loaded machine, as long as startup_timeout (120 s).
checks.max_response_time = 120.0

[parameters]
"path.service" = "main"

[[operations]]
include-operation-id = ["putSource", "putResource"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409"]
"""


def test_the_simple_api_passes_every_schemathesis_check(demo: tuple[str, str], tmp_path: Path) -> None:
    _, simple = demo
    document = httpx.get(f"{simple}/openapi.json").json()
    assert set(document["paths"]) == {"/getcapabilities", "/route", "/nearest", "/matrix"}, "only the operations a resource offers"
    run(f"{simple}/openapi.json", tmp_path)


def test_the_admin_api_read_operations_pass_every_schemathesis_check(demo: tuple[str, str], tmp_path: Path) -> None:
    admin, _ = demo
    # GET .../restart is a write (Road2's verb): each call restarts the service's workers, which the
    # fuzzer would do dozens of times; tests/core/test_children.py checks it on real child processes.
    run(f"{admin}/openapi.json", tmp_path, "--include-method", "GET", "--exclude-path-regex", "/restart$")
    assert httpx.get(f"{admin}/health").status_code == 200, "the run left the service green"


def test_a_wrong_method_is_a_405_listing_the_allowed_ones(demo: tuple[str, str]) -> None:
    admin, simple = demo
    for url, allowed in (
        (f"{simple}/route", "GET, HEAD, POST"),
        (f"{simple}/getcapabilities", "GET, HEAD, POST"),
        (f"{admin}/version", "GET, HEAD"),
    ):
        for method in ("PUT", "TRACE", "PATCH"):
            response = httpx.request(method, url)
            assert response.status_code == 405, (method, url, response.text)
            assert response.headers["allow"] == allowed
            assert response.json()["error"]["errorType"] == "http_error"
    missing = httpx.request("PUT", f"{simple}/no-such-operation")
    assert missing.status_code == 404 and "allow" not in missing.headers


def test_the_admin_api_publication_operations_pass_every_schemathesis_check(writable_demo: tuple[str, str], tmp_path: Path) -> None:
    # Publication (PUT/DELETE of sources and resources) on the demo's service; the service operations are the next test's.
    admin, _ = writable_demo
    (tmp_path / "schemathesis.toml").write_text(WRITE_CONFIG)
    # The hooks' check: a 400 to a schema-valid document names only the kind's or type's own keys.
    publication = ("--exclude-method", "GET", "--include-path-regex", "/(sources|resources)/")
    run(f"{admin}/openapi.json", tmp_path, *publication, examples=10, env={"SCHEMATHESIS_HOOKS": str(HOOKS)})
    assert httpx.get(f"{admin}/version").status_code == 200, "the administrator survived the run"


#: The service writes' runs: the hooks give every schema-valid service document ports reserved for it
#: (a document without listeners would take 127.0.0.1:8080), folders inside the copy and a new id.
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
SERVICES = r"^/services(/\{service\})?$|/restart$"

#: Create, modify and restart on the demo's service. Each valid document starts a service (about a
#: second): the coverage phase sends the invalid ones only (hundreds, each a 400), the fuzzing phase
#: draws both; a created service is deleted once checked (ROADKIT_FUZZ_DELETE_CREATED).
SERVICE_WRITES_CONFIG = """
request-timeout = 120.0
# A write waits for workers to start: seconds on a loaded machine, as long as startup_timeout (120 s).
checks.max_response_time = 120.0

[parameters]
"path.service" = "main"

[phases.coverage.generation]
mode = "negative"
"""

#: The stateful phase on its own, with no fixed service: services created, read, changed and deleted
#: through the links of the document (the id a creation answers).
SERVICE_STATES_CONFIG = """
request-timeout = 120.0
# A write waits for workers to start: seconds on a loaded machine, as long as startup_timeout (120 s).
checks.max_response_time = 120.0
"""


def test_the_admin_api_service_operations_pass_every_schemathesis_check(writable_demo: tuple[str, str], tmp_path: Path) -> None:
    admin, _ = writable_demo
    env = {"SCHEMATHESIS_HOOKS": str(HOOKS), "ROADKIT_FUZZ_DELETE_CREATED": "1"}
    (tmp_path / "writes").mkdir()
    (tmp_path / "writes" / "schemathesis.toml").write_text(SERVICE_WRITES_CONFIG)
    writes = ("--include-path-regex", SERVICES, "--exclude-method", "DELETE", "--phases", "examples,coverage,fuzzing")
    run(f"{admin}/openapi.json", tmp_path / "writes", *writes, examples=10, env=env)
    main = httpx.get(f"{admin}/services/main", timeout=10).json()
    assert main["lifecycle"] == "ready", main

    (tmp_path / "states").mkdir()
    (tmp_path / "states" / "schemathesis.toml").write_text(SERVICE_STATES_CONFIG)
    states = ("--include-path-regex", SERVICES, "--phases", "stateful")
    output = run(f"{admin}/openapi.json", tmp_path / "states", *states, examples=8, env=env | {"ROADKIT_FUZZ_DELETE_CREATED": "0"})
    assert re.search(r"API Links:\s+(\d+) covered", output), output[-3000:]

    # The administrator answers, and every service it runs (those created, and main unless a run deleted it) can be deleted.
    services = httpx.get(f"{admin}/services", timeout=10).json()
    for service in services:
        assert httpx.delete(f"{admin}/services/{service['id']}", timeout=60).status_code == 204, service["id"]
    assert httpx.get(f"{admin}/services", timeout=10).json() == []


#: The stateful phase over every admin operation, every check: services created, read, changed, restarted
#: and deleted, sources and resources published and removed, each through the links of the document. No
#: 503 is allowed (a start-up time-out too short to start is a 400: the document states its bounds). A
#: source's or resource's own keys are checked by its kind or type, not described by the document: a 400
#: for them (or for a bbox's corners out of order, which JSON Schema can't state) passes, and the hooks'
#: check fails any other refusal of a schema-valid document.
EVERY_OPERATION_STATES_CONFIG = """
request-timeout = 120.0
# A write waits for workers to start: seconds on a loaded machine, as long as startup_timeout (120 s).
checks.max_response_time = 120.0

[[operations]]
include-operation-id = ["putSource", "putResource"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409"]

# Rules across a service document's keys that JSON Schema can't state (two probe paths that differ, a
# projections folder that exists inside the allowed ones) are 400s; the service-writes test checks the rest.
[[operations]]
include-operation-id = ["createService", "modifyService"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409"]
"""


def test_every_admin_operation_passes_the_stateful_phase_with_every_check(writable_demo: tuple[str, str], tmp_path: Path) -> None:
    admin, _ = writable_demo
    (tmp_path / "schemathesis.toml").write_text(EVERY_OPERATION_STATES_CONFIG)
    env = {"SCHEMATHESIS_HOOKS": str(HOOKS), "ROADKIT_FUZZ_DELETE_CREATED": "0"}
    output = run(f"{admin}/openapi.json", tmp_path, "--phases", "stateful", examples=50, env=env)
    covered = re.search(r"API Links:\s+(\d+) covered", output)
    assert covered and int(covered[1]) >= 10, output[-3000:]  # scenarios went from one operation to the next
    assert httpx.get(f"{admin}/version", timeout=10).status_code == 200, "the administrator survived the run"


def test_the_native_osrm_api_passes_every_schemathesis_check(demo: tuple[str, str], tmp_path: Path) -> None:
    _, simple = demo
    native = simple.replace("/simple/1.0.0", "/osrm/1.0.0")
    document = httpx.get(f"{native}/openapi.json").json()
    paths = set(document["paths"])
    services = ("route", "nearest", "table", "trip", "match", "tile")
    assert {f"/monaco-osrm/{s}/v1/{{profile}}/{{coordinates}}" for s in services} <= paths
    assert {f"/monaco-osrm/{{profile}}/{o}/{s}/v1/_/{{coordinates}}" for s in services for o in ("fastest", "shortest")} <= paths
    assert {f"/monaco-osrm/{s}/v1/{{profile}}" for s in ("route", "nearest", "table", "match")} <= paths
    route = document["paths"]["/monaco-osrm/route/v1/{profile}/{coordinates}"]["get"]
    profile = next(p for p in route["parameters"] if p["name"] == "profile")
    assert profile["schema"]["enum"] == ["car", "driving", "foot", "pedestrian", "walking"]
    shortest = document["paths"]["/monaco-osrm/{profile}/shortest/route/v1/_/{coordinates}"]["get"]
    assert next(p for p in shortest["parameters"] if p["name"] == "profile")["schema"]["enum"] == ["car", "driving"]
    run_native_api(native, tmp_path)
