"""roadkit-pgrouting: source kind ``pgrouting`` (Road2's ``pgr``) on PostgreSQL/pgRouting, and the OSM import."""

from __future__ import annotations

__version__ = "0.1.0"
