"""Raw parameters of a simple-API request (query string or JSON body) and their validation."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request

from roadkit.errors import BadRequest, ParameterInvalid, ParameterMissing
from roadkit.routing.model import Coord
from roadkit.routing.parameters import Parameter, PointParameter, echo, parse_values, split_multi
from roadkit.routing.projections import ProjectionRegistry
from roadkit.routing.resources import ResourceOperation
from roadkit.web.api import read_json_body

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$")


async def read_parameters(request: Request, body_limit: int) -> dict[str, Any]:
    """GET: the query string (a repeated key is an error, an empty value is absent). POST: the JSON object."""
    if request.method == "POST":
        body = await read_json_body(request, body_limit)
        if not isinstance(body, dict):
            raise BadRequest("Invalid request body: expected a JSON object of parameters", code="invalid_body")
        return {k: v for k, v in body.items() if v is not None and v != ""}
    return query_parameters(request.scope["query_string"], body_limit)


def query_parameters(query: bytes, limit: int | None = None) -> dict[str, Any]:
    """The parameters of a query string (as Starlette's ``query_params`` reads it): a repeated key is an
    error, an empty value is absent. A query longer than ``limit`` bytes (the body's limit: JSON given in
    a parameter has the size bound of a body) is a 414."""
    if limit is not None and len(query) > limit:
        raise BadRequest(f"Query string too long: at most {limit} bytes", code="uri_too_long", status=414)
    text = query.decode("latin-1")
    if "%" in text or "+" in text:
        pairs = parse_qsl(text, keep_blank_values=True)
    else:  # nothing to decode (the usual query): parse_qsl's result without its work per field
        pairs = [(key, value) for key, _, value in (part.partition("=") for part in text.split("&") if part)]
    params: dict[str, Any] = {}
    for key, value in pairs:
        if value == "":
            continue
        if key in params:
            raise ParameterInvalid(echo(key), "given more than once; expected a single value")
        params[key] = value
    return params


class Inputs:
    """The user's parameters of one operation, validated one by one against the resource's values."""

    def __init__(self, params: dict[str, Any], operation: ResourceOperation, projections: ProjectionRegistry) -> None:
        self.params = params
        self.operation = operation
        self.projections = projections

    def raw(self, name: str) -> Any:
        return self.params.get(name)

    def value(self, name: str) -> Any:
        """The parsed value, the resource's default when absent, or a 400 when required."""
        param = self.operation[name]
        raw = self.params.get(name)
        if raw is None:
            default = param.default()
            if default is None and param.spec.required:
                raise ParameterMissing(name)
            return default
        if param.spec.multi:
            return parse_values(param, raw)
        if isinstance(raw, list | dict) and param.spec.type != "point":
            raise ParameterInvalid(name, "expected a single value, got a JSON " + ("array" if isinstance(raw, list) else "object"))
        return param.parse(raw)

    def values(self, name: str) -> list[Any]:
        """The parsed values of a multi-valued parameter (empty when absent)."""
        param = self.operation[name]
        raw = self.params.get(name)
        if raw is None:
            if param.spec.required:
                raise ParameterMissing(name)
            return []
        return parse_values(param, raw)

    def point(self, name: str, crs: str, raw: Any = None) -> Coord:
        """A point parsed in ``crs`` and checked against the parameter's bbox (in its projection)."""
        param: Parameter = self.operation[name]
        assert isinstance(param, PointParameter)
        if raw is None:
            raw = self.params.get(name)
            if raw is None:
                raise ParameterMissing(name)
        point = param.parse(raw)
        self.check_point(param, point, crs)
        return point

    def points(self, name: str, crs: str) -> list[Coord]:
        """The points of a multi-valued point parameter, each checked against its bbox."""
        param = self.operation[name]
        raw = self.params.get(name)
        if raw is None:
            return []
        assert isinstance(param, PointParameter)
        points = parse_values(param, raw)
        for point in points:
            self.check_point(param, point, crs)
        return points

    def listed_points(self, name: str, crs: str) -> list[Coord]:
        """The points of a multi-valued point parameter (empty when absent and optional); an invalid point's
        error names the parameter and the point's index (from 0)."""
        param = self.operation[name]
        raw = self.params.get(name)
        if raw is None:
            if param.spec.required:
                raise ParameterMissing(name)
            return []
        assert isinstance(param, PointParameter)
        points = []
        for index, item in enumerate(split_multi(param, raw)):
            try:
                point = param.parse(item)
                self.check_point(param, point, crs)
            except ParameterInvalid as exc:
                raise ParameterInvalid(name, f"point {index}: {exc.detail}") from None
            points.append(point)
        return points

    def check_point(self, param: PointParameter, point: Coord, crs: str) -> None:
        if crs != param.projection:
            # In another CRS the bbox is a curved quadrilateral: the rule is the axis-aligned box
            # inside it that the OpenAPI document publishes (``openapi_exact.inner_box``).
            from roadkit.apis.simple.openapi_exact import inner_box

            box = inner_box(self.projections, param.bbox, param.projection, crs)
            if box is not None:
                for axis, value, lo, hi in (("x", point[0], box[0], box[2]), ("y", point[1], box[1], box[3])):
                    if not lo <= value <= hi:
                        raise ParameterInvalid(
                            param.name, f"{axis} = {value:g} is not in the bbox: expected between {lo:.2f} and {hi:.2f} in {crs}"
                        )
                return
        try:
            in_bbox_crs = self.projections.transform_point(point, crs, param.projection)
        except Exception:
            raise ParameterInvalid(param.name, f"the point can't be transformed from {crs} to {param.projection}") from None
        param.check_bbox(in_bbox_crs)

    def date_time(self) -> datetime | None:
        """``date_time`` as ``YYYY-MM-DDTHH:mm`` (a real date), also matched against the resource's pattern."""
        raw = self.params.get("date_time")
        if raw is None:
            return None
        if not isinstance(raw, str) or not _DATE_TIME.match(raw):
            raise ParameterInvalid("date_time", f"expected format YYYY-MM-DDTHH:mm, got '{echo(str(raw))}'")
        try:
            value = datetime.strptime(raw, "%Y-%m-%dT%H:%M")
        except ValueError:
            raise ParameterInvalid("date_time", f"'{raw}' is not a valid date and time") from None
        if "date_time" in self.operation.parameters:
            self.operation["date_time"].parse(raw)
        return value
