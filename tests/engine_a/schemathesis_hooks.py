"""schemathesis hooks of the admin API's service writes: what a generated service may take on this machine.

A service document may leave its listeners out (the service then listens on 127.0.0.1:8080, the
documented default) or name any port: on a machine shared with other programs and tests, a fuzzer
that creates services would take their ports. Before each request with a schema-valid service
document (``createService``, ``modifyService``):

- every listener gets a port reserved for it (:func:`roadkit_support.serving.reserve_port`), and a
  document without listeners gets one such listener;
- folders the administrator creates (sources, resources) named by an absolute or ``~`` path move
  below the server file's folder, so that the run creates nothing outside its copy;
- a new service gets an id of its own (schemathesis repeats ids: each would be a 409 "already
  exists", and creation would never be reached), and at most 2 workers (the machine is shared).

With ``ROADKIT_FUZZ_DELETE_CREATED=1`` each service created is deleted right after (its checks
done), so that a run creating hundreds of them keeps one at a time. Documents schemathesis
generates to be invalid are left as they are: they must be refused.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import urllib.request
from typing import Any

import schemathesis

from roadkit_support.serving import reserve_port

SERVICE_WRITES = ("createService", "modifyService")
#: Seconds a stopping worker of a fuzzed service serves on after turning not ready.
MAX_STOP_DELAY = 0.5
MAX_WORKERS = 2
_serial = itertools.count(1)


def _operation_id(context: Any) -> str | None:
    return None if context.operation is None else context.operation.definition.raw.get("operationId")


def _free_listeners(configuration: dict[str, Any]) -> None:
    listeners = configuration.get("listeners")
    if "listeners" not in configuration:
        configuration["listeners"] = [{"port": reserve_port()}]
        return
    for listener in listeners if isinstance(listeners, list) else ():
        if isinstance(listener, dict) and isinstance(listener.get("port", 0), int):
            listener["port"] = reserve_port()  # also where the port was left out (8080)


#: Files a service document names, which must lie inside the folders the administrator allows writes in
#: (a rule JSON Schema can't state): generated paths are kept in this copy's folder, as the folders are.
NAMED_FILES = (("access", "keys_file"), ("access_log", "file"), ("ogcapi_routes", "store"))


def _inside(table: Any, key: str) -> None:
    value = table.get(key) if isinstance(table, dict) else None
    if isinstance(value, str) and (value.startswith(("/", "~")) or ".." in value):
        table[key] = "fuzz/" + value.replace("..", "_").lstrip("/~")


def _relative_files(configuration: dict[str, Any]) -> None:
    for section, key in NAMED_FILES:
        _inside(configuration.get(section), key)
    _inside(configuration.get("folders"), "projections")
    listeners = configuration.get("listeners")
    for listener in listeners if isinstance(listeners, list) else ():
        _inside(listener, "certfile")
        _inside(listener, "keyfile")


def _relative_folders(configuration: dict[str, Any]) -> None:
    folders = configuration.get("folders")
    for key in ("sources", "resources"):
        paths = folders.get(key) if isinstance(folders, dict) else None
        if isinstance(paths, list):
            folders[key] = [f"fuzz/{p}" if isinstance(p, str) and p.startswith(("/", "~")) else p for p in paths]  # type: ignore[index]


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Free ports, folders of this copy, a new id and at most 2 workers for every schema-valid service document."""
    operation = _operation_id(context)
    if operation not in SERVICE_WRITES or case.meta is None or not case.meta.generation.mode.is_positive:
        return
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("configuration"), dict):
        return
    _free_listeners(body["configuration"])
    _relative_folders(body["configuration"])
    _relative_files(body["configuration"])
    if isinstance(body.get("workers"), int) and body["workers"] > MAX_WORKERS:
        body["workers"] = MAX_WORKERS
    probes = body["configuration"].get("probes")
    if isinstance(probes, dict) and isinstance(probes.get("stop_delay"), int | float) and probes["stop_delay"] > MAX_STOP_DELAY:
        probes["stop_delay"] = MAX_STOP_DELAY  # a valid delay of minutes makes every later restart wait minutes
    if operation == "createService" and isinstance(body.get("id"), str):
        body["id"] = f"{body['id'][:100]}-{next(_serial)}"


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    """With ROADKIT_FUZZ_DELETE_CREATED=1: delete each service just created (one extra service at a time)."""
    if os.environ.get("ROADKIT_FUZZ_DELETE_CREATED") != "1" or _operation_id(context) != "createService" or response.status_code != 201:
        return
    request = urllib.request.Request(f"{response.request.url.rstrip('/')}/{case.body['id']}", method="DELETE")
    with urllib.request.urlopen(request, timeout=60) as deleted:
        assert deleted.status == 204, deleted.status


#: The keys a source or resource document describes exactly (roadkit.apis.admin.openapi_writes); the
#: others are the source kind's or the resource type's own, checked by them (the document says so).
DESCRIBED_KEYS = {
    "putSource": {"id", "type", "description", "projection", "timeout"},
    "putResource": {"id", "type", "sources", "description", "version"},
}
#: The one rule of a described key that JSON Schema can't state: a bbox's corners in order.
BBOX_ORDER = "bbox: expected xmin < xmax and ymin < ymax"
#: Described keys naming what the service has now (its projections, its sources): a 409 alone, listed with
#: the 400's problems when there are some.
STATE_KEYS = {"projection", "sources"}


@schemathesis.check
def publication_refusals_name_only_what_the_document_leaves_to_the_kind(ctx: Any, response: Any, case: Any) -> bool | None:
    """A schema-valid source or resource refused (400) only for its kind's own keys or a bbox out of order."""
    operation = case.operation.definition.raw.get("operationId")
    if operation not in DESCRIBED_KEYS or case.meta is None or not case.meta.generation.mode.is_positive or response.status_code != 400:
        return None
    for problem in json.loads(response.content)["error"]["message"].splitlines():
        where, _, rest = problem.partition(": ")
        if not where.endswith((".source", ".resource")):
            continue  # the service file's state (no folder to publish into...): a conflict listed with the problems
        key = re.split(r"[.\[:]", rest, maxsplit=1)[0]
        if key == "(top level)" and rest.startswith("(top level): unknown key(s) "):
            continue  # keys the kind or type does not take (the document leaves them open)
        if key not in DESCRIBED_KEYS[operation] and key != "bbox":
            continue  # the kind's or type's own keys
        if BBOX_ORDER in problem or (key in STATE_KEYS and "unknown" in rest):
            continue
        raise AssertionError(f"a schema-valid {operation} was refused for something the document states: {problem}")
    return None
