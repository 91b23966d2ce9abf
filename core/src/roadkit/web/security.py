"""Security headers on every answer of a roadkit app (services and the admin API).

The middleware lives in ``roadkit_support.security``, shared with the apps (the client backend,
the development IAM) that do not install the routing core.
"""

from __future__ import annotations

from roadkit_support.security import DEFAULT_SECURITY_HEADERS, SecurityHeaders

__all__ = ["DEFAULT_SECURITY_HEADERS", "SecurityHeaders"]
