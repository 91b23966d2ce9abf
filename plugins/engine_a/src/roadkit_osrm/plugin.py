"""The hooks the OSRM plugin implements (entry point ``osrm`` in the ``roadkit`` group): kinds ``osrm`` and ``osrm-http``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from roadkit.contract.apis import Api, Source, hookimpl
from roadkit_osrm.remote import OsrmHttpSource
from roadkit_osrm.source import OsrmSource


@hookimpl
def roadkit_source_kinds() -> Sequence[type[Source]]:
    return [OsrmSource, OsrmHttpSource]


@hookimpl
def roadkit_commands() -> Sequence[Any]:
    from roadkit_osrm.prepare import build_command

    return [build_command()]


@hookimpl
def roadkit_apis() -> Sequence[Api]:
    from roadkit_osrm.native.api import NATIVE_API

    return [NATIVE_API]
