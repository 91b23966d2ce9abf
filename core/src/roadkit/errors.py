"""One error hierarchy: every error carries its HTTP status and a stable code.

API handlers render any :class:`RoadkitError` as Road2's body shape
``{"error": {"errorType": code, "message": text}}``; anything else is a 500 whose
detail goes to the log only.
"""

from __future__ import annotations


class RoadkitError(Exception):
    """Base of every identified roadkit error (logged at debug level, never as an error)."""

    status: int = 500
    code: str = "internal"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status

    def body(self) -> dict[str, dict[str, str]]:
        """The JSON body an API sends for this error."""
        return {"error": {"errorType": self.code, "message": self.message}}


class BadRequest(RoadkitError):
    """The request is malformed (content type, body, unknown operation)."""

    status = 400
    code = "bad_request"


class ParameterMissing(BadRequest):
    """A required parameter is absent."""

    code = "parameter_missing"

    def __init__(self, name: str) -> None:
        super().__init__(f"Parameter '{name}' not found")
        self.parameter = name


class ParameterInvalid(BadRequest):
    """A parameter has a value that is not allowed; the message says what was expected."""

    code = "parameter_invalid"

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"Parameter '{name}' is invalid: {detail}")
        self.parameter = name
        self.detail = detail


class ParametersNotCompatible(BadRequest):
    """Two parameters whose values no source of the resource serves together (Road2's wording)."""

    code = "parameter_invalid"

    def __init__(self, first: str, second: str, detail: str) -> None:
        super().__init__(f"Parameters '{first}' and '{second}' are not compatible: {detail}")
        self.parameter = first
        self.detail = detail


class PointNotSnapped(ParameterInvalid):
    """A point of a list parameter (``sources``, ``targets``...) that no road of the network is near."""

    code = "point_not_snapped"

    def __init__(self, name: str, index: int, detail: str = "no road of the network is near this point") -> None:
        super().__init__(name, f"point {index}: {detail}")
        self.index = index


class OperationNotPermitted(BadRequest):
    """The operation is not offered by this resource or service."""

    code = "operation_not_permitted"


class Unauthorized(RoadkitError):
    """No usable credentials (401); the admin API adds a ``WWW-Authenticate`` challenge."""

    status = 401
    code = "unauthorized"


class Forbidden(RoadkitError):
    """Credentials, or a client address, without the right to do this (403)."""

    status = 403
    code = "forbidden"


class NotFound(RoadkitError):
    """A named thing (service, projection, path under an API) does not exist."""

    status = 404
    code = "not_found"


class Conflict(RoadkitError):
    """The request contradicts the current state (an id already taken, a source still in use)."""

    status = 409
    code = "conflict"


class NoPathFound(RoadkitError):
    """The engine found no route between the points (404, not logged as an error)."""

    status = 404
    code = "no_path"

    def __init__(self, message: str = "No path found") -> None:
        super().__init__(message)


class NoIsochroneFound(RoadkitError):
    """The engine could not compute an isochrone (404, not logged as an error)."""

    status = 404
    code = "no_isochrone"

    def __init__(self, message: str = "No isochrone found") -> None:
        super().__init__(message)


class UnsupportedOperation(RoadkitError):
    """The source kind does not implement this operation."""

    status = 501
    code = "unsupported_operation"


class EngineError(RoadkitError):
    """The engine failed; the message is safe to show, details are logged."""

    status = 502
    code = "engine_error"


class EngineTimeout(EngineError):
    """The engine did not answer within the source's time-out."""

    status = 504
    code = "engine_timeout"


class EngineBusy(RoadkitError):
    """Every engine slot of the source is taken (a full database pool): 503 with ``Retry-After``, the source stays green."""

    status = 503
    code = "busy"


class SourceUnavailable(RoadkitError):
    """The source is not connected (state red)."""

    status = 503
    code = "source_unavailable"


class ConfigurationError(RoadkitError):
    """One or more configuration problems; ``problems`` lists each as 'file: key: expected ...'."""

    status = 400
    code = "configuration_error"

    #: The longest problem kept whole: past it, a value someone sent (megabytes, through the admin API) is cut.
    MAX_PROBLEM = 1000

    def __init__(self, problems: list[str]) -> None:
        most = self.MAX_PROBLEM
        self.problems = [p if len(p) <= most else f"{p[:most]}... ({len(p)} characters)" for p in problems]
        super().__init__("\n".join(self.problems) if self.problems else "invalid configuration")


class PluginError(RoadkitError):
    """A plugin is broken or conflicts with another (start-up error)."""

    code = "plugin_error"
