"""PKCE (RFC 7636) checks with Keycloak's rules and error texts."""

from __future__ import annotations

import hmac
import re

from authlib.oauth2.rfc7636 import create_s256_code_challenge

#: Keycloak's pattern for both the challenge and the verifier, with RFC 7636's 43-128 length.
_PKCE_VALUE = re.compile(r"^[0-9a-zA-Z\-\.~_]{43,128}$")


def s256_challenge(verifier: str) -> str:
    """``BASE64URL(SHA256(ASCII(verifier)))`` without padding (RFC 7636 §4.2)."""
    return str(create_s256_code_challenge(verifier))


def is_valid_pkce_value(value: str) -> bool:
    """True when ``value`` is a well-formed challenge or verifier."""
    return bool(_PKCE_VALUE.match(value))


def check_authorization_params(required_method: str | None, challenge: str | None, method: str | None) -> str | None:
    """Keycloak's PKCE checks at the authorization endpoint; returns an error description or None."""
    if required_method:
        if not method:
            return "Missing parameter: code_challenge_method"
        if method != required_method:
            return "Invalid parameter: code challenge method is not matching the configured one"
        if not challenge:
            return "Missing parameter: code_challenge"
        if not is_valid_pkce_value(challenge):
            return "Invalid parameter: code_challenge"
        return None
    if method and not challenge:
        return "Missing parameter: code_challenge"
    if method and method not in ("S256", "plain"):
        return "Invalid parameter: code_challenge_method"
    if challenge and not is_valid_pkce_value(challenge):
        return "Invalid parameter: code_challenge"
    return None


def check_token_verifier(challenge: str | None, method: str | None, verifier: str | None) -> str | None:
    """Keycloak's PKCE checks at the token endpoint; returns an ``invalid_grant`` description or None."""
    if not challenge:
        if verifier:
            return "PKCE code verifier specified but challenge not present in authorization"
        return None
    if not verifier:
        return "PKCE code verifier not specified"
    if not is_valid_pkce_value(verifier):
        return "PKCE verification failed: Invalid code verifier"
    expected = s256_challenge(verifier) if (method or "plain") == "S256" else verifier
    if not hmac.compare_digest(expected, challenge):
        return "PKCE verification failed: Code mismatch"
    return None
