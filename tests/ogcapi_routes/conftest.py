"""The Monaco demo (OSRM, Valhalla and pgRouting resources in one service, run by an administrator) for the OGC tests."""

from __future__ import annotations

from tests.engine_b.conftest import valhalla_data, valhalla_example  # noqa: F401  (fixtures of road2_demo)
from tests.engine_c.conftest import pg_cluster, pg_dsn  # noqa: F401  (fixtures of road2_demo)
from tests.road2.conftest import road2_demo  # noqa: F401  (the demo, served on free ports)
