"""The hooks the pgRouting plugin implements (entry point ``pgrouting`` in the ``roadkit`` group)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roadkit.contract.sources import Source, hookimpl
from roadkit_pgrouting.source import PgRoutingSource


@hookimpl
def roadkit_source_kinds() -> Sequence[type[Source]]:
    return [PgRoutingSource]


@hookimpl
def roadkit_commands() -> Sequence[Any]:
    from roadkit_pgrouting.importer import import_command

    return [import_command()]
