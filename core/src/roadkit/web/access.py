"""How a service with ``[access]`` tells its users which credentials it takes: OpenAPI security schemes, capabilities.

Every routing API's OpenAPI document states them (:func:`secure_openapi`); the simple API's
getcapabilities too (:func:`capabilities_security`). The credentials themselves are checked by
:mod:`roadkit.serving.access`.
"""

from __future__ import annotations

from typing import Any

from roadkit.config.models import Access, Quota

#: The header and the query parameter an API key is sent in.
KEY_HEADER = "X-Api-Key"
KEY_PARAMETER = "apikey"


def security_schemes(access: Access) -> dict[str, dict[str, Any]]:
    """The OpenAPI ``securitySchemes`` of a service's routing APIs."""
    schemes: dict[str, dict[str, Any]] = {}
    if access.keys_file is not None:
        text = "An API key made with 'roadkit api-key create'"
        schemes["apiKeyHeader"] = {"type": "apiKey", "in": "header", "name": KEY_HEADER, "description": f"{text}, as a header."}
        schemes["apiKeyQuery"] = {"type": "apiKey", "in": "query", "name": KEY_PARAMETER, "description": f"{text}, as a query parameter."}
    if access.jwt is not None:
        role = f" carrying the role {access.jwt.role!r}" if access.jwt.role else ""
        schemes["bearer"] = {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": f"An access token of the IAM {access.jwt.issuer}{role}.",
        }
    return schemes


def _quota_text(quota: Quota) -> str:
    parts = []
    if quota.requests is not None:
        parts.append(f"{quota.requests} requests per {quota.window:g} s")
    if quota.concurrent is not None:
        parts.append(f"{quota.concurrent} at once")
    return ", ".join(parts) or "no quota"


def secure_openapi(document: dict[str, Any], access: Access | None) -> dict[str, Any]:
    """``document`` (an API's OpenAPI document) stating the security of its operations; unchanged when ``access`` is None.

    Requirements are alternatives (any one scheme suffices); an empty one when anonymous use is allowed.
    """
    if access is None:
        return document
    schemes = security_schemes(access)
    components = {**document.get("components", {}), "securitySchemes": schemes}
    security: list[dict[str, list[str]]] = [{name: []} for name in schemes]
    if access.anonymous:
        security.append({})
    info = dict(document.get("info", {}))
    quotas = f"Quota per key or token: {_quota_text(access.quota)}."
    if access.anonymous:
        quotas += f" Without credentials, per client address: {_quota_text(access.anonymous_quota)}."
    info["description"] = (
        f"{info.get('description', '')}\n\n{quotas} Beyond a quota: 429 with Retry-After; "
        "answers counted by a rate quota carry RateLimit and RateLimit-Policy headers. "
        "Missing or invalid credentials: 401 with WWW-Authenticate."
    ).strip()
    return {**document, "info": info, "components": components, "security": security}


def capabilities_security(access: Access | None) -> dict[str, Any] | None:
    """The ``security`` member of a getcapabilities document: the schemes, anonymous use and quotas (None: open)."""
    if access is None:
        return None

    def quota(q: Quota) -> dict[str, Any]:
        return {"requests": q.requests, "window": q.window, "concurrent": q.concurrent}

    found: dict[str, Any] = {"schemes": security_schemes(access), "anonymous": access.anonymous, "quota": quota(access.quota)}
    if access.anonymous:
        found["anonymousQuota"] = quota(access.anonymous_quota)
    return found
