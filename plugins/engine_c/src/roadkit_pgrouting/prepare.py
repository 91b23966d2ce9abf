"""``roadkit prepare`` for ``pgrouting`` sources: import the extract when the schema has no graph yet."""

from __future__ import annotations

import asyncio

from roadkit.contract.sources import Progress, SourceConfig
from roadkit_pgrouting.database import settings_of, start_cluster
from roadkit_pgrouting.importer import import_osm, schema_exists
from roadkit_pgrouting.options import PgOptions


def prepare_source(config: SourceConfig, options: PgOptions, *, force: bool, progress: Progress) -> bool:
    """Import ``preparation.osm`` into the source's schema when it is missing (or always with ``force``).

    Several sources on the same schema import it once: the second finds it there.
    """
    prep = options.preparation
    if prep is None:
        return False
    storage = options.storage
    settings = settings_of(storage.database, storage.dsn, storage.password_env)
    cluster = None
    if settings.cluster is not None:
        progress.step(f"starting the private PostgreSQL cluster in {settings.cluster}")
        cluster, settings = start_cluster(settings)
    try:
        if not force and asyncio.run(schema_exists(settings, storage.schema, storage.ways)):
            return False
        import_osm(
            prep.osm,
            settings,
            storage.schema,
            min_component=prep.min_component,
            turn_restrictions=prep.turn_restrictions,
            progress=progress,
        )
        return True
    finally:
        if cluster is not None:
            cluster.stop()
