"""The hooks the Valhalla plugin implements (entry point ``valhalla`` in the ``roadkit`` group).

Kinds ``valhalla`` and ``valhalla-http``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roadkit.contract.sources import Source, hookimpl
from roadkit_valhalla.remote import ValhallaHttpSource
from roadkit_valhalla.source import ValhallaSource


@hookimpl
def roadkit_source_kinds() -> Sequence[type[Source]]:
    return [ValhallaSource, ValhallaHttpSource]


@hookimpl
def roadkit_commands() -> Sequence[Any]:
    from roadkit_valhalla.prepare import build_command

    return [build_command()]
