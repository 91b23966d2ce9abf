"""PKCE derivation and Keycloak's PKCE parameter rules."""

from __future__ import annotations

import pytest

from roadkit_deviam.pkce import check_authorization_params, check_token_verifier, s256_challenge

RFC7636_VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
RFC7636_CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_s256_matches_rfc7636_appendix_b_vector() -> None:
    assert s256_challenge(RFC7636_VERIFIER) == RFC7636_CHALLENGE


@pytest.mark.parametrize(
    ("required", "challenge", "method", "expected"),
    [
        ("S256", RFC7636_CHALLENGE, None, "Missing parameter: code_challenge_method"),
        ("S256", RFC7636_CHALLENGE, "plain", "Invalid parameter: code challenge method is not matching the configured one"),
        ("S256", None, "S256", "Missing parameter: code_challenge"),
        ("S256", "short", "S256", "Invalid parameter: code_challenge"),
        ("S256", RFC7636_CHALLENGE, "S256", None),
        (None, None, "S256", "Missing parameter: code_challenge"),
        (None, RFC7636_CHALLENGE, "S512", "Invalid parameter: code_challenge_method"),
        (None, None, None, None),
    ],
)
def test_authorization_pkce_rules_use_keycloak_messages(required, challenge, method, expected) -> None:
    assert check_authorization_params(required, challenge, method) == expected


@pytest.mark.parametrize(
    ("challenge", "verifier", "expected"),
    [
        (RFC7636_CHALLENGE, RFC7636_VERIFIER, None),
        (RFC7636_CHALLENGE, None, "PKCE code verifier not specified"),
        (RFC7636_CHALLENGE, "bad verifier!", "PKCE verification failed: Invalid code verifier"),
        (RFC7636_CHALLENGE, "x" * 43, "PKCE verification failed: Code mismatch"),
        (None, RFC7636_VERIFIER, "PKCE code verifier specified but challenge not present in authorization"),
    ],
)
def test_token_verifier_rules_use_keycloak_messages(challenge, verifier, expected) -> None:
    assert check_token_verifier(challenge, "S256", verifier) == expected
