"""Access control of the routing APIs (``[access]``): API keys, anonymous quotas, rate headers, open documents.

In process, on the straight test source; the quotas across worker processes, and IAM tokens, are
tested in ``test_access_workers.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from roadkit.config import load_server, load_service
from roadkit.errors import ConfigurationError
from roadkit.server import administrator
from roadkit.serving.app import create_app
from roadkit.serving.quotas import QuotaTable
from roadkit.testing import SERVICE, straight_plugins, write_service
from tests.core.conftest import free_port

ROUTE = "/simple/1.0.0/route?resource=straight&start=2.3,48.8&end=2.4,48.9"
CAPABILITIES = "/simple/1.0.0/getcapabilities"


def api_key(*args: str) -> subprocess.CompletedProcess[str]:
    """``roadkit api-key ARGS`` through the command's entry point, as a user types it."""
    roadkit = Path(sys.executable).with_name("roadkit")
    return subprocess.run([str(roadkit), "api-key", *args], capture_output=True, text=True, timeout=60, check=False)


def service(tmp_path: Path, access: str, cors: Path | None = None) -> Path:
    return write_service(tmp_path, service=SERVICE + access)


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[tuple[TestClient, str, Path]]:
    """A service that needs an API key (5 requests a minute each, 2 at once); a client and alice's key."""
    keys = tmp_path / "keys.txt"
    made = api_key("create", "alice", "--file", str(keys))
    assert made.returncode == 0, made.stderr
    path = service(tmp_path, '\n[access]\nkeys_file = "keys.txt"\n[access.quota]\nrequests = 5\nwindow = 60\nconcurrent = 2\n')
    with TestClient(create_app(load_service(path), straight_plugins(entry_points=False))) as client:
        yield client, made.stdout.strip(), keys


def test_a_key_is_required_in_the_header_or_the_query(keyed: tuple[TestClient, str, Path]) -> None:
    client, key, _ = keyed
    refused = client.get(ROUTE)
    assert refused.status_code == 401
    assert refused.json()["error"]["errorType"] == "unauthorized"
    assert refused.headers["www-authenticate"].startswith("ApiKey realm=")
    assert refused.headers["x-content-type-options"] == "nosniff"  # the security headers on refusals too
    by_header = client.get(ROUTE, headers={"X-Api-Key": key})
    assert by_header.status_code == 200 and by_header.json()["resource"] == "straight"
    by_query = client.get(f"{ROUTE}&apikey={key}")
    assert by_query.status_code == 200  # and the API never saw apikey: no "unknown parameter"
    posted = client.post(
        "/simple/1.0.0/route", headers={"X-Api-Key": key}, json={"resource": "straight", "start": "2.3,48.8", "end": "2.4,48.9"}
    )
    assert posted.status_code == 200
    wrong = client.get(ROUTE, headers={"X-Api-Key": key[:-1] + ("A" if key[-1] != "A" else "B")})
    assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "Invalid API key"
    huge = client.get(ROUTE, headers={"X-Api-Key": "k" * 100_000})
    assert huge.status_code in (401, 431)


def test_a_revoked_key_is_refused(keyed: tuple[TestClient, str, Path]) -> None:
    client, key, keys = keyed
    other = api_key("create", "bob", "--file", str(keys))
    assert other.returncode == 0
    assert api_key("list", "--file", str(keys)).stdout.split() == ["alice", "bob"]
    assert client.get(ROUTE, headers={"X-Api-Key": key}).status_code == 200
    revoked = api_key("revoke", "alice", "--file", str(keys))
    assert revoked.returncode == 0, revoked.stderr
    assert "alice" not in keys.read_text() and "rkkey_" not in keys.read_text()  # only hashes, never a key
    deadline = time.monotonic() + 5
    while client.get(ROUTE, headers={"X-Api-Key": key}).status_code != 401:
        assert time.monotonic() < deadline, "the revoked key is still accepted"
        time.sleep(0.2)
    assert client.get(ROUTE, headers={"X-Api-Key": other.stdout.strip()}).status_code == 200
    assert api_key("list", "--file", str(keys)).stdout.split() == ["bob"]
    again = api_key("revoke", "alice", "--file", str(keys))
    assert again.returncode == 1 and "no key named 'alice'" in again.stderr


def test_rate_headers_count_down_then_429(keyed: tuple[TestClient, str, Path]) -> None:
    client, key, _ = keyed
    seen = []
    for _ in range(5):
        answer = client.get(ROUTE, headers={"X-Api-Key": key})
        assert answer.status_code == 200
        assert answer.headers["ratelimit-policy"] == '"default";q=5;w=60'
        match = re.fullmatch(r'"default";r=(\d+);t=(\d+)', answer.headers["ratelimit"])
        assert match is not None and 0 < int(match[2]) <= 60
        seen.append(int(match[1]))
    assert seen == [4, 3, 2, 1, 0]
    refused = client.get(ROUTE, headers={"X-Api-Key": key})
    assert refused.status_code == 429 and refused.json()["error"]["errorType"] == "too_many_requests"
    assert 0 < int(refused.headers["retry-after"]) <= 60
    assert re.fullmatch(r'"default";r=0;t=\d+', refused.headers["ratelimit"])
    # documents stay open, uncounted, even now
    for path in ("/simple/1.0.0/openapi", "/simple/1.0.0/openapi.json", "/simple/1.0.0/openapi/assets/viewer.js", "/simple/1.0.0", "/"):
        opened = client.get(path)
        assert opened.status_code == 200, path
        assert "ratelimit" not in opened.headers


def test_documents_state_the_security_scheme(keyed: tuple[TestClient, str, Path]) -> None:
    client, key, _ = keyed
    document = client.get("/simple/1.0.0/openapi.json").json()
    validate(document)
    assert document["components"]["securitySchemes"]["apiKeyHeader"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-Api-Key",
        "description": "An API key made with 'roadkit api-key create', as a header.",
    }
    assert document["components"]["securitySchemes"]["apiKeyQuery"]["in"] == "query"
    assert document["security"] == [{"apiKeyHeader": []}, {"apiKeyQuery": []}]  # no {}: anonymous use is not allowed
    capabilities = client.get(CAPABILITIES, headers={"X-Api-Key": key}).json()
    assert capabilities["security"]["anonymous"] is False
    assert set(capabilities["security"]["schemes"]) == {"apiKeyHeader", "apiKeyQuery"}
    assert capabilities["security"]["quota"] == {"requests": 5, "window": 60.0, "concurrent": 2}


def test_a_dot_segment_does_not_open_a_protected_path(keyed: tuple[TestClient, str, Path]) -> None:
    client, _, _ = keyed
    for path in ("/simple/1.0.0/openapi/../route", "/simple/1.0.0/openapi/assets/../../route"):
        answer = client.get(path + "?resource=straight&start=2.3,48.8&end=2.4,48.9")
        assert answer.status_code == 401, path


def test_anonymous_use_has_a_quota_per_client_address(tmp_path: Path) -> None:
    path = service(tmp_path, "\n[access]\nanonymous = true\n[access.anonymous_quota]\nrequests = 3\nwindow = 30\n")
    app = create_app(load_service(path), straight_plugins(entry_points=False))
    with TestClient(app, client=("192.0.2.1", 5000)) as first, TestClient(app, client=("192.0.2.2", 5000)) as second:
        assert [first.get(ROUTE).status_code for _ in range(4)] == [200, 200, 200, 429]
        assert first.get(ROUTE).headers["ratelimit-policy"] == '"default";q=3;w=30'
        assert [second.get(ROUTE).status_code for _ in range(4)] == [200, 200, 200, 429]  # its own count
        document = first.get("/simple/1.0.0/openapi.json").json()
        assert document["security"] == [{}] and document["components"]["securitySchemes"] == {}


def test_ipv6_clients_of_one_network_share_a_quota(tmp_path: Path) -> None:
    path = service(tmp_path, "\n[access]\nanonymous = true\n[access.anonymous_quota]\nrequests = 2\n")
    app = create_app(load_service(path), straight_plugins(entry_points=False))
    with TestClient(app, client=("2001:db8::1", 5000)) as first, TestClient(app, client=("2001:db8::ffff:2", 5000)) as second:
        assert first.get(ROUTE).status_code == 200
        assert second.get(ROUTE).status_code == 200
        assert first.get(ROUTE).status_code == 429  # the same /64


def test_behind_a_trusted_proxy_the_forwarded_client_is_counted(tmp_path: Path) -> None:
    access = '\n[http]\ntrusted_proxies = ["10.0.0.0/8"]\n[access]\nanonymous = true\n[access.anonymous_quota]\nrequests = 1\n'
    app = create_app(load_service(service(tmp_path, access)), straight_plugins(entry_points=False))
    with TestClient(app, client=("10.0.0.5", 5000)) as proxy, TestClient(app, client=("192.0.2.9", 5000)) as direct:
        for client in ("198.51.100.1", "198.51.100.2"):
            forwarded = {"X-Forwarded-For": f"203.0.113.66, {client}, 10.0.0.7"}  # the left part is the client's own claim
            assert [proxy.get(ROUTE, headers=forwarded).status_code for _ in range(2)] == [200, 429]
        # from a peer that is no trusted proxy the header means nothing: the peer is counted
        assert [direct.get(ROUTE, headers={"X-Forwarded-For": f"198.51.100.{i}"}).status_code for i in range(3, 5)] == [200, 429]


def test_preflight_is_answered_without_a_key(tmp_path: Path) -> None:
    cors = tmp_path / "cors.toml"
    cors.write_text('allow_origins = ["https://app.example"]\nallow_methods = ["GET", "POST"]\nallow_headers = ["X-Api-Key"]\n')
    make = api_key("create", "web", "--file", str(tmp_path / "keys.txt"))
    path = service(tmp_path, '\n[access]\nkeys_file = "keys.txt"\n')
    with TestClient(create_app(load_service(path, cors=cors), straight_plugins(entry_points=False))) as client:
        preflight = client.options(
            ROUTE,
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "X-Api-Key",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"
        refused = client.get(ROUTE, headers={"Origin": "https://app.example"})
        assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == "https://app.example"
        allowed = client.get(ROUTE, headers={"Origin": "https://app.example", "X-Api-Key": make.stdout.strip()})
        assert allowed.status_code == 200


def test_without_access_nothing_changes(tmp_path: Path) -> None:
    with TestClient(create_app(load_service(write_service(tmp_path)), straight_plugins(entry_points=False))) as client:
        answer = client.get(ROUTE)
        assert answer.status_code == 200 and "ratelimit" not in answer.headers
        assert "security" not in client.get("/simple/1.0.0/openapi.json").json()
        assert "security" not in client.get(CAPABILITIES).json()


@pytest.mark.parametrize(
    ("access", "expected"),
    [
        ("[access]\n", "access: expected keys_file and/or [access.jwt], or anonymous = true"),
        ('[access]\nkeys_file = "nope.txt"\n', "access.keys_file: expected a file of API key hashes"),
        ("[access]\nanonymous = true\n[access.quota]\nrequests = 0\n", "access.quota.requests: expected a number of requests from 1"),
        (
            "[access]\nanonymous = true\n[access.anonymous_quota]\nwindow = nan\n",
            "access.anonymous_quota.window: expected a number of seconds",
        ),
        ("[access]\nanonymous = true\ntracked_clients = 0\n", "access.tracked_clients: expected a number from 1"),
        ('[access.jwt]\nissuer = "realm"\n', "access.jwt.issuer: expected the IAM realm's URL"),
        ("[access]\nanonymous = 3\n", "access.anonymous"),
        (
            '[access.jwt]\nissuer = "https://iam.example/realms/r"\ntimeout = -1\n',
            "access.jwt.timeout: expected a number of seconds above 0",
        ),
    ],
)
def test_bad_access_settings_name_the_file_and_key(tmp_path: Path, access: str, expected: str) -> None:
    path = service(tmp_path, "\n" + access)
    with pytest.raises(ConfigurationError) as raised:
        load_service(path)
    assert any(problem.startswith(f"{path}: ") and expected in problem for problem in raised.value.problems), raised.value.problems


def test_a_malformed_keys_file_fails_the_start_naming_its_line(tmp_path: Path) -> None:
    (tmp_path / "keys.txt").write_text("alice rkkey_not-a-hash\n")
    path = service(tmp_path, '\n[access]\nkeys_file = "keys.txt"\n')
    with pytest.raises(ConfigurationError) as raised:
        create_app(load_service(path), straight_plugins(entry_points=False))
    expected = "line 1: expected 'NAME sha256$SALT$DIGEST' (made by 'roadkit admin-token' or 'roadkit api-key'), got something else"
    assert raised.value.problems == [f"{tmp_path / 'keys.txt'}: {expected}"]


def test_the_quota_table_never_grows_and_refuses_when_every_entry_is_busy() -> None:
    from roadkit.config.models import Quota

    table = QuotaTable.create(4)
    try:
        quota = Quota(requests=10, concurrent=5)
        assert all(table.acquire(f"client {i}", quota).allowed for i in range(4))  # each holds a request in progress
        busy = table.acquire("one more", quota)
        assert not busy.allowed and busy.reason == "busy"
        table.release("client 0")
        assert table.acquire("one more", quota).allowed  # took the entry of the client with nothing in progress
        assert table.size == 4
    finally:
        table.close()


async def test_a_same_process_service_counts_in_its_own_table(tmp_path: Path) -> None:
    port, admin_port = free_port(), free_port()
    access = "\n[access]\nanonymous = true\n[access.anonymous_quota]\nrequests = 2\nwindow = 60\n"
    write_service(tmp_path, service=SERVICE.replace("port = 8080", f"port = {port}") + access)
    server = tmp_path / "server.toml"
    server.write_text(
        f'[administrator.listener]\nport = {admin_port}\n[[services]]\nid = "main"\nconfiguration = "service.toml"\nmode = "same-process"\n'
    )
    admin = administrator(load_server(server), straight_plugins(entry_points=False))
    await admin.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            statuses = [(await client.get(ROUTE)).status_code for _ in range(3)]
            assert statuses == [200, 200, 429]
            await admin.handle("main").restart()  # the counts go on across a restart
            assert (await client.get(ROUTE)).status_code == 429
    finally:
        await admin.stop()


def test_a_service_mounted_in_a_host_app_still_needs_a_key(tmp_path: Path) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    made = api_key("create", "host", "--file", str(tmp_path / "keys.txt"))
    path = service(tmp_path, '\n[access]\nkeys_file = "keys.txt"\n')
    host = Starlette(routes=[Mount("/roadkit", app=create_app(load_service(path), straight_plugins(entry_points=False)))])
    with TestClient(host) as client:
        assert client.get("/roadkit" + ROUTE).status_code == 401
        let_in = client.get("/roadkit" + ROUTE, headers={"X-Api-Key": made.stdout.strip()})
        assert let_in.json()["error"]["errorType"] == "starting"  # past the key: the API answers (a mounted app's lifespan never ran)
        assert client.get("/roadkit/simple/1.0.0/openapi.json").status_code == 200
        assert client.get("/roadkit/elsewhere").status_code == 401  # only the documents and / are open
