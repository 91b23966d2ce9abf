"""The backend's errors: each carries an HTTP status and a stable ``errorType`` code.

Bodies are ``{"error": {"errorType": "<code>", "message": "<text>"}}`` (Road2's shape). An
unexpected exception becomes a 500 whose detail goes to the log, never to the client.
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

log = logging.getLogger("roadkit_client")


class ApiError(Exception):
    """An identified error with its HTTP status, code and client-safe message."""

    def __init__(self, status: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message
        self.headers = headers or {}


class BadRequest(ApiError):
    """400: the request does not match what the endpoint accepts (the message names the field)."""

    def __init__(self, message: str, error_type: str = "invalid_request") -> None:
        super().__init__(400, error_type, message)


class NotFound(ApiError):
    """404: no such resource for this caller."""

    def __init__(self, message: str) -> None:
        super().__init__(404, "not_found", message)


def error_response(status: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The JSON error body with ``Cache-Control: no-store``."""
    return JSONResponse(
        {"error": {"errorType": error_type, "message": message}},
        status_code=status,
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


async def handle_api_error(request: Request, exc: Exception) -> Response:
    """Render an :class:`ApiError` (logged at debug level: it is identified)."""
    assert isinstance(exc, ApiError)
    log.debug("%s %s -> %s %s", request.method, request.url.path, exc.status, exc.error_type)
    return error_response(exc.status, exc.error_type, exc.message, exc.headers)


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    """Log an unexpected failure (path only: no query string, no headers) and answer 500."""
    log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal_error", "Internal server error")


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's 404/405 in the same JSON shape."""
    status = getattr(exc, "status_code", 500)
    detail = str(getattr(exc, "detail", "")) or "Error"
    codes = {404: "not_found", 405: "method_not_allowed"}
    return error_response(status, codes.get(status, "http_error"), detail, getattr(exc, "headers", None))
