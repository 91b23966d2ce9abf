"""Switching a source to another version of its data: the document to publish, checked first.

The administrator publishes the source's document with the new ``version`` as a ``PUT`` would: every
worker connects the new version beside the one in use, swaps it in once it is green, and releases the
old one when the requests still running on it are done (:meth:`roadkit.serving.service.Service.publish_source`).
"""

from __future__ import annotations

from typing import Any

from roadkit.config.loader import parse_source
from roadkit.errors import BadRequest, Conflict, ParameterInvalid
from roadkit.routing.versions import version_problem
from roadkit.serving.documents import ServiceFiles


def requested_version(body: Any) -> str:
    """The version a ``{"version": "..."}`` body asks for (a 400 naming the problem otherwise)."""
    if not isinstance(body, dict) or set(body) != {"version"}:
        keys = ", ".join(sorted(map(str, body))) if isinstance(body, dict) else type(body).__name__
        raise BadRequest(f'Invalid request body: expected {{"version": "<version>"}}, got {keys or "{}"}', code="invalid_body")
    problem = version_problem(body["version"])
    if problem is not None:
        raise ParameterInvalid("version", problem)
    return str(body["version"])


def switch_document(files: ServiceFiles, oid: str, version: str) -> tuple[dict[str, Any], str | None]:
    """The stored document of source ``oid`` with ``version``, and its version now.

    A version whose data files are missing is a 409 naming them: nothing is written, nothing changes.
    """
    document = files.document("source", oid)
    wrapped = set(document) == {"source"} and isinstance(document["source"], dict)
    inner = dict(document["source"] if wrapped else document)
    current = inner.get("version")
    inner["version"] = version
    path = files.find("source", oid)
    assert path is not None  # found by files.document
    config = parse_source(inner, path)
    cls = files.plugins.source_kinds().get(config.type)
    if cls is not None:
        versioned = cls.versioned(config, version)
        missing = [str(path) for path in cls.data_paths(versioned, cls.parse_options(versioned)) if not path.exists()]
        if missing:
            raise Conflict(
                f"{config.path}: version: the data of version {version} is missing ({', '.join(missing)}); "
                f"build it first with 'roadkit prepare --source {oid} --version {version}'"
            )
    return ({"source": inner} if wrapped else inner), current if isinstance(current, str) else None
