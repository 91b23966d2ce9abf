"""``/me`` and ``/documents``: the caller's profile and saved routes and isochrones."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .config import BackendSection
from .errors import ApiError, BadRequest, NotFound
from .storage.base import Quota, QuotaExceeded, renderable

log = logging.getLogger("roadkit_client")

MAX_TITLE = 200
DOCUMENT_TYPES = ("route", "isochrone")
GEOMETRY_TYPES = ("Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon")
GEOJSON_TYPES = ("Feature", "FeatureCollection", "GeometryCollection", *GEOMETRY_TYPES)
NO_STORE = {"Cache-Control": "no-store"}
#: Deepest nesting of arrays and objects accepted in a body (a MultiPolygon needs 5 levels inside a Feature).
MAX_DEPTH = 64


def _no_constant(name: str) -> Any:
    # json accepts NaN/Infinity by default; neither is JSON (RFC 8259) nor storable in JSONB.
    raise BadRequest(f"body: {name} is not a JSON number (expected finite numbers only)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # e.g. 1e400 overflows to infinity
        raise BadRequest(f"body: the number {text[:40]} is out of range (expected a finite number)")
    return value


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate such as "\ud800"
        return False
    return True


def check_json_tree(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Refuse what cannot be stored or rendered: nesting past ``max_depth``, lone surrogates.

    Iterative on purpose: a recursive walk of a hostile body is what must not happen.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            if not _is_text(item):
                raise BadRequest(f"{where or 'body'}: expected Unicode text (a lone surrogate is not)")
        elif isinstance(item, (dict, list)):
            if depth >= max_depth:
                raise BadRequest(f"body: nested deeper than {max_depth} levels")
            entries = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in entries:
                if isinstance(key, str) and not _is_text(key):
                    raise BadRequest(f"{where or 'body'}: a key is not Unicode text (a lone surrogate is not)")
                stack.append((child, _path(where, key), depth + 1))


def parse_json(raw: bytes) -> Any:
    """Strict JSON (RFC 8259): finite numbers, valid Unicode, bounded nesting; else :class:`BadRequest`."""
    try:
        value = json.loads(raw, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise BadRequest(f"body: nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("body: expected valid JSON") from None
    check_json_tree(value)
    return value


def _check_geometry(value: Any, where: str) -> None:
    if value is None and where.endswith(".geometry"):
        return
    if not isinstance(value, dict):
        raise BadRequest(f"{where}: expected a GeoJSON geometry object")
    kind = value.get("type")
    if kind == "GeometryCollection":
        geometries = value.get("geometries")
        if not isinstance(geometries, list):
            raise BadRequest(f"{where}.geometries: expected an array")
        for index, item in enumerate(geometries):
            _check_geometry(item, f"{where}.geometries[{index}]")
        return
    if kind not in GEOMETRY_TYPES:
        raise BadRequest(f"{where}.type: expected one of {', '.join(GEOJSON_TYPES)}, got {kind!r}")
    if not isinstance(value.get("coordinates"), list):
        raise BadRequest(f"{where}.coordinates: expected an array")


def _check_feature(value: Any, where: str) -> None:
    if not isinstance(value, dict) or value.get("type") != "Feature":
        raise BadRequest(f"{where}: expected a GeoJSON Feature")
    _check_geometry(value.get("geometry"), f"{where}.geometry")
    if value.get("properties") is not None and not isinstance(value.get("properties"), dict):
        raise BadRequest(f"{where}.properties: expected an object or null")


def validate_geojson(value: Any) -> dict[str, Any]:
    """A GeoJSON Feature, FeatureCollection or Geometry object; raises :class:`BadRequest` naming the field."""
    if not isinstance(value, dict):
        raise BadRequest("geojson: expected a GeoJSON object")
    kind = value.get("type")
    if kind == "Feature":
        _check_feature(value, "geojson")
    elif kind == "FeatureCollection":
        features = value.get("features")
        if not isinstance(features, list):
            raise BadRequest("geojson.features: expected an array")
        for index, feature in enumerate(features):
            _check_feature(feature, f"geojson.features[{index}]")
    else:
        _check_geometry(value, "geojson")
    return value


def validate_document(body: Any) -> tuple[str, str, dict[str, Any]]:
    """Check a ``POST /documents`` body; returns (title, type, geojson)."""
    if not isinstance(body, dict):
        raise BadRequest("body: expected a JSON object with title, type and geojson")
    unknown = sorted(set(body) - {"title", "type", "geojson"})
    if unknown:
        raise BadRequest(f"{unknown[0]}: unknown field (expected title, type, geojson)")
    title = body.get("title")
    if not isinstance(title, str) or not title.strip():
        raise BadRequest("title: expected a non-empty string")
    title = title.strip()
    if len(title) > MAX_TITLE:
        raise BadRequest(f"title: expected at most {MAX_TITLE} characters, got {len(title)}")
    kind = body.get("type")
    if kind not in DOCUMENT_TYPES:
        raise BadRequest(f"type: expected 'route' or 'isochrone', got {kind!r}")
    return title, str(kind), validate_geojson(body.get("geojson"))


async def read_json_body(request: Request, max_bytes: int) -> Any:
    """The request's JSON body, counted as it streams in (413 past ``max_bytes``)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise ApiError(415, "unsupported_media_type", "body: expected Content-Type application/json")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise ApiError(413, "payload_too_large", f"body: larger than {max_bytes} bytes")
        chunks.append(chunk)
    return parse_json(b"".join(chunks))


def _printable(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


async def me(request: Request) -> Response:
    """``GET /me``: the caller's profile."""
    principal = await request.app.state.auth.principal(request)
    return JSONResponse(principal.profile(), headers=NO_STORE)


def encode_cursor(seq: int) -> str:
    """The opaque ``cursor`` of the page after the document numbered ``seq``."""
    return base64.urlsafe_b64encode(f"v1:{seq}".encode()).rstrip(b"=").decode()


def decode_cursor(cursor: str) -> int:
    """The ``seq`` a :func:`encode_cursor` value names; :class:`BadRequest` for anything else."""
    problem = 'cursor: expected the cursor of a previous page (the Link header\'s rel="next")'
    if len(cursor) > 64:
        raise BadRequest(problem)
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        raise BadRequest(problem) from None
    version, _, number = text.partition(":")
    if version != "v1" or not number.isdigit() or len(number) > 19:
        raise BadRequest(problem)
    return int(number)


def page_limit(value: str | None, backend: BackendSection) -> int:
    """The ``limit`` query parameter: 1 to ``documents_max_page_size``, ``documents_page_size`` when absent."""
    if value is None:
        return backend.documents_page_size
    maximum = backend.documents_max_page_size
    if not (value.isascii() and value.isdigit() and len(value) <= 8 and 1 <= int(value) <= maximum):
        raise BadRequest(f"limit: expected an integer from 1 to {maximum}, got {value[:40]!r}")
    return int(value)


def _quota_error(exc: QuotaExceeded) -> ApiError:
    if exc.kind == "documents":
        return ApiError(
            409,
            "document_quota_exceeded",
            f"documents: you already have {exc.used} documents, the most allowed per user "
            f"(backend.max_documents_per_user = {exc.limit}); delete some to save new ones",
        )
    return ApiError(
        409,
        "storage_quota_exceeded",
        f"documents: this document ({exc.size} bytes) would bring yours to {exc.used + exc.size} bytes, past the "
        f"{exc.limit} bytes allowed per user (backend.max_stored_bytes_per_user); delete some to save new ones",
    )


async def list_documents(request: Request) -> Response:
    """``GET /documents?limit=&cursor=``: one page of the caller's documents, newest first.

    When more follow, a ``Link: <...>; rel="next"`` header gives the next page's URL.
    """
    principal = await request.app.state.auth.principal(request)
    backend: BackendSection = request.app.state.config.backend
    limit = page_limit(request.query_params.get("limit"), backend)
    cursor = request.query_params.get("cursor")
    before = decode_cursor(cursor) if cursor is not None else None
    # One more than the page tells whether a next page exists.
    documents = await request.app.state.storage.list_documents(principal.subject, limit=limit + 1, before=before)
    headers = dict(NO_STORE)
    if len(documents) > limit:
        documents = documents[:limit]
        query = urlencode({"limit": limit, "cursor": encode_cursor(documents[-1].seq)})
        # The next page at the address the caller uses: local mode's with a token, the portal's with its cookie.
        bearer = "authorization" in request.headers and backend.local_mode
        base = backend.public_url.rstrip("/") if bearer else backend.remote_url
        headers["Link"] = f'<{base}/documents?{query}>; rel="next"'
    items = []
    for document in documents:
        item = document.as_json()
        if not renderable(item):
            # One unreadable row must not hide the others (nor keep the user from deleting it).
            log.warning("document %s cannot be rendered; listed without its geojson", document.id)
            item = {**item, "title": _printable(document.title), "geojson": None}
        elif item["geojson"] is None:
            log.warning("document %s has unreadable stored geojson; listed without it", document.id)
        items.append(item)
    return JSONResponse(items, headers=headers)


async def create_document(request: Request) -> Response:
    """``POST /documents``: save a route or isochrone; 201 with the stored document."""
    principal = await request.app.state.auth.principal(request)
    title, kind, geojson = validate_document(await read_json_body(request, request.app.state.max_body_bytes))
    backend: BackendSection = request.app.state.config.backend
    quota = Quota(documents=backend.max_documents_per_user, bytes=backend.max_stored_bytes_per_user)
    try:
        document = await request.app.state.storage.add_document(principal.subject, title, kind, geojson, quota=quota)
    except QuotaExceeded as exc:
        raise _quota_error(exc) from None
    return JSONResponse(document.as_json(), status_code=201, headers=NO_STORE)


async def delete_document(request: Request) -> Response:
    """``DELETE /documents/{id}``: 204, or 404 when the caller has no such document."""
    principal = await request.app.state.auth.principal(request)
    document_id = request.path_params["document_id"]
    if not await request.app.state.storage.delete_document(principal.subject, document_id):
        raise NotFound(f"document {document_id!r} not found")
    return Response(status_code=204, headers=NO_STORE)
