"""Who may use the admin API: its own host names and origins, loopback-only writes without authentication, IAM JWTs, static tokens."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from roadkit.apis.admin import create_admin_app
from roadkit.auth.oidc import IamUnavailable, OidcProvider
from roadkit.auth.tokens import add_token
from roadkit.cli import main as roadkit_main
from roadkit.config import load_server, load_service
from roadkit.config.models import JwtAuth
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.process.administrator import Administrator
from roadkit.server import administrator
from roadkit.serving.app import create_app
from roadkit.testing import straight_plugins, write_service
from roadkit_support.serving import ServerThread, bound_socket
from tests.core.conftest import free_port, make_service, write
from tests.core.test_publication import SOURCE_A

OUTSIDE = ("192.0.2.7", 40000)  # a client that is not on this machine
LOCAL = ("127.0.0.1", 40000)


class Iam:
    """A minimal IAM realm: discovery and a JWKS served over HTTP, tokens signed by its key."""

    def __init__(self) -> None:
        self.key = ECKey.generate_key("P-256", parameters={"kid": "k1"}, private=True)
        sock = bound_socket()
        self.issuer = f"http://127.0.0.1:{sock.getsockname()[1]}/realms/test"

        async def discovery(request: Request) -> JSONResponse:
            return JSONResponse({"issuer": self.issuer, "jwks_uri": f"{self.issuer}/protocol/openid-connect/certs"})

        async def jwks(request: Request) -> JSONResponse:
            return JSONResponse({"keys": [self.key.as_dict(private=False)]})

        app = Starlette(
            routes=[
                Route("/realms/test/.well-known/openid-configuration", discovery),
                Route("/realms/test/protocol/openid-connect/certs", jwks),
            ]
        )
        self.thread = ServerThread([(app, sock)])
        self.thread.start(f"{self.issuer}/.well-known/openid-configuration")

    def token(self, key: ECKey | None = None, **claims: Any) -> str:
        now = int(time.time())
        body = {
            "iss": self.issuer,
            "sub": "alice",
            "typ": "Bearer",
            "aud": "roadkit-admin",
            "iat": now,
            "exp": now + 300,
            "realm_access": {"roles": ["roadkit-admin"]},
        } | claims
        body = {name: value for name, value in body.items() if value is not None}  # None: leave that claim out
        return jwt.encode({"alg": "ES256", "kid": "k1"}, body, key or self.key)


@pytest.fixture(scope="module")
def iam() -> Iterator[Iam]:
    running = Iam()
    yield running
    running.thread.stop()


def server(root: Path, auth: str = "", host: str = "127.0.0.1", admin: str = "", port: int = 1) -> Path:
    """A server file; ``admin``: keys of ``[administrator]``, ``auth``: tables after its listener."""
    make_service(root, port=1)
    return write(
        root / "server.toml",
        f"""
[administrator]
{admin}
[administrator.listener]
host = "{host}"
port = {port}
{auth}
[[services]]
id = "main"
configuration = "service.toml"
mode = "same-process"
""",
    )


@pytest.fixture
async def make_client(tmp_path: Path, plugins: Plugins) -> AsyncIterator[Any]:
    """``make_client(auth_toml, client_address, ...)``: an httpx client of the admin app (nothing started)."""
    admins: list[Administrator] = []
    clients: list[httpx.AsyncClient] = []

    def make(
        auth: str = "", client: tuple[str, int] = OUTSIDE, *, admin: str = "", host: str = "127.0.0.1", url: str = "http://127.0.0.1:8079"
    ) -> httpx.AsyncClient:
        running = administrator(load_server(server(tmp_path, auth, host=host, admin=admin)), plugins)
        admins.append(running)
        http = httpx.AsyncClient(transport=httpx.ASGITransport(create_admin_app(running), client=client), base_url=f"{url}/admin/1.0.0")
        clients.append(http)
        return http

    yield make
    for http in clients:
        await http.aclose()
    for running in admins:
        await running.authenticator.close()


def jwt_auth(iam: Iam, extra: str = "") -> str:
    return f"""
[administrator.auth]
{extra}
[administrator.auth.jwt]
issuer = "{iam.issuer}"
role = "roadkit-admin"
audiences = ["roadkit-admin"]
"""


async def test_without_authentication_writes_are_accepted_only_from_loopback(make_client: Any) -> None:
    outside, local = make_client(client=OUTSIDE), make_client(client=LOCAL)
    for method, path in (
        ("PUT", "/services/main/sources/a"),
        ("POST", "/services"),
        ("DELETE", "/services/main"),
        ("DELETE", "/services/main/resources/r"),
        ("GET", "/services/main/restart"),
    ):
        refused = await outside.request(method, path, json=SOURCE_A)
        assert refused.status_code == 403, (method, path)
        assert "only from this machine (loopback, not through a proxy)" in refused.json()["error"]["message"]
    assert (await outside.get("/health")).status_code in (200, 503)  # reads stay open
    assert (await outside.get("/services")).status_code == 200
    assert (await outside.get("/services/main/resources")).status_code == 200
    for path in ("/services/main/sources", "/services/main/sources/a", "/services/main/sources/"):
        assert (await outside.get(path)).status_code == 403, path  # source documents may hold a database password
    assert (await local.get("/services/main/sources")).status_code == 200
    allowed = await local.delete("/services/nope")
    assert allowed.status_code == 404  # past the check: the service is unknown
    ipv6 = make_client(client=("::1", 1))
    assert (await ipv6.delete("/services/nope")).status_code == 404


async def test_forwarding_headers_never_make_a_client_local(make_client: Any) -> None:
    outside, local = make_client(client=OUTSIDE), make_client(client=LOCAL)
    spoofed = {"x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", "forwarded": "for=127.0.0.1"}
    for name, value in spoofed.items():
        response = await outside.delete("/services/nope", headers={name: value})
        assert response.status_code == 403, name  # a header written by the client proves nothing
    # A reverse proxy on this machine is a loopback peer: what it forwards is not local.
    for headers in (
        {"x-forwarded-for": "203.0.113.9"},
        {"x-forwarded-for": "127.0.0.1, 203.0.113.9"},
        {"x-real-ip": "203.0.113.9"},
        {"forwarded": 'for="[2001:db8::1]:4711"'},
        {"via": "1.1 nginx"},
        {"X-Forwarded-For": "127.0.0.1"},
    ):
        response = await local.delete("/services/nope", headers=headers)
        assert response.status_code == 403, headers
        assert "not through a proxy" in response.json()["error"]["message"]
    assert (await local.delete("/services/nope")).status_code == 404  # loopback, no proxy: past the check


def test_the_server_refuses_a_reachable_admin_listener_without_authentication(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = server(tmp_path, host="0.0.0.0")
    with pytest.raises(ConfigurationError) as refused:
        load_server(path)
    assert (
        "administrator.listener.host: the admin API would listen on '0.0.0.0', which other machines can reach, with no authentication"
        in refused.value.message
    )
    assert roadkit_main(["serve", str(path)]) == 2
    assert "Configure [administrator.auth]" in capsys.readouterr().err
    tokens = tmp_path / "tokens"
    tokens.write_text("")
    load_server(server(tmp_path, '[administrator.auth]\ntokens_file = "tokens"\n', host="0.0.0.0"))  # with authentication it may


async def test_iam_tokens_wrong_expired_tampered_or_without_the_role(make_client: Any, iam: Iam) -> None:
    client = make_client(jwt_auth(iam))
    missing = await client.delete("/services/nope")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == 'Bearer realm="roadkit-admin"'

    def bearer(token: str) -> dict[str, str]:
        return {"authorization": f"Bearer {token}"}

    good = iam.token()
    assert (await client.delete("/services/nope", headers=bearer(good))).status_code == 404  # accepted: unknown service
    header, payload, signature = good.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    forged = base64.urlsafe_b64encode(json.dumps(claims | {"sub": "mallory"}).encode()).rstrip(b"=").decode()
    other_key = ECKey.generate_key("P-256", parameters={"kid": "k1"}, private=True)
    cases = {
        "garbage": ("not-a-token", "Invalid token"),
        "malformed jwt": ("a.b.c", "Malformed token"),
        "expired": (iam.token(exp=int(time.time()) - 60), "Token expired"),
        "tampered": (f"{header}.{forged}.{signature}", "Invalid token signature"),
        "another key": (iam.token(key=other_key), "Invalid token signature"),
        "another issuer": (iam.token(iss="http://evil.example/realms/test"), "Invalid token issuer"),
        "another audience": (iam.token(aud="someone-else"), "Invalid token audience"),
    }
    for name, (token, reason) in cases.items():
        response = await client.put("/services/main/sources/a", json=SOURCE_A, headers=bearer(token))
        assert response.status_code == 401, name
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith('Bearer realm="roadkit-admin", error="invalid_token"'), name
        assert reason in challenge and reason in response.json()["error"]["message"], (name, challenge)
    no_role = await client.delete("/services/nope", headers=bearer(iam.token(realm_access={"roles": ["user"]})))
    assert no_role.status_code == 403 and "roadkit-admin" in no_role.json()["error"]["message"]
    assert (await client.get("/services/main/restart")).status_code == 401  # Road2's restart is a write
    assert (await client.get("/services")).status_code == 200  # reads are open unless protected
    assert (await client.get("/openapi.json")).status_code == 200
    assert (await client.get("/services/main/sources")).status_code == 401  # ... except source documents
    assert (await client.get("/services/main/sources/a")).status_code == 401
    assert (await client.get("/services/main/sources", headers=bearer(good))).status_code == 200
    assert (await client.get("/services/main/sources", headers=bearer(iam.token(realm_access={"roles": ["user"]})))).status_code == 403


def _unsigned(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    return ".".join((part(json.dumps(header).encode()), part(json.dumps(claims).encode()), part(signature)))


async def test_iam_token_algorithm_is_pinned_and_every_claim_is_checked(make_client: Any, iam: Iam) -> None:
    client = make_client(jwt_auth(iam))
    now = int(time.time())
    claims = {
        "iss": iam.issuer,
        "sub": "mallory",
        "typ": "Bearer",
        "aud": "roadkit-admin",
        "exp": now + 300,
        "realm_access": {"roles": ["roadkit-admin"]},
    }
    public_pem = iam.key.as_pem(private=False)
    hs256_header = {"alg": "HS256", "kid": "k1", "typ": "JWT"}
    signing_input = ".".join(_unsigned(hs256_header, claims).split(".")[:2]).encode()
    # Key confusion: an HMAC "signed" with the IAM's PUBLIC key, which anyone can fetch from the JWKS.
    confused = (
        signing_input.decode()
        + "."
        + base64.urlsafe_b64encode(hmac.new(public_pem, signing_input, hashlib.sha256).digest()).rstrip(b"=").decode()
    )
    claims_of = iam.token  # signed by the IAM's key: only the claims are wrong
    cases = {
        "alg none": (_unsigned({"alg": "none", "kid": "k1"}, claims), "Unsupported token algorithm"),
        "alg None": (_unsigned({"alg": "None", "kid": "k1"}, claims), "Unsupported token algorithm"),
        "no alg": (_unsigned({"kid": "k1"}, claims), "Malformed token"),
        "HS256 with the public key": (confused, "Unsupported token algorithm"),
        "no kid": (jwt.encode({"alg": "ES256"}, claims, iam.key), "Token has no key id"),
        "unknown kid": (jwt.encode({"alg": "ES256", "kid": "k2"}, claims, iam.key), "Unknown signing key"),
        "no expiry": (claims_of(exp=None), "Token has no expiry"),
        "expiry as text": (claims_of(exp=str(now + 300)), "Token has no expiry"),
        "not yet valid": (claims_of(nbf=now + 600), "Token not yet valid"),
        "an ID token": (claims_of(typ="ID"), "Not an access token"),
        "no issuer": (claims_of(iss=None), "Invalid token issuer"),
        "issuer prefix": (claims_of(iss=iam.issuer + "x"), "Invalid token issuer"),
        "audience a number": (claims_of(aud=5), "Invalid token audience"),
        "audience objects": (claims_of(aud=[{"a": 1}]), "Invalid token audience"),
        "no audience": (claims_of(aud=None), "Invalid token audience"),
    }
    for name, (token, reason) in cases.items():
        response = await client.delete("/services/nope", headers={"authorization": f"Bearer {token}"})
        assert response.status_code == 401, (name, response.text)
        assert reason in response.json()["error"]["message"], (name, response.text)
    roles = {"roles a string": "xroadkit-adminx", "roles missing": None}
    for name, value in roles.items():
        response = await client.delete("/services/nope", headers={"authorization": f"Bearer {claims_of(realm_access={'roles': value})}"})
        assert response.status_code == 403, name
    assert (
        await client.delete("/services/nope", headers={"authorization": f"Bearer {claims_of(aud=['x', 'roadkit-admin'])}"})
    ).status_code == 404


async def test_only_the_api_documents_are_open(make_client: Any, iam: Iam) -> None:
    client = make_client(jwt_auth(iam, "protect_reads = true"))
    for path in ("/openapi", "/openapi.json", "/openapi/swagger.json"):
        assert (await client.get(path)).status_code == 200, path
    # Paths that merely start like an open one, or climb out of it, need the token like any other.
    for path in ("/openapi.json.bak", "/openapiX", "/openapi/..%2Fservices", "/openapi/../services"):
        assert (await client.get(path)).status_code == 401, path
    assert (await client.put("/openapi/../services/main/sources/a", json=SOURCE_A)).status_code == 401


async def test_protected_reads_need_a_token(make_client: Any, iam: Iam) -> None:
    client = make_client(jwt_auth(iam, "protect_reads = true"))
    assert (await client.get("/services")).status_code == 401
    assert (await client.get("/health")).status_code == 401
    assert (await client.get("/services", headers={"authorization": f"Bearer {iam.token()}"})).status_code == 200
    assert (await client.get("/openapi.json")).status_code == 200  # the API's description stays readable


async def test_static_tokens_are_stored_as_salted_hashes(make_client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokens = tmp_path / "admin-tokens"
    assert roadkit_main(["admin-token", "deploy-bot", "--file", str(tokens)]) == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("rkadm_") and len(token) > 40
    stored = tokens.read_text()
    assert token not in stored and "deploy-bot sha256$" in stored
    assert tokens.stat().st_mode & 0o777 == 0o600
    assert roadkit_main(["admin-token", "deploy-bot", "--file", str(tokens)]) == 2  # one token per name
    client = make_client('[administrator.auth]\ntokens_file = "admin-tokens"\n')
    assert (await client.delete("/services/nope", headers={"authorization": f"Bearer {token}"})).status_code == 404
    wrong = await client.delete("/services/nope", headers={"authorization": f"Bearer {token[:-1]}x"})
    assert wrong.status_code == 401 and "invalid_token" in wrong.headers["www-authenticate"]
    assert (await client.delete("/services/nope", headers={"authorization": f"Basic {token}"})).status_code == 401


def test_a_tokens_file_is_never_readable_by_others_even_while_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modes: list[int] = []
    replace = os.replace

    def spy(source: Any, target: Any) -> None:
        modes.append(os.stat(source).st_mode & 0o777)  # the mode the file has from the instant it exists
        replace(source, target)

    monkeypatch.setattr(os, "replace", spy)
    add_token(tmp_path / "admin-tokens", "first")  # a new file
    (tmp_path / "admin-tokens").chmod(0o644)
    add_token(tmp_path / "admin-tokens", "second")  # an existing one someone opened up
    assert modes == [0o600, 0o600]
    assert (tmp_path / "admin-tokens").stat().st_mode & 0o777 == 0o600


def test_a_malformed_tokens_file_is_a_clear_error(tmp_path: Path, plugins: Plugins) -> None:
    (tmp_path / "admin-tokens").write_text("deploy-bot plaintext-token\n")
    with pytest.raises(ConfigurationError) as refused:
        administrator(load_server(server(tmp_path, '[administrator.auth]\ntokens_file = "admin-tokens"\n')), plugins)
    assert "admin-tokens: line 1: expected 'NAME sha256$SALT$DIGEST'" in refused.value.message
    with pytest.raises(ConfigurationError) as missing:
        load_server(server(tmp_path, '[administrator.auth]\ntokens_file = "nowhere"\n'))
    assert "administrator.auth.tokens_file: expected a file of token hashes" in missing.value.message


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_a_request_for_another_host_is_misdirected_and_changes_nothing(make_client: Any, tmp_path: Path) -> None:
    local = make_client(client=LOCAL)
    before = (tmp_path / "server.toml").read_text()
    # A page on evil.example whose DNS name now points at 127.0.0.1: same origin as the admin port, to the browser.
    rebound = {"host": "evil.example:8079"}
    for method, path in (
        ("DELETE", "/services/main"),
        ("GET", "/services/main/restart"),
        ("GET", "/services/main"),
        ("GET", "/openapi.json"),
    ):
        refused = await local.request(method, path, headers=rebound)
        assert refused.status_code == 421, (method, path, refused.text)
        assert refused.json()["error"]["errorType"] == "misdirected_request"
        assert "evil.example:8079" in refused.json()["error"]["message"]
    assert (tmp_path / "server.toml").read_text() == before
    assert (await local.get("/services/main")).status_code == 200  # still there
    for host in ("localhost:8079", "LOCALHOST:1", "127.0.0.1", "[::1]:8079", "localhost.:8079"):
        assert (await local.delete("/services/nope", headers={"host": host})).status_code == 404, host  # past the check
    for host in ("127.0.0.1.evil.example", "localhost:8079@evil.example", "::1", "[::1", "localhost:99999", "", "a b"):
        assert (await local.delete("/services/nope", headers={"host": host})).status_code == 421, host


async def test_allowed_hosts_and_the_listeners_own_name_are_answered(make_client: Any, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("")
    client = make_client(
        f'[administrator.auth]\ntokens_file = "{tokens}"\nprotect_reads = false\n',
        admin='allowed_hosts = ["admin.example", "console.example:9000"]',
        host="roadkit-admin.internal",
    )
    for host in ("admin.example", "admin.example:8079", "console.example:9000", "roadkit-admin.internal:8079", "localhost:8079"):
        assert (await client.get("/services", headers={"host": host})).status_code == 200, host
    for host in ("console.example", "console.example:9001", "evil.example"):
        assert (await client.get("/services", headers={"host": host})).status_code == 421, host
    with pytest.raises(ConfigurationError) as refused:
        load_server(
            server(
                tmp_path, admin='allowed_hosts = ["http://admin.example"]\nallowed_origins = ["admin.example"]\ntrusted_proxies = ["proxy"]'
            )
        )
    message = refused.value.message
    assert "administrator.allowed_hosts[0]: expected a host name or address, optionally with ':port', got 'http://admin.example'" in message
    assert "administrator.allowed_origins[0]: expected an origin such as 'https://console.example', got 'admin.example'" in message
    assert "administrator.trusted_proxies[0]: expected an IP address or a network such as '10.0.0.0/8', got 'proxy'" in message


async def test_cross_site_requests_are_refused(make_client: Any, tmp_path: Path) -> None:
    local = make_client(client=LOCAL)
    before = (tmp_path / "server.toml").read_text()
    refused_cases: dict[str, dict[str, str]] = {
        "rebinding with its own Host": {"origin": "http://evil.example:8079"},
        "another port of this machine": {"origin": "http://127.0.0.1:3000"},
        "https instead of http": {"origin": "https://127.0.0.1:8079"},
        "a sandboxed page": {"origin": "null"},
        "cross-site": {"sec-fetch-site": "cross-site"},
        "same-site": {"sec-fetch-site": "same-site", "origin": "http://localhost:3000"},
        "an older browser's <img>": {"referer": "https://evil.example/page.html"},
    }
    for name, headers in refused_cases.items():
        for method, path in (("DELETE", "/services/main"), ("GET", "/services/main/restart")):
            refused = await local.request(method, path, headers=headers)
            assert refused.status_code == 403, (name, method, refused.text)
            assert refused.json()["error"]["errorType"] == "cross_site_request", name
    assert (await local.get("/services", headers={"origin": "http://evil.example"})).status_code == 403  # reads too
    assert (tmp_path / "server.toml").read_text() == before
    for headers in (
        {"origin": "http://127.0.0.1:8079", "sec-fetch-site": "same-origin"},  # the Swagger UI on the admin origin
        {"sec-fetch-site": "none"},  # typed in the address bar
        {"referer": "http://127.0.0.1:8079/admin/1.0.0/openapi"},
        {},  # curl, scripts
    ):
        assert (await local.delete("/services/nope", headers=headers)).status_code == 404, headers
    console = make_client(client=LOCAL, admin='allowed_origins = ["https://console.example"]')
    allowed = {"origin": "https://console.example", "sec-fetch-site": "cross-site"}
    assert (await console.delete("/services/nope", headers=allowed)).status_code == 404
    assert (await console.delete("/services/nope", headers={"origin": "https://console.example:8443"})).status_code == 403


async def test_a_cross_site_restart_does_not_restart_the_service(tmp_path: Path, plugins: Plugins) -> None:
    admin_port, service_port = free_port(), free_port()
    make_service(tmp_path, port=service_port)
    path = server(tmp_path, port=admin_port)
    (tmp_path / "service.toml").write_text((tmp_path / "service.toml").read_text().replace("port = 1", f"port = {service_port}"))
    running = administrator(load_server(path), plugins)
    await running.start()
    url = f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main/restart"
    try:
        starts = running.handle("main").describe()["starts"]
        async with httpx.AsyncClient(timeout=30) as client:
            # What a browser sends for <img src=".../restart"> on another site, and for a rebound DNS name.
            img = await client.get(url, headers={"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image"})
            assert img.status_code == 403, img.text
            rebound = await client.get(url, headers={"host": f"evil.example:{admin_port}"})
            assert rebound.status_code == 421, rebound.text
            assert running.handle("main").describe()["starts"] == starts
            done = await client.get(url, headers={"sec-fetch-site": "same-origin"})
            assert done.status_code == 200, done.text
        assert running.handle("main").describe()["starts"] == starts + 1
    finally:
        await running.stop()


async def test_forwarding_headers_count_only_from_a_trusted_proxy(make_client: Any) -> None:
    forwarded = {"x-forwarded-host": "admin.example", "x-forwarded-proto": "https"}
    proxied = {"host": "127.0.0.1:8079", **forwarded}
    untrusted = make_client(admin='allowed_hosts = ["admin.example"]')
    index = (await untrusted.get("/", headers=proxied)).json()
    assert index["links"][0]["href"] == "http://127.0.0.1:8079/admin/1.0.0/openapi.json"
    assert 'href="http://127.0.0.1:8079/admin/1.0.0/openapi.json"' in (await untrusted.get("/openapi", headers=proxied)).text
    assert (await untrusted.get("/openapi.json", headers=proxied)).json()["servers"][0]["url"].startswith("http://127.0.0.1:8079/")
    # From a trusted proxy, the client's URL; a name the listener does not answer to is misdirected as a Host would be.
    trusted = make_client(admin='allowed_hosts = ["admin.example"]\ntrusted_proxies = ["192.0.2.0/24"]')
    index = (await trusted.get("/", headers=proxied)).json()
    assert index["links"][0]["href"] == "https://admin.example/admin/1.0.0/openapi.json"
    assert 'href="https://admin.example/admin/1.0.0/openapi.json"' in (await trusted.get("/openapi", headers=proxied)).text
    rfc7239 = (await trusted.get("/", headers={"forwarded": 'for=203.0.113.9;proto=https;host="admin.example:8443"'})).json()
    assert rfc7239["links"][0]["href"] == "https://admin.example:8443/admin/1.0.0/openapi.json"
    assert (await trusted.get("/", headers={"x-forwarded-host": "evil.example"})).status_code == 421
    markup = (await trusted.get("/openapi", headers={"x-forwarded-host": '"><script>alert(1)</script>'})).text
    assert "<script>alert" not in markup and 'href="http://127.0.0.1:8079/admin/1.0.0/openapi.json"' in markup
    # The page's own origin is the one the proxy names...
    other = await trusted.delete("/services/nope", headers={**forwarded, "origin": "https://evil.example"})
    assert other.json()["error"]["errorType"] == "cross_site_request"
    # ...past that check, a trusted proxy still forwards someone else: never local for writes without authentication.
    for headers in ({**forwarded, "origin": "https://admin.example"}, {"x-forwarded-for": "127.0.0.1"}):
        refused = await trusted.delete("/services/nope", headers=headers)
        assert refused.status_code == 403 and "not through a proxy" in refused.json()["error"]["message"], headers


def test_a_services_forwarded_urls_come_only_from_its_trusted_proxies(tmp_path: Path) -> None:
    headers = {"host": "127.0.0.1:8080", "x-forwarded-host": "maps.example", "x-forwarded-proto": "https"}
    service = write_service(tmp_path)
    text = service.read_text()
    for proxies, client, expected in (
        ("", ("10.1.2.3", 5000), "http://127.0.0.1:8080"),  # none trusted: the default
        ('["10.0.0.0/8"]', ("192.0.2.7", 5000), "http://127.0.0.1:8080"),  # a client that is not the proxy
        ('["10.0.0.0/8"]', ("10.1.2.3", 5000), "https://maps.example"),
    ):
        service.write_text(text + (f"\n[http]\ntrusted_proxies = {proxies}\n" if proxies else ""))
        with TestClient(create_app(load_service(service), straight_plugins(entry_points=False)), client=client) as http:
            capabilities = http.get("/simple/1.0.0/getcapabilities", headers=headers).json()
            assert capabilities["info"]["url"] == f"{expected}/simple/1.0.0/", (proxies, client)
            assert {op["url"].split("/simple/")[0] for op in capabilities["operations"]} == {expected}
            assert f'href="{expected}/simple/1.0.0/openapi.json"' in http.get("/simple/1.0.0/openapi", headers=headers).text
    service.write_text(text + '\n[http]\ntrusted_proxies = ["10.0.0.300"]\n')
    with pytest.raises(ConfigurationError) as refused:
        load_service(service)
    assert "http.trusted_proxies[0]: expected an IP address or a network such as '10.0.0.0/8', got '10.0.0.300'" in refused.value.message


async def test_reads_need_a_token_when_the_admin_listener_is_not_on_loopback(make_client: Any, tmp_path: Path) -> None:
    tokens = tmp_path / "admin-tokens"
    token = add_token(tokens, "ops")
    auth = f'[administrator.auth]\ntokens_file = "{tokens}"\n'
    reachable = make_client(auth, host="0.0.0.0")
    for path in ("/health", "/services", "/services/main", "/configuration", "/plugins", "/version", "/services/main/resources"):
        assert (await reachable.get(path)).status_code == 401, path
    assert (await reachable.get("/services", headers=bearer(token))).status_code == 200
    assert (await reachable.get("/openapi.json")).status_code == 200  # the API's description stays readable
    assert (await make_client(auth).get("/services")).status_code == 200  # on loopback, reads stay open by default
    opened = make_client(auth + "protect_reads = false\n", host="0.0.0.0")  # the administrator's explicit choice
    assert (await opened.get("/services")).status_code == 200


async def test_admin_tokens_must_be_meant_for_the_admin_api(make_client: Any, iam: Iam, tmp_path: Path) -> None:
    without = f'[administrator.auth.jwt]\nissuer = "{iam.issuer}"\nrole = "roadkit-admin"\n'
    with pytest.raises(ConfigurationError) as refused:
        load_server(server(tmp_path, without))
    assert "administrator.auth.jwt.audiences: expected the client ids of the admin API" in refused.value.message
    client = make_client(jwt_auth(iam))
    assert (await client.delete("/services/nope", headers=bearer(iam.token()))).status_code == 404  # aud = roadkit-admin
    assert (await client.delete("/services/nope", headers=bearer(iam.token(aud=None, azp="roadkit-admin")))).status_code == 404
    # The browser app's token of an admin user: issued to another client, for the account service.
    app_token = iam.token(aud="account", azp="roadkit-app")
    refused_app = await client.delete("/services/nope", headers=bearer(app_token))
    assert refused_app.status_code == 401 and "Invalid token audience" in refused_app.json()["error"]["message"]
    no_audience = await client.delete("/services/nope", headers=bearer(iam.token(aud=None)))
    assert no_audience.status_code == 401


class BlackHole:
    """An IAM that accepts connections and never answers (a hung server, a firewall that drops)."""

    def __init__(self) -> None:
        self.sock = bound_socket()
        self.sock.listen(64)
        self.issuer = f"http://127.0.0.1:{self.sock.getsockname()[1]}/realms/test"


async def test_an_iam_outage_costs_one_short_wait_then_requests_fail_fast(make_client: Any) -> None:
    hole = BlackHole()
    try:
        client = make_client(
            f'[administrator.auth.jwt]\nissuer = "{hole.issuer}"\nrole = "roadkit-admin"\naudiences = ["roadkit-admin"]\ntimeout = 1.0\n'
        )
        token = _unsigned({"alg": "ES256", "kid": "k1"}, {"sub": "x"}, b"sig")

        async def timed() -> tuple[int, float]:
            started = time.monotonic()
            response = await client.delete("/services/nope", headers=bearer(token))
            assert response.json()["error"]["errorType"] == "iam_unavailable"
            return response.status_code, time.monotonic() - started

        # Ten requests at once share the one look-up: each waits the time-out once, not ten times in a row.
        started = time.monotonic()
        first = await asyncio.gather(*(timed() for _ in range(10)))
        together = time.monotonic() - started
        assert {status for status, _ in first} == {503}
        assert 0.9 < together < 2.0, together
        later = [await timed() for _ in range(20)]
        assert {status for status, _ in later} == {503}
        slowest = max(elapsed for _, elapsed in later)
        assert slowest < 0.1, slowest  # remembered: no new wait on the IAM
        print(f"IAM down: 10 concurrent requests {together:.2f} s in all; the next 20 at most {slowest * 1000:.1f} ms each")
    finally:
        hole.sock.close()


async def test_a_failed_iam_look_up_is_tried_again_after_a_short_while(iam: Iam) -> None:
    async with aiohttp.ClientSession() as session:
        # The realm is missing at first (an IAM being redeployed), then back.
        provider = OidcProvider(JwtAuth(issuer=iam.issuer + "-gone", role="r", audiences=("a",)), session, failure_memory=0.3)
        with pytest.raises(IamUnavailable, match="HTTP 404"):
            await provider.decode(iam.token())
        provider.settings = JwtAuth(issuer=iam.issuer, role="r", audiences=("a",))
        with pytest.raises(IamUnavailable, match=r"HTTP 404.*not tried again yet"):
            await provider.decode(iam.token())
        await asyncio.sleep(0.35)
        assert (await provider.decode(iam.token()))["sub"] == "alice"  # asked again, and it answers
