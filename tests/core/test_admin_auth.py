"""Who may use the admin API: loopback-only writes without authentication, IAM JWTs with a role, static tokens."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from roadkit.apis.admin import create_admin_app
from roadkit.auth.tokens import add_token
from roadkit.cli import main as roadkit_main
from roadkit.config import load_server
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.process.administrator import Administrator
from roadkit.server import administrator
from roadkit_support.serving import ServerThread, bound_socket
from tests.core.conftest import make_service, write
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


def server(root: Path, auth: str = "", host: str = "127.0.0.1") -> Path:
    make_service(root, port=1)
    return write(
        root / "server.toml",
        f"""
[administrator.listener]
host = "{host}"
port = 1
{auth}
[[services]]
id = "main"
configuration = "service.toml"
mode = "same-process"
""",
    )


@pytest.fixture
async def make_client(tmp_path: Path, plugins: Plugins) -> AsyncIterator[Any]:
    """``make_client(auth_toml, client_address)``: an httpx client of the admin app (nothing started)."""
    admins: list[Administrator] = []
    clients: list[httpx.AsyncClient] = []

    def make(auth: str = "", client: tuple[str, int] = OUTSIDE) -> httpx.AsyncClient:
        admin = administrator(load_server(server(tmp_path, auth)), plugins)
        admins.append(admin)
        http = httpx.AsyncClient(transport=httpx.ASGITransport(create_admin_app(admin), client=client), base_url="http://admin/admin/1.0.0")
        clients.append(http)
        return http

    yield make
    for http in clients:
        await http.aclose()
    for admin in admins:
        await admin.authenticator.close()


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
