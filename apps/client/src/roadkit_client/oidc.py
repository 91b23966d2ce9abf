"""The backend's view of the IAM: roadkit's shared implementation (:mod:`roadkit.auth.oidc`)."""

from roadkit.auth.oidc import ALLOWED_ALGORITHMS, IamUnavailable, InvalidToken, OidcProvider

__all__ = ["ALLOWED_ALGORITHMS", "IamUnavailable", "InvalidToken", "OidcProvider"]
