"""Native requests answered by an in-process osrm-bindings engine, as osrm-routed answers them."""

from __future__ import annotations

from typing import Any

from roadkit.contract.native_osrm import NativeAnswer, NativeRequest
from roadkit_osrm.native.checks import wrong_option_help
from roadkit_osrm.native.render import error_body, render

_COMMON = ("coordinates", "hints", "radiuses", "bearings", "approaches", "generate_hints", "exclude", "snapping")
_ROUTE_LIKE = ("steps", "annotations", "geometries", "overview", "waypoints")
#: the binding's keyword arguments per service (every other parsed option is set as an attribute)
_KEYWORDS = {
    "route": (*_COMMON, *_ROUTE_LIKE, "number_of_alternatives", "continue_straight"),
    "trip": (*_COMMON, *_ROUTE_LIKE, "source", "destination", "roundtrip"),
    "match": (*_COMMON, *_ROUTE_LIKE, "timestamps", "gaps", "tidy"),
    "table": (*_COMMON, "sources", "destinations", "annotations", "fallback_speed", "fallback_coordinate_type", "scale_factor"),
    "nearest": _COMMON,
}
_CLASSES = {
    "route": "RouteParameters",
    "trip": "TripParameters",
    "match": "MatchParameters",
    "table": "TableParameters",
    "nearest": "NearestParameters",
}
_METHODS = {"route": "Route", "trip": "Trip", "match": "Match", "table": "Table", "nearest": "Nearest"}


def build_parameters(service: str, params: dict[str, Any]) -> Any:
    """The osrm-bindings parameter object of a parsed request."""
    import osrm

    cls = getattr(osrm, _CLASSES[service])
    keywords = _KEYWORDS[service]
    arguments = {k: v for k, v in params.items() if k in keywords}
    annotations = arguments.pop("annotations", None)
    if annotations and service == "table":
        arguments["annotations"] = annotations  # "none" (a POST's false) means neither durations nor distances
    elif annotations:
        # osrm-routed ORs the flags: "false" (none) adds nothing, "true" (all) covers every other one
        wanted = ["all"] if "all" in annotations else [a for a in annotations if a != "none"]
        if wanted:
            arguments["annotations"] = wanted
    built = cls(**arguments)
    if "skip_waypoints" in params:
        built.skip_waypoints = params["skip_waypoints"]
    if "number_of_results" in params:
        built.number_of_results = params["number_of_results"]
    return built


def engine_error(exc: RuntimeError) -> NativeAnswer:
    """The binding's ``"Code - message"`` exception as osrm-routed's 400 answer."""
    text = str(exc)
    code, sep, message = text.partition(" - ")
    if not sep or not code.isalnum():
        code, message = "InvalidOptions", text
    return NativeAnswer(400, error_body(code, message))


def exclude_problem(engine: Any, exclude: list[str]) -> NativeAnswer | None:
    """osrm-routed's answer when the dataset cannot exclude this combination of classes, else None.

    For nearest and match, osrm-routed checks the exclude classes before its size limits; only the
    engine knows the dataset's classes, so a one-point nearest with the same classes asks it.
    """
    import osrm

    try:
        engine.Nearest(osrm.NearestParameters(coordinates=[(0.0, 0.0)], exclude=list(exclude)))
    except RuntimeError as exc:
        answer = engine_error(exc)
        if b"Exclude" in answer.body:
            return answer
    return None


def refusal(request: NativeRequest, engine: Any = None) -> tuple[Any, NativeAnswer | None]:
    """The parameters of ``request``, or osrm-routed's 400 for a request it refuses before routing.

    The checks need no engine: a source forwarding to a remote osrm-routed makes them too, so that
    the resource's limits apply (and are worded) as in process. Given the ``engine``, the exclude
    classes of nearest and match are checked first, as osrm-routed does.
    """
    import osrm

    service, params = request.service, request.params
    if service == "tile":
        tile_parameters = osrm.TileParameters([params["x"], params["y"], params["z"]])
        if not tile_parameters.IsValid():
            return None, NativeAnswer(400, error_body("InvalidOptions", "Invalid coodinates. Only zoomlevel 12+ is supported"))
        return tile_parameters, None
    try:
        # osrm-bindings lacks overview=by_legs; the checks below do not depend on the overview
        built = build_parameters(
            service, {k: v for k, v in params.items() if k != "overview"} if params.get("overview") == "by_legs" else params
        )
    except (TypeError, ValueError, OverflowError) as exc:
        return None, NativeAnswer(400, error_body("InvalidValue", str(exc).splitlines()[0]))
    if not built.IsValid():
        return None, NativeAnswer(400, error_body("InvalidOptions", wrong_option_help(service, params)))
    if engine is not None and service in ("nearest", "match") and params.get("exclude"):
        problem = exclude_problem(engine, params["exclude"])
        if problem is not None:
            return None, problem
    exceeded = request.limits.exceeded(service, params)
    if exceeded is not None:
        return None, NativeAnswer(400, error_body(*exceeded))
    return built, None


def answer(engine: Any, request: NativeRequest) -> NativeAnswer:
    """osrm-routed's answer to ``request`` computed by ``engine`` (blocking: run it in the source's thread)."""
    # What osrm-routed does but osrm-bindings cannot (a remote osrm-routed can: these are not refusals)
    if request.params.get("format") == "flatbuffers":
        return NativeAnswer(400, error_body("InvalidOptions", "The flatbuffers output format is not available on this service"))
    if request.params.get("overview") == "by_legs":
        return NativeAnswer(400, error_body("InvalidOptions", "overview=by_legs is not available on this service"))
    built, refused = refusal(request, engine)
    if refused is not None:
        return refused
    if request.service == "tile":
        try:
            tile = engine.Tile(built)
        except RuntimeError as exc:
            return engine_error(exc)
        return NativeAnswer(200, bytes(tile), "application/x-protobuf")
    try:
        result = getattr(engine, _METHODS[request.service])(built)
    except RuntimeError as exc:
        return engine_error(exc)
    return NativeAnswer(200, render(result).encode())
