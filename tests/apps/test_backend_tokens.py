"""Bearer access-token validation of the backend's ``GET /me`` against the IAM's JWKS."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest
from joserfc import jwk, jwt

from .apps_support import Stack, running_stack
from .oidc_flow import tokens_for


def _login(stack: Stack, http: httpx.Client, username: str = "demo") -> dict:
    password = {"demo": "demo-password", "alice": "alice-password"}[username]
    return tokens_for(http, stack.iam.url, f"{stack.app_url}/", username=username, password=password)


def _me(stack: Stack, token: str) -> httpx.Response:
    return httpx.get(f"{stack.backend_url}/me", headers={"Authorization": f"Bearer {token}"})


def _forge(stack: Stack, **changes) -> str:
    """A token signed with the IAM's real key, with some claims changed."""
    now = int(time.time())
    claims = {
        "iss": stack.iam.issuer,
        "sub": str(uuid.uuid4()),
        "aud": "account",
        "azp": "roadkit-app",
        "typ": "Bearer",
        "iat": now,
        "exp": now + 300,
        "preferred_username": "forged",
    }
    claims.update(changes)
    return stack.iam.iam.keys.sign({k: v for k, v in claims.items() if v is not None})


def _assert_401(response: httpx.Response, description: str) -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="roadkit"') and 'error="invalid_token"' in challenge
    assert f'error_description="{description}"' in challenge
    assert response.json()["error"]["errorType"] == "invalid_token"


def test_me_returns_profile_for_valid_token(stack: Stack, http: httpx.Client) -> None:
    tokens = _login(stack, http)
    response = _me(stack, tokens["access_token"])
    assert response.status_code == 200
    body = response.json()
    assert body == {
        "id": body["id"],
        "username": "demo",
        "email": "demo@example.org",
        "firstName": "Demo",
        "lastName": "User",
        "name": "Demo User",
    }
    uuid.UUID(body["id"])


def test_missing_credentials_get_401_with_challenge(stack: Stack) -> None:
    response = httpx.get(f"{stack.backend_url}/me")
    assert response.status_code == 401 and response.headers["www-authenticate"] == 'Bearer realm="roadkit"'


def test_non_bearer_authorization_is_refused(stack: Stack) -> None:
    response = httpx.get(f"{stack.backend_url}/me", headers={"Authorization": "Basic ZGVtbzpkZW1v"})
    assert response.status_code == 401 and 'error="invalid_request"' in response.headers["www-authenticate"]


def test_tampered_token_is_refused(stack: Stack, http: httpx.Client) -> None:
    token = _login(stack, http)["access_token"]
    header, payload, signature = token.split(".")
    tampered_payload = payload[:-4] + ("AAAA" if payload[-4:] != "AAAA" else "BBBB")
    _assert_401(_me(stack, f"{header}.{tampered_payload}.{signature}"), "Invalid token signature")
    _assert_401(_me(stack, "not-a-jwt"), "Malformed token")


def test_expired_token_is_refused(stack: Stack, http: httpx.Client) -> None:
    token = _login(stack, http)["access_token"]
    stack.clock.offset += 301
    _assert_401(_me(stack, token), "Token expired")


def test_token_not_yet_valid_is_refused(stack: Stack) -> None:
    _assert_401(_me(stack, _forge(stack, nbf=int(time.time()) + 600)), "Token not yet valid")


def test_wrong_audience_and_party_is_refused(stack: Stack) -> None:
    _assert_401(_me(stack, _forge(stack, aud="other-api", azp="other-client")), "Invalid token audience")


def test_wrong_issuer_is_refused(stack: Stack) -> None:
    _assert_401(_me(stack, _forge(stack, iss="http://127.0.0.1:1/realms/roadkit")), "Invalid token issuer")


def test_refresh_token_is_not_an_access_token(stack: Stack, http: httpx.Client) -> None:
    _assert_401(_me(stack, _login(stack, http)["refresh_token"]), "Not an access token")


def test_token_signed_by_unknown_key_is_refused(stack: Stack) -> None:
    key = jwk.RSAKey.generate_key(2048, parameters={"kid": "attacker-key"}, private=True)
    now = int(time.time())
    token = jwt.encode(
        {"alg": "RS256", "kid": "attacker-key"},
        {"iss": stack.iam.issuer, "sub": "x", "aud": "account", "azp": "roadkit-app", "typ": "Bearer", "iat": now, "exp": now + 300},
        key,
    )
    _assert_401(_me(stack, token), "Unknown signing key")


def test_hs256_token_is_refused(stack: Stack) -> None:
    key = jwk.OctKey.import_key("s" * 32)
    token = jwt.encode({"alg": "HS256", "kid": stack.iam.iam.keys.kid}, {"iss": stack.iam.issuer, "sub": "x"}, key)
    _assert_401(_me(stack, token), "Unsupported token algorithm")


def test_key_rotation_is_picked_up_through_jwks_refresh(stack: Stack, http: httpx.Client) -> None:
    before = _login(stack, http)["access_token"]
    assert _me(stack, before).status_code == 200
    http.post(f"{stack.iam.url}/_testing/keys/rotate", json={"keep_previous": True})
    after = tokens_for(http, stack.iam.url, f"{stack.app_url}/")["access_token"]
    assert after.split(".")[0] != before.split(".")[0]
    assert _me(stack, after).status_code == 200
    assert _me(stack, before).status_code == 200


def test_configured_audience_is_accepted_without_azp() -> None:
    overrides = {"iam": {"audiences": ["roadkit-api"], "authorized_parties": ["nobody"]}}
    iam_overrides = {
        "clients": [
            {
                "client_id": "roadkit-app",
                "public": True,
                "pkce_method": "S256",
                "audiences": ["roadkit-api"],
                "redirect_uris": ["http://127.0.0.1:1/"],
            },
        ]
    }
    with running_stack(overrides, iam_overrides) as stack, httpx.Client() as http:
        token = tokens_for(http, stack.iam.url, "http://127.0.0.1:1/")["access_token"]
        assert _me(stack, token).status_code == 200
        _assert_401(_me(stack, _forge(stack, aud="account")), "Invalid token audience")


@pytest.mark.parametrize("path", ["/me", "/documents"])
def test_unauthenticated_routes_answer_401_not_500(stack: Stack, path: str) -> None:
    assert httpx.get(f"{stack.backend_url}{path}", headers={"Authorization": "Bearer a.b.c"}).status_code == 401
