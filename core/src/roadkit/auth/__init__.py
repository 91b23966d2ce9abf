"""Authentication shared by roadkit's servers: IAM tokens (OIDC discovery + JWKS) and static admin tokens."""

from roadkit.auth.oidc import ALLOWED_ALGORITHMS, IamUnavailable, InvalidToken, OidcProvider

__all__ = ["ALLOWED_ALGORITHMS", "IamUnavailable", "InvalidToken", "OidcProvider"]
