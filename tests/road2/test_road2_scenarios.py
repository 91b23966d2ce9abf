"""Road2's functional request scenarios (its cucumber features ``req-*.feature``), on the Monaco demo.

Each row of ``SCENARIOS`` is one Road2 scenario as the Road2 reference lists it (section 6.1 of
road2-reference.md): feature, name, method(s), path, parameters, expected status and checks, in Road2's
own notation. Paris' points, resources and attributes are replaced by the Monaco demo's (``monaco-osrm``,
``monaco-pgrouting``, ``monaco-valhalla``; pgRouting's ``importance`` by ``vitesse``, ``cleabs`` by
``highway``, ``nom_1_droite`` by ``name``). "similar to reference" compares with the routes and
isochrones of ``data/``, recorded on the demo (``ROADKIT_ROAD2_RECORD=1`` writes the missing ones), with
Road2's tolerances: distance within 100 m, start and end within 10 m, the geometry within a 100 m buffer
of the reference's; as in Road2, pgRouting's "Route normale" is compared with the OSRM route's reference.

Scenarios not run are in ``NOT_RUN`` with the reason (a test checks that they are exactly the rows left
out); ``ADAPTED`` holds those run with roadkit's answer where it differs from Road2's on purpose.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import numpy
import pytest
import shapely
from pyproj import Transformer
from shapely.geometry import LineString, Point, Polygon, shape
from shapely.geometry.base import BaseGeometry

from roadkit.routing.geometry import decode_polyline

from .conftest import Demo

DATA = Path(__file__).parent / "data"
RECORD = os.environ.get("ROADKIT_ROAD2_RECORD") == "1"
START, END = "7.41337,43.72956", "7.41983,43.73115"

#: Road2's default parameter sets, on Monaco.
DEFAULTS: dict[str, dict[str, str]] = {
    "route-osrm": {"resource": "monaco-osrm", "start": START, "end": END},
    "route-pgr": {"resource": "monaco-pgrouting", "start": START, "end": END},
    "route-valhalla": {"resource": "monaco-valhalla", "start": START, "end": END},
    "isochrone": {"resource": "monaco-pgrouting", "point": START, "costValue": "100", "costType": "time"},
    "isochrone-valhalla": {"resource": "monaco-valhalla", "point": START, "costValue": "100", "costType": "time"},
    "nearest-osrm": {"resource": "monaco-osrm", "coordinates": START},
}


class Scenario(NamedTuple):
    feature: str
    name: str
    methods: str  # "GET", "POST" or "GET+POST"
    path: str  # relative to the feature's API root, or absolute on the service
    params: str  # Road2's notation: defaults `set`; `key=value` (GET raw); `key`=[`a`, `b`]; without `key`
    status: int
    checks: str  # Road2's notation, "; "-separated


# fmt: off
SCENARIOS: list[Scenario] = [Scenario(*row) for row in [
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Une route qui n'existe pas",
        "GET+POST",
        "/admin/1.0.0/test",
        "`test=other`",
        404,
        'body contains "Not found"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Version de Road2",
        "GET",
        "version",
        "",
        200,
        'body contains "version"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Version de Road2 avec un mauvais parametre",
        "GET",
        "version",
        "`test=other`",
        200,
        'body contains "version"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Version de Road2 en POST ne marche pas",
        "POST",
        "version",
        "`test=other`",
        404,
        'body contains "Not found"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] État de Road2",
        "GET",
        "health",
        "",
        200,
        'body contains "state"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] État de Road2 avec un mauvais parametre",
        "GET",
        "health",
        "`test=other`",
        200,
        'body contains "state"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] État de Road2 en POST ne marche pas",
        "POST",
        "health",
        "`test=other`",
        404,
        'body contains "Not found"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Configuration de l'administrateur",
        "GET",
        "configuration",
        "",
        200,
        'body contains "administration"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Configuration de l'administrateur avec un mauvais parametre",
        "GET",
        "configuration",
        "`test=other`",
        200,
        'body contains "administration"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Configuration de l'administrateur en POST ne marche pas",
        "POST",
        "configuration",
        "`test=other`",
        404,
        'body contains "Not found"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Configurations des services",
        "GET",
        "services",
        "",
        200,
        'JSON; body contains "application"; has `[0].id`',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Configurations des services en POST ne marche pas",
        "POST",
        "services",
        "`test=other`",
        404,
        'body contains "Not found"',
    ),
    (
        "req-admin-1.0.0",
        '[admin/1.0.0] Configuration du service "main"',
        "GET",
        "services/<service>",
        "`service=main`",
        200,
        'JSON; body contains "application"',
    ),
    (
        "req-admin-1.0.0",
        '[admin/1.0.0] Redémarrage du service "main"',
        "GET",
        "services/<service>/restart",
        "`service=main`",
        200,
        "JSON",
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Redémarrage d'un service inexistant",
        "GET",
        "services/<service>/restart",
        "`service=test`",
        404,
        'JSON; body contains "Can\'t find service"',
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Configuration d'un service inexistant ne marche pas",
        "GET",
        "services/<service>",
        "`service=other`",
        404,
        'body contains "Can\'t find service"',
    ),
    (
        "req-admin-1.0.0",
        '[admin/1.0.0] Projection valide du service "main"',
        "GET",
        "services/<service>/projections/<projection>",
        "`service=main`; `projection=EPSG:4326`",
        200,
        'JSON; `id` ⊇ "EPSG:4326"; has `parameters`',
    ),
    (
        "req-admin-1.0.0",
        '[admin/1.0.0] Projection invalide du service "main"',
        "GET",
        "services/<service>/projections/<projection>",
        "`service=main`; `projection=unknown`",
        404,
        "has `error`",
    ),
    (
        "req-admin-1.0.0",
        '[admin/1.0.0] Projection invalide du service "main"',
        "GET",
        "services/<service>/projections/<projection>",
        "`service=Unknown`; `projection=Unknown`",
        404,
        "has `error`",
    ),
    (
        "req-admin-1.0.0",
        "[admin/1.0.0] Projection sur service non défini",
        "GET",
        "services/<service>/projections/<projection>",
        "`service=%20`; `projection=EPSG:4326`",
        400,
        "has `error`",
    ),
    (
        "req-admin-1.0.0",
        '[admin/1.0.0] Projection non définie sur service "main"',
        "GET",
        "services/<service>/projections/<projection>",
        "`service=main`; `projection=%20`",
        400,
        "has `error`",
    ),
    (
        "req-data-bduni-osrm",
        "[simple/1.0.0] Route normale",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `start=7.414644,43.72821`; `end=7.427507,43.73961`",
        200,
        "JSON; valid road; similar to `common/normale.json`",
    ),
    (
        "req-data-bduni-osrm",
        "[GET] [simple/1.0.0] Route qui fait une boucle",
        "GET",
        "route",
        "defaults `route-osrm`; `start=7.41337,43.72956`; `end=7.41337,43.72956`; `intermediates=7.4246,43.7383|7.41983,43.73115`",
        200,
        "JSON; valid road; similar to `common/boucle.json`",
    ),
    (
        "req-data-bduni-osrm",
        "[GET] [simple/1.0.0] Route qui fait du sur place",
        "GET",
        "route",
        "defaults `route-osrm`; `start=7.41337,43.72956`; `end=7.41337,43.72956`",
        200,
        "JSON; valid road; similar to `common/point.json`",
    ),
    (
        "req-data-bduni-osrm",
        "[GET] [simple/1.0.0] Route à sens unique en sens direct",
        "GET",
        "route",
        "defaults `route-osrm`; `start=7.42038,43.73228`; `end=7.42007,43.73302`",
        200,
        "JSON; valid road; similar to `common/unique-direct.json`",
    ),
    (
        "req-data-bduni-osrm",
        "[GET] [simple/1.0.0] Routes à sens unique en sens inverse",
        "GET",
        "route",
        "defaults `route-osrm`; `start=7.42007,43.73302`; `end=7.42038,43.73228`",
        200,
        "JSON; valid road; similar to `common/unique-inverse.json`",
    ),
    (
        "req-data-bduni-osrm",
        "[GET] [simple/1.0.0] Route qui doit passer sur un pont mais en interdisant les ponts",
        "GET",
        "route",
        "defaults `route-osrm`; `start=7.37612,43.75813`; `end=7.41337,43.72956`; "
        '`constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`',
        404,
        'JSON; `error.message` ⊇ "No path found"',
    ),
    (
        "req-data-bduni-pgr",
        "[simple/1.0.0] Route normale",
        "GET+POST",
        "route",
        "defaults `route-pgr`; `start=7.414644,43.72821`; `end=7.427507,43.73961`",
        200,
        "JSON; valid road; similar to `common/normale.json`",
    ),
    (
        "req-data-bduni-pgr",
        "[GET] [simple/1.0.0] Route qui doit passer sur un pont mais en interdisant les ponts",
        "GET",
        "route",
        "defaults `route-pgr`; `start=7.37612,43.75813`; `end=7.41337,43.72956`; "
        '`constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`',
        404,
        'JSON; `error.message` ⊇ "No path found"',
    ),
    (
        "req-data-bduni-pgr",
        "[GET] [simple/1.0.0] Route avec point intermediaire qui provoque un demi-tour",
        "GET",
        "route",
        "defaults `route-pgr`; `start=7.42000,43.73100`; `end=7.42300,43.73200`; `intermediates=7.42150,43.73130`",
        200,
        "JSON; valid road; similar to `pgr/1.json`",
    ),
    (
        "req-data-bduni-pgr",
        "[POST] [simple/1.0.0] Route avec point intermediaire qui provoque un demi-tour",
        "POST",
        "route",
        "defaults `route-pgr`; `start=7.42000,43.73100`; `end=7.42300,43.73200`; `intermediates`=[`7.42150,43.73130`]",
        200,
        "JSON; valid road; similar to `pgr/1.json`",
    ),
    (
        "req-data-bduni-pgr",
        "[simple/1.0.0] Route commençant sur une raquette",
        "GET+POST",
        "route",
        "defaults `route-pgr`; `start=7.42600,43.73900`; `end=7.42800,43.74000`",
        200,
        "JSON; valid road; similar to `pgr/2.json`",
    ),
    (
        "req-data-bduni-pgr",
        "Isochrone sur l'API simple 1.0.0",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `point=7.42000,43.73500`",
        200,
        "JSON; valid iso; similar to `pgr/3.json`",
    ),
    (
        "req-data-bduni-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un geometryFormat polyline",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `point=7.42000,43.73500`; `geometryFormat=polyline`",
        200,
        "JSON; valid iso; similar to `pgr/4.json`",
    ),
    (
        "req-osrm-1.0.0-common",
        "Route principale de l'API osrm/1.0.0",
        "GET",
        "/osrm/1.0.0",
        "",
        200,
        'body contains "roadkit via OSRM API 1.0.0"',
    ),
    (
        "req-osrm-1.0.0-common",
        "GetCapabilities de l'API osrm/1.0.0",
        "GET",
        "/osrm/1.0.0/resources",
        "",
        501,
        'body contains "Not Implemented"',
    ),
    (
        "req-osrm-1.0.0-common",
        "Requête sur une route inexistante",
        "GET",
        "/osrm/1.0.0/test",
        "",
        404,
        'body contains "Not found"',
    ),
    (
        "req-osrm-1.0.0-common",
        "[route] Route sur l'API osrm 1.0.0 avec mauvaise resource",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=test`; `profile=car`; `optimization=fastest`; `coordinates=7.41337,43.72956;7.41983,43.73115`",
        400,
        'JSON; `message` ⊇ "Parameter \'resourceId\' is invalid: it does not exist on this service"',
    ),
    (
        "req-osrm-1.0.0-common",
        "[route] Route sur l'API osrm 1.0.0 avec mauvais profile",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=test`; `optimization=fastest`; `coordinates=7.41337,43.72956;7.41983,43.73115`",
        400,
        'JSON; `message` ⊇ "Parameter \'profileId\' is invalid"',
    ),
    (
        "req-osrm-1.0.0-common",
        "[route] Route sur l'API osrm 1.0.0 avec mauvaise optimisation",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=test`; `coordinates=7.41337,43.72956;7.41983,43.73115`",
        400,
        'JSON; `message` ⊇ "Parameter \'optimizationId\' is invalid"',
    ),
    (
        "req-osrm-1.0.0-common",
        "[route] Route sur l'API osrm 1.0.0 avec mauvaises coordonnées",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; `coordinates=7.41337,43.72956;7.41983,`",
        400,
        'JSON; `message` ⊇ "Parameter \'coordinates\' is invalid"',
    ),
    (
        "req-osrm-1.0.0-osrm",
        "Route sur l'API osrm 1.0.0",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; `coordinates=7.41337,43.72956;7.41983,43.73115`",
        200,
        'JSON; `code` ⊇ "Ok"; has `waypoints`; has `routes`; has `routes.[0].geometry`; has `routes.[0].distance`; '
        "has `routes.[0].duration`; has `routes.[0].legs`; has `routes.[0].legs.[0].distance`; "
        "has `routes.[0].legs.[0].duration`; has `routes.[0].legs.[0].steps`; has `routes.[0].legs.[0].summary`; "
        "has `waypoints.[0].name`; has `waypoints.[0].distance`; has `waypoints.[0].location`; has `waypoints.[0].hint`",
    ),
    (
        "req-osrm-1.0.0-osrm",
        "[osrm/1.0.0] Route avec point intermédiaire",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; `coordinates=7.41337,43.72956;7.4246,43.7383;7.41983,43.73115`",
        200,
        'JSON; `code` ⊇ "Ok"; has `waypoints.[2].name`; has `routes.[0].legs.[1].summary`',
    ),
    (
        "req-osrm-1.0.0-osrm",
        "[osrm/1.0.0] Route avec steps=false (default)",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; `coordinates=7.41337,43.72956;7.4246,43.7383;7.41983,43.73115`",
        200,
        'JSON; `code` ⊇ "Ok"; no `routes.[0].legs.[0].steps.[0]`',
    ),
    (
        "req-osrm-1.0.0-osrm",
        "[osrm/1.0.0] Route avec steps=false explicitement",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; "
        "`coordinates=7.41337,43.72956;7.4246,43.7383;7.41983,43.73115`; `steps=false`",
        200,
        'JSON; `code` ⊇ "Ok"; no `routes.[0].legs.[0].steps.[0]`',
    ),
    (
        "req-osrm-1.0.0-osrm",
        "[osrm/1.0.0] Route avec steps=true",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; "
        "`coordinates=7.41337,43.72956;7.4246,43.7383;7.41983,43.73115`; `steps=true`",
        200,
        'JSON; `code` ⊇ "Ok"; has `routes.[0].legs.[0].steps.[0].name`; has `routes.[0].legs.[0].steps.[0].distance`; '
        "has `routes.[0].legs.[0].steps.[0].duration`; has `routes.[0].legs.[0].steps.[0].mode`; "
        "has `routes.[0].legs.[0].steps.[0].geometry`; has `routes.[0].legs.[0].steps.[0].maneuver`; "
        "has `routes.[0].legs.[0].steps.[0].intersections`",
    ),
    (
        "req-osrm-1.0.0-osrm",
        "[osrm/1.0.0] Route avec geometries=polyline (default)",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; `coordinates=7.41337,43.72956;7.4246,43.7383;7.41983,43.73115`",
        200,
        'JSON; `code` ⊇ "Ok"; `routes.[0].geometry` is a string; `waypoints.[0].hint` is a string',
    ),
    (
        "req-osrm-1.0.0-osrm",
        "[osrm/1.0.0] Route avec geometries=polyline explicitement",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; "
        "`coordinates=7.41337,43.72956;7.4246,43.7383;7.41983,43.73115`; `geometries=polyline`",
        200,
        'JSON; `code` ⊇ "Ok"; `routes.[0].geometry` is a string; `waypoints.[0].hint` is a string',
    ),
    (
        "req-osrm-1.0.0-osrm",
        "[osrm/1.0.0] Route avec geometries=geojson",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; `coordinates=7.41337,43.72956;7.4246,43.7383`; "
        "`geometries=geojson`",
        200,
        'JSON; `code` ⊇ "Ok"; `routes.[0].geometry.type` is a string; `waypoints.[0].hint` is a string',
    ),
    (
        "req-osrm-1.0.0-osrm",
        "[osrm/1.0.0] Route avec geometries=geojson et steps=true",
        "GET",
        "<resource>/<profile>/<optimization>/route/v1/_/<coordinates>",
        "`resource=monaco-osrm`; `profile=car`; `optimization=fastest`; `coordinates=7.41337,43.72956;7.4246,43.7383`; "
        "`geometries=geojson`; `steps=true`",
        200,
        'JSON; `code` ⊇ "Ok"; `routes.[0].geometry.type` is a string; `routes.[0].legs.[0].steps.[0].geometry.type` is a string; '
        "`waypoints.[0].hint` is a string",
    ),
    (
        "req-simple-1.0.0-common",
        "Route principale",
        "GET+POST",
        "/",
        "",
        200,
        'body contains "roadkit"',
    ),
    (
        "req-simple-1.0.0-common",
        "API simple 1.0.0",
        "GET",
        "/simple/1.0.0/",
        "",
        200,
        'body contains "roadkit via l\'API simple 1.0.0"',
    ),
    (
        "req-simple-1.0.0-common",
        "GetCapabilities sur l'API simple 1.0.0",
        "GET",
        "getcapabilities",
        "",
        200,
        'JSON; `info.name` ⊇ "roadkit"; `api.name` ⊇ "simple"; `api.version` ⊇ "1.0.0"; `operations.[0].id` ⊇ "route"; '
        '`operations.[0].methods.[1]` ⊇ "POST"; `operations.[0].parameters.[0].name` ⊇ "resource"; '
        '`operations.[1].id` ⊇ "isochrone"; `operations.[1].methods.[0]` ⊇ "GET"; `operations.[1].parameters.[1].name` ⊇ "point"',
    ),
    (
        "req-simple-1.0.0-common",
        "GetCapabilities sur l'API simple 1.0.0 sans changer le host",
        "GET",
        "getcapabilities",
        "",
        200,
        "JSON; `info.url` = config `url` (stale)",
    ),
    (
        "req-simple-1.0.0-common",
        "GetCapabilities sur l'API simple 1.0.0 en changeant le host",
        "GET",
        "getcapabilities",
        "request sent to host 127.0.0.1",
        200,
        "JSON; `info.url` = config `alternativeParameters.url` (stale)",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0",
        "GET+POST",
        "route",
        "defaults `route-osrm`",
        200,
        "JSON; valid road",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 sans ressource",
        "GET+POST",
        "route",
        "defaults `route-osrm`; without `resource`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'resource\' not found"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvaise ressource",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `resource=corse-osm-2`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'resource\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 sans start",
        "GET+POST",
        "route",
        "defaults `route-osrm`; without `start`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'start\' not found"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais start",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `start=-9,-410`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'start\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais start (string)",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `start=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'start\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 sans end",
        "GET+POST",
        "route",
        "defaults `route-osrm`; without `end`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'end\' not found"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais end",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `end=-9,-410`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'end\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais end (string)",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `end=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'end\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais profile",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `profile=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'profile\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvaise optimisation",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `optimization=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'optimization\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec un autre crs",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `crs=EPSG:2154`; `start=1055474.1,6302218.2`; `end=1055473.9,6302222.6`",
        200,
        'JSON; valid road; `crs` ⊇ "EPSG:2154"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais crs",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `crs=EPSG:4325`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'crs\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec un point intermediaire",
        "GET",
        "route",
        "defaults `route-osrm`; `intermediates=7.41337,43.7290`",
        200,
        "JSON; valid road; has `portions.[1]`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec plusieurs points intermediaires",
        "GET",
        "route",
        "defaults `route-osrm`; `intermediates=7.41337,43.73056|7.41357,43.72956`",
        200,
        "JSON; valid road; has `portions.[2]`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec un point intermediaire",
        "POST",
        "route",
        "defaults `route-osrm`; `intermediates`=[`7.41337,43.73056`]",
        200,
        "JSON; valid road; has `portions.[1]`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec deux points intermediaires",
        "POST",
        "route",
        "defaults `route-osrm`; `intermediates`=[`7.4246,43.7383`, `7.41347,43.73156`]",
        200,
        "JSON; valid road; has `portions.[2]`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec getSteps=true",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `getSteps=true`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].geometry`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec getSteps=false",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `getSteps=false`",
        200,
        "JSON; no `portions.[0].steps.[0].geometry`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais getSteps",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `getSteps=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'getSteps\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec mauvais waysAttributes",
        "GET",
        "route",
        "defaults `route-osrm`; `waysAttributes=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'waysAttributes\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec mauvais waysAttributes",
        "POST",
        "route",
        "defaults `route-osrm`; `waysAttributes`=[`test`]",
        400,
        'JSON; `error.message` ⊇ "Parameter \'waysAttributes\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec un bon waysAttributes",
        "GET",
        "route",
        "defaults `route-osrm`; `waysAttributes=name`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec un bon waysAttributes",
        "POST",
        "route",
        "defaults `route-osrm`; `waysAttributes`=[`name`]",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec un bon waysAttributes doublé",
        "GET",
        "route",
        "defaults `route-osrm`; `waysAttributes=name | name`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec un bon waysAttributes doublé",
        "POST",
        "route",
        "defaults `route-osrm`; `waysAttributes`=[`name`, `name`]",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec un bon waysAttributes et un faux",
        "GET",
        "route",
        "defaults `route-osrm`; `waysAttributes=name | test`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec un bon waysAttributes et un faux",
        "POST",
        "route",
        "defaults `route-osrm`; `waysAttributes`=[`name`, `test`]",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec getBbox=true",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `getBbox=true`",
        200,
        "JSON; valid road; has `bbox`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec getBbox=false",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `getBbox=false`",
        200,
        "JSON; no `bbox`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais getBbox",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `getBbox=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'getBbox\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec timeUnit=hour",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `timeUnit=hour`",
        200,
        'JSON; valid road; `timeUnit` ⊇ "hour"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec timeUnit=minute",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `timeUnit=minute`",
        200,
        'JSON; valid road; `timeUnit` ⊇ "minute"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec timeUnit=second",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `timeUnit=second`",
        200,
        'JSON; valid road; `timeUnit` ⊇ "second"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec timeUnit=standard",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `timeUnit=standard`",
        200,
        'JSON; valid road; `timeUnit` ⊇ "standard"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais timeUnit",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `timeUnit=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'timeUnit\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec distanceUnit=kilometer",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `distanceUnit=kilometer`",
        200,
        'JSON; valid road; `distanceUnit` ⊇ "kilometer"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec distanceUnit=meter",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `distanceUnit=meter`",
        200,
        'JSON; valid road; `distanceUnit` ⊇ "meter"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais distanceUnit",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `distanceUnit=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'distanceUnit\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec geometryFormat=polyline",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `geometryFormat=polyline`",
        200,
        "JSON; valid road; `geometry` is a string",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec geometryFormat=geojson",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `geometryFormat=geojson`",
        200,
        "JSON; valid road; has `geometry.type`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec geometryFormat=wkt",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `geometryFormat=wkt`",
        200,
        "JSON; valid road; `geometry` is a string",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais geometryFormat",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `geometryFormat=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'geometryFormat\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (constraintType absent)",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"key":"wayType","operator":"=","value":"autoroute"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (constraintType mauvais)",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"test","key":"wayType","operator":"=","value":"autoroute"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (key absent)",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","operator":"=","value":"autoroute"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (key mauvais)",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"test","operator":"=","value":"autoroute"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (operator absent)",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","value":"autoroute"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (operator mauvais)",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","operator":"test","value":"autoroute"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (value absent)",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","operator":"="}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (value mauvais)",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"test"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (constraintType absent)",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"key":"wayType","operator":"=","value":"autoroute"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (constraintType mauvais)",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"test","key":"wayType","operator":"=","value":"autoroute"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (key absent)",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","operator":"=","value":"autoroute"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (key mauvais)",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"test","operator":"=","value":"autoroute"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (operator absent)",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","value":"autoroute"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (operator mauvais)",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"test","value":"autoroute"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (value absent)",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"="}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte (value mauvais)",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"test"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec des paramètres qui n'existent pas (ressource)",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `ressource=corse-osm-2`",
        200,
        "JSON; valid road",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec des paramètres qui n'existent pas (point)",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `point=9,42`",
        200,
        "JSON; valid road",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec des paramètres qui n'existent pas (test)",
        "GET+POST",
        "route",
        "defaults `route-osrm`; `test=1`",
        200,
        "JSON; valid road",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec des tout les paramètres",
        "GET",
        "route",
        "defaults `route-osrm`; `profile=car`; `optimization=fastest`; `intermediates=7.4246,43.7383`; `geometryFormat=geojson`; "
        "`getSteps=true`; `getBbox=true`; `distanceUnit=meter`; `timeUnit=minute`; `crs=EPSG:4326`; `waysAttributes=name`; "
        '`constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`',
        200,
        "JSON; valid road",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec des tout les paramètres",
        "POST",
        "route",
        "defaults `route-osrm`; `profile=car`; `optimization=fastest`; `geometryFormat=geojson`; `getSteps=true`; "
        "`getBbox=true`; `distanceUnit=meter`; `timeUnit=minute`; `crs=EPSG:4326`; "
        '`constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`]; '
        "`intermediates`=[`7.4246,43.7383`]; `waysAttributes`=[`name`]",
        200,
        "JSON; valid road",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec plusieurs fois le start",
        "GET",
        "route",
        "defaults `route-osrm`; extra raw `&start=9.449347257614130,42.563930726519340` appended to URL",
        400,
        'JSON; `error.message` ⊇ "Parameter \'start\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec plusieurs fois le start",
        "POST",
        "route",
        "defaults `route-osrm`; `start`=[`9.449347257614130,42.563930726519340`, `9.449347257614135,42.563930726519345`]",
        400,
        'JSON; `error.message` ⊇ "Parameter \'start\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0",
        "GET+POST",
        "route",
        "defaults `route-osrm`",
        200,
        "JSON; valid road",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec plusieurs waysAttributes",
        "GET",
        "route",
        "defaults `route-osrm`; `waysAttributes=name | nature | importance`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`; has `portions.[0].steps.[0].attributes.nature`; "
        "has `portions.[0].steps.[0].attributes.importance`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec plusieurs waysAttributes",
        "POST",
        "route",
        "defaults `route-osrm`; `waysAttributes`=[`name`, `nature`, `importance`]",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`; has `portions.[0].steps.[0].attributes.nature`; "
        "has `portions.[0].steps.[0].attributes.importance`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec plusieurs waysAttributes",
        "GET",
        "route",
        "defaults `route-osrm`; `waysAttributes=name | nature | importance | highway | urbain | access_pieton | cpx_numero |"
        " largeur_de_chaussee | position_par_rapport_au_sol | restriction_de_hauteur | sens_de_circulation`",
        400,
        'JSON; body contains "Parameter \'waysAttributes\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec plusieurs waysAttributes",
        "POST",
        "route",
        "defaults `route-osrm`; `waysAttributes`=[`name`, `nature`, `importance`, `highway`, `urbain`, `access_pieton`, "
        "`cpx_numero`, `largeur_de_chaussee`, `position_par_rapport_au_sol`, `restriction_de_hauteur`, `sens_de_circulation`]",
        400,
        'JSON; body contains "Parameter \'waysAttributes\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec deux contraintes sur une ressource OSRM",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`',
        200,
        "JSON; valid road; has `constraints.[1].key`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec deux contraintes dont une invalide sur une ressource OSRM",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"test"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec trois contraintes sur une ressource OSRM",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`',
        200,
        "JSON; valid road; has `constraints.[1].key`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec trois contraintes dont une invalide sur une ressource OSRM",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"test"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[GET] Route sur l'API simple 1.0.0 avec trois contraintes dont deux invalides sur une ressource OSRM",
        "GET",
        "route",
        'defaults `route-osrm`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"test1"}|'
        '{"constraintType":"test2","key":"wayType","operator":"=","value":"tunnel"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec deux contraintes sur une ressource OSRM",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`]',
        200,
        "JSON; valid road; has `constraints.[1].key`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec deux contraintes dont une ivalide sur une ressource OSRM",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"test"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec trois contraintes sur une ressource OSRM",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`]',
        200,
        "JSON; valid road; has `constraints.[2].key`",
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec trois contraintes dont une invalide sur une ressource OSRM",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"test"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "[POST] Route sur l'API simple 1.0.0 avec trois contraintes dont deux invalides sur une ressource OSRM",
        "POST",
        "route",
        'defaults `route-osrm`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"test1"}`, '
        '`{"constraintType":"test2","key":"wayType","operator":"=","value":"tunnel"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Nearest sur l'API simple 1.0.0",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`",
        200,
        "JSON; valid nearest",
    ),
    (
        "req-simple-1.0.0-osrm",
        "Nearest sur l'API simple 1.0.0 sans ressource",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`; without `resource`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'resource\' not found"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Nearest sur l'API simple 1.0.0 avec mauvaise ressource",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`; `resource=corse-osm-2`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'resource\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 sans coordinates",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`; without `coordinates`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'coordinates\' not found"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais coordinates",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`; `coordinates=-9,-410`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'coordinates\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais coordinates (string)",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`; `coordinates=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'coordinates\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais nbPoints",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`; `nbPoints=50000`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'nbPoints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Route sur l'API simple 1.0.0 avec mauvais nbPoints (string)",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`; `nbPoints=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'nbPoints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Nearest sur l'API simple 1.0.0 avec un autre crs",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`; `crs=EPSG:2154`; `coordinates=1055474.1,6302218.2`",
        200,
        'JSON; valid nearest; `crs` ⊇ "EPSG:2154"',
    ),
    (
        "req-simple-1.0.0-osrm",
        "Nearest sur l'API simple 1.0.0 avec mauvais crs",
        "GET+POST",
        "nearest",
        "defaults `nearest-osrm`; `crs=EPSG:4325`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'crs\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Route sur l'API simple 1.0.0",
        "GET+POST",
        "route",
        "defaults `route-pgr`",
        200,
        "JSON; valid road",
    ),
    (
        "req-simple-1.0.0-pgr",
        "Route sur l'API simple 1.0.0 avec un autre crs",
        "GET+POST",
        "route",
        "defaults `route-pgr`; `crs=EPSG:2154`; `start=1055474.1,6302218.2`; `end=1055473.9,6302222.6`",
        200,
        'JSON; valid road; `crs` ⊇ "EPSG:2154"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Route sur l'API simple 1.0.0 avec mauvais crs",
        "GET+POST",
        "route",
        "defaults `route-pgr`; `crs=EPSG:4325`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'crs\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Route sur l'API simple 1.0.0 avec geometryFormat=wkt",
        "GET+POST",
        "route",
        "defaults `route-pgr`; `geometryFormat=wkt`",
        200,
        "JSON; valid road; `geometry` is a string",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec deux contraintes sur une ressource pgr",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`',
        200,
        "JSON; valid road; has `constraints.[1].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec deux contraintes dont une invalide sur une ressource pgr",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"test"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec trois contraintes sur une ressource pgr",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`',
        200,
        "JSON; valid road; has `constraints.[1].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec trois contraintes dont une invalide sur une ressource pgr",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"test"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec trois contraintes dont deux invalides sur une ressource pgr",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"test1"}|'
        '{"constraintType":"test2","key":"wayType","operator":"=","value":"tunnel"}|'
        '{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec deux contraintes sur une ressource pgr",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`]',
        200,
        "JSON; valid road; has `constraints.[1].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec deux contraintes dont une ivalide sur une ressource pgr",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"test"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec trois contraintes sur une ressource pgr",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`]',
        200,
        "JSON; valid road; has `constraints.[2].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec trois contraintes dont une invalide sur une ressource pgr",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"test"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"tunnel"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec trois contraintes dont deux invalides sur une ressource pgr",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"test1"}`, '
        '`{"constraintType":"test2","key":"wayType","operator":"=","value":"tunnel"}`, '
        '`{"constraintType":"banned","key":"wayType","operator":"=","value":"pont"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"banned","key":"vitesse","operator":">=","value":70}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"banned","key":"vitesse","operator":">=","value":"4"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"banned","key":"vitesse","operator":">=","value":70}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"banned","key":"vitesse","operator":">=","value":"4"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (prefer)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"prefer","key":"wayType","operator":"=","value":"autoroute"}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr (prefer)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"prefer","key":"wayType","operator":"=","value":"test"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (prefer)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"prefer","key":"wayType","operator":"=","value":"autoroute"}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr (prefer)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"prefer","key":"wayType","operator":"=","value":"test"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (avoid)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"avoid","key":"wayType","operator":"=","value":"autoroute"}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr (avoid)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"avoid","key":"wayType","operator":"=","value":"test"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (avoid)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"avoid","key":"wayType","operator":"=","value":"autoroute"}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr (avoid)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"avoid","key":"wayType","operator":"=","value":"test"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (banned & numerical-pgr)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"banned","key":"vitesse","operator":"<=","value":10}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (banned & numerical-pgr)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"banned","key":"vitesse","operator":"<=","value":10}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (banned & numerical-pgr #2)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"banned","key":"vitesse","operator":"=","value":130}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (banned & numerical-pgr #2)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"banned","key":"vitesse","operator":"=","value":130}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (prefer & numerical-pgr)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"prefer","key":"vitesse","operator":">=","value":50}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (prefer & numerical-pgr)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"prefer","key":"vitesse","operator":">=","value":50}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (prefer & numerical-pgr #2)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"prefer","key":"vitesse","operator":">","value":50}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (prefer & numerical-pgr #2)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"prefer","key":"vitesse","operator":">","value":50}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (prefer & numerical-pgr #3)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"prefer","key":"vitesse","operator":"!=","value":30}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (prefer & numerical-pgr #3)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"prefer","key":"vitesse","operator":"!=","value":30}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (avoid & numerical-pgr)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"avoid","key":"vitesse","operator":"<","value":20}`',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une contrainte spécifique pgr (avoid & numerical-pgr)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"avoid","key":"vitesse","operator":"<","value":20}`]',
        200,
        "JSON; valid road; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr (avoid & numerical-pgr)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"avoid","key":"vitesse","operator":"<","value":"2"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr (avoid & numerical-pgr)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"avoid","key":"vitesse","operator":"<","value":"2"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr (avoid & numerical-pgr #2)",
        "GET",
        "route",
        'defaults `route-pgr`; `constraints={"constraintType":"avoid","key":"vitesse","operator":"<","value":"test"}`',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec une mauvaise contrainte spécifique pgr (avoid & numerical-pgr #2)",
        "POST",
        "route",
        'defaults `route-pgr`; `constraints`=[`{"constraintType":"avoid","key":"vitesse","operator":"<","value":"test"}`]',
        400,
        'JSON; body contains "Parameter \'constraints\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec les waysAttributes par défaut",
        "GET",
        "route",
        "defaults `route-pgr`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec les waysAttributes par défaut",
        "POST",
        "route",
        "defaults `route-pgr`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.name`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec mauvais waysAttributes",
        "GET",
        "route",
        "defaults `route-pgr`; `waysAttributes=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'waysAttributes\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec mauvais waysAttributes",
        "POST",
        "route",
        "defaults `route-pgr`; `waysAttributes`=[`test`]",
        400,
        'JSON; `error.message` ⊇ "Parameter \'waysAttributes\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec un bon waysAttributes",
        "GET",
        "route",
        "defaults `route-pgr`; `waysAttributes=highway`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.highway`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec un bon waysAttributes",
        "POST",
        "route",
        "defaults `route-pgr`; `waysAttributes`=[`highway`]",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.highway`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec un bon waysAttributes doublé",
        "GET",
        "route",
        "defaults `route-pgr`; `waysAttributes=highway | highway`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.highway`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec un bon waysAttributes doublé",
        "POST",
        "route",
        "defaults `route-pgr`; `waysAttributes`=[`highway`, `highway`]",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.highway`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Route sur l'API simple 1.0.0 avec un bon waysAttributes et un faux",
        "GET",
        "route",
        "defaults `route-pgr`; `waysAttributes=highway | test`",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.highway`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Route sur l'API simple 1.0.0 avec un bon waysAttributes et un faux",
        "POST",
        "route",
        "defaults `route-pgr`; `waysAttributes`=[`highway`, `test`]",
        200,
        "JSON; valid road; has `portions.[0].steps.[0].attributes.highway`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`",
        200,
        "JSON; valid iso",
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 sans ressource",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; without `resource`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'resource\' not found"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec une mauvaise ressource",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `resource=monaco-pgrouting-2`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'resource\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 sans point",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; without `point`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'point\' not found"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais point",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `point=-9,-410`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'point\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 sans costValue",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; without `costValue`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'costValue\' not found"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais costValue (1)",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `costValue=-9,-410`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'costValue\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais costValue (2)",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `costValue=Infinity`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'costValue\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais costValue (3)",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `costValue=NaN`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'costValue\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais costValue (4)",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `costValue=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'costValue\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un costValue trop petit",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `costValue=0.5`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'costValue\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un costValue trop grand",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `costValue=30000`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'costValue\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 sans costType",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; without `costType`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'costType\' not found"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais costType",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `costType=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'costType\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais profile",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `profile=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'profile\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais direction",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `direction=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'direction\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais geometryFormat",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `geometryFormat=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'geometryFormat\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un geometryFormat polyline",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `geometryFormat=polyline`",
        200,
        "JSON",
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec geometryFormat=wkt",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `geometryFormat=wkt`",
        200,
        "JSON; valid iso; `geometry` is a string",
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais distanceUnit",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `distanceUnit=test`; `costType=distance`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'distanceUnit\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais timeUnit",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `timeUnit=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'timeUnit\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un mauvais crs",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `crs=test`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'crs\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec un autre crs",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `crs=EPSG:2154`; `point=1055474.1,6302218.2`",
        200,
        'JSON; valid iso; `crs` ⊇ "EPSG:2154"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "Isochrone sur l'API simple 1.0.0 avec mauvais crs",
        "GET+POST",
        "isochrone",
        "defaults `isochrone`; `crs=EPSG:4325`",
        400,
        'JSON; `error.message` ⊇ "Parameter \'crs\' is invalid"',
    ),
    (
        "req-simple-1.0.0-pgr",
        "[GET] Isochrone sur l'API simple 1.0.0 avec une contrainte sur une ressource pgr",
        "GET",
        "isochrone",
        'defaults `isochrone`; `constraints={"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`',
        200,
        "JSON; valid iso; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-pgr",
        "[POST] Isochrone sur l'API simple 1.0.0 avec une contrainte sur une ressource pgr",
        "POST",
        "isochrone",
        'defaults `isochrone`; `constraints`=[`{"constraintType":"banned","key":"wayType","operator":"=","value":"autoroute"}`]',
        200,
        "JSON; valid iso; has `constraints.[0].key`",
    ),
    (
        "req-simple-1.0.0-valhalla",
        "Isochrone sur l'API simple 1.0.0 sur une ressource valhalla",
        "GET+POST",
        "isochrone",
        "defaults `isochrone-valhalla`",
        200,
        "JSON; valid iso",
    ),
    (
        "req-simple-1.0.0-valhalla",
        "Isochrone distance sur l'API simple 1.0.0 sur une ressource valhalla",
        "GET+POST",
        "isochrone",
        "defaults `isochrone-valhalla`; `costType=distance`; `costValue=2000`",
        200,
        "JSON; valid iso",
    ),
    (
        "req-simple-1.0.0-valhalla",
        "Isochrone sur l'API simple 1.0.0 avec un autre crs",
        "GET+POST",
        "isochrone",
        "defaults `isochrone-valhalla`; `crs=EPSG:2154`; `point=1055474.1,6302218.2`",
        200,
        'JSON; valid iso; `crs` ⊇ "EPSG:2154"',
    ),
    (
        "req-simple-1.0.0-valhalla",
        "Isochrone sur l'API simple 1.0.0 avec geometryFormat=wkt",
        "GET+POST",
        "isochrone",
        "defaults `isochrone-valhalla`; `geometryFormat=wkt`",
        200,
        "JSON; valid iso; `geometry` is a string",
    ),
    (
        "req-simple-1.0.0-valhalla",
        "Route sur l'API simple 1.0.0 avec valhalla",
        "GET+POST",
        "route",
        "defaults `route-valhalla`",
        200,
        "JSON; valid road",
    ),
    (
        "req-simple-1.0.0-valhalla",
        "Route sur l'API simple 1.0.0 avec geometryFormat=wkt",
        "GET+POST",
        "route",
        "defaults `route-valhalla`; `geometryFormat=wkt`",
        200,
        "JSON; valid road; `geometry` is a string",
    ),
]]
# fmt: on

STALE = "the reference marks this expectation stale for Road2 3.x"
#: Scenarios not run, by (feature, name, method, status): why.
NOT_RUN: dict[tuple[str, str, str, int], str] = {
    ("req-simple-1.0.0-common", "GetCapabilities sur l'API simple 1.0.0 sans changer le host", "GET", 200): STALE,
    ("req-simple-1.0.0-common", "GetCapabilities sur l'API simple 1.0.0 en changeant le host", "GET", 200): STALE,
    **{
        (feature, f"[{method}] Route sur l'API simple 1.0.0 avec un bon waysAttributes et un faux", method, 200): STALE
        + ": an unknown waysAttributes value is refused (400)"
        for feature in ("req-simple-1.0.0-osrm", "req-simple-1.0.0-pgr")
        for method in ("GET", "POST")
    },
    **{
        ("req-simple-1.0.0-osrm", f"[{method}] Route sur l'API simple 1.0.0 avec plusieurs waysAttributes", method, 200): STALE
        + ": an OSRM resource offers only `name`"
        for method in ("GET", "POST")
    },
    ("req-osrm-1.0.0-common", "GetCapabilities de l'API osrm/1.0.0", "GET", 501): "roadkit lists the native API's resources"
    " here (profiles, aliases, services) where Road2 answered 501 Not Implemented",
    ("req-osrm-1.0.0-common", "[route] Route sur l'API osrm 1.0.0 avec mauvaises coordonnées", "GET", 400): "malformed"
    " coordinates get osrm-routed's own answer (400 InvalidQuery), as the native API's differential tests require",
    **{
        ("req-simple-1.0.0-pgr", "Isochrone sur l'API simple 1.0.0 sans costType", method, 400): "the demo's resources give"
        " costType a default (time): an empty costType takes it, where Road2's resource had none"
        for method in ("GET", "POST")
    },
}

METHOD_NOT_ALLOWED = "roadkit answers a wrong method with HTTP's 405 and Allow, where Road2 answered 404"
#: Scenarios run with roadkit's expectation where roadkit differs from Road2 on purpose: (status, checks, why).
ADAPTED: dict[tuple[str, str, str], tuple[int, str, str]] = {
    **{
        ("req-admin-1.0.0", f"[admin/1.0.0] {name} en POST ne marche pas", "POST"): (
            405,
            'JSON; body contains "Method Not Allowed"; header `Allow` ⊇ "GET"',
            METHOD_NOT_ALLOWED,
        )
        for name in ("Version de Road2", "État de Road2", "Configuration de l'administrateur")
    },
    ("req-admin-1.0.0", "[admin/1.0.0] Configurations des services en POST ne marche pas", "POST"): (
        400,
        'JSON; body contains "configuration"',
        "POST services publishes a service in roadkit's admin API: a body that is no service is a 400 naming its keys",
    ),
    ("req-simple-1.0.0-common", "Route principale", "POST"): (
        405,
        'body contains "Method Not Allowed"; header `Allow` ⊇ "GET"',
        METHOD_NOT_ALLOWED,
    ),
}


def run_list() -> tuple[list[Any], set[tuple[str, str, str, int]]]:
    """The (scenario, method) pairs to run as pytest params, and the keys of those left out."""
    params: list[Any] = []
    left_out: set[tuple[str, str, str, int]] = set()
    seen: set[str] = set()
    for scenario in SCENARIOS:
        for method in scenario.methods.split("+"):
            key = (scenario.feature, scenario.name, method, scenario.status)
            if key in NOT_RUN:
                left_out.add(key)
                continue
            if (scenario.feature, scenario.name, method) in ADAPTED:
                status, checks, _ = ADAPTED[scenario.feature, scenario.name, method]
                scenario = scenario._replace(status=status, checks=checks)
            test_id = f"{scenario.feature}: {method} {scenario.name}"
            while test_id in seen:  # Road2 has a few scenarios of the same name
                test_id += " (bis)"
            seen.add(test_id)
            params.append(pytest.param(scenario, method, id=test_id))
    return params, left_out


def test_the_scenarios_not_run_are_exactly_those_listed_with_a_reason() -> None:
    _, left_out = run_list()
    assert left_out == set(NOT_RUN)
    assert all(reason for reason in NOT_RUN.values())
    runs = {(s.feature, s.name, method) for s in SCENARIOS for method in s.methods.split("+")}
    assert set(ADAPTED) <= runs, set(ADAPTED) - runs


# -- requests ---------------------------------------------------------------------------------

PARAM = re.compile(
    r"defaults `(?P<defaults>[^`]+)`|without `(?P<without>[^`]+)`|`(?P<key>\w+)`=\[(?P<table>.*)\]|"
    r"extra raw `(?P<raw>[^`]+)` appended to URL|`(?P<name>\w+)=(?P<value>.*)`|(?P<host>request sent to host .*)"
)


def parameters(text: str) -> tuple[dict[str, Any], str]:
    """Road2's parameter notation read: the values (str, or list for tables) and raw text to append to GET URLs."""
    values: dict[str, Any] = {}
    raw = ""
    for part in filter(None, text.split("; ")):
        match = PARAM.fullmatch(part)
        assert match, part
        if match["defaults"]:
            values.update(DEFAULTS[match["defaults"]])
        elif match["without"]:
            values[match["without"]] = ""
        elif match["key"]:
            values[match["key"]] = re.findall(r"`([^`]*)`", match["table"])
        elif match["raw"]:
            raw += match["raw"]
        elif match["name"]:
            values[match["name"]] = match["value"]
    return values, raw


def post_value(key: str, value: Any) -> Any:
    """POST sends strings, tables as arrays; constraints as the JSON objects they spell."""
    if key == "constraints" and isinstance(value, list):
        return [json.loads(item) for item in value]
    return value


def send(demo: Demo, scenario: Scenario, method: str) -> httpx.Response:
    values, raw = parameters(scenario.params)
    path = scenario.path
    for name in re.findall(r"<(\w+)>", path):  # path parameters: <resource>, <service>...
        path = path.replace(f"<{name}>", str(values.pop(name)))
    if scenario.feature.startswith("req-admin"):
        base = demo.admin.removesuffix("/admin/1.0.0") if path.startswith("/") else demo.admin + "/"
    elif path.startswith("/"):
        base = demo.service
    elif scenario.feature.startswith("req-osrm"):
        base = demo.service + "/osrm/1.0.0/"
    else:
        base = demo.service + "/simple/1.0.0/"
    url = base + path
    with httpx.Client(timeout=30, follow_redirects=True) as client:
        if method == "GET":
            query = "&".join(f"{k}={'|'.join(v) if isinstance(v, list) else v}" for k, v in values.items()) + raw
            return client.get(f"{url}?{query}" if query else url)
        return client.post(url, json={k: post_value(k, v) for k, v in values.items()})


# -- checks -----------------------------------------------------------------------------------

VALID = {
    "road": [
        "resource",
        "profile",
        "optimization",
        "distanceUnit",
        "timeUnit",
        "crs",
        "geometry",
        "bbox",
        "distance",
        "duration",
        "portions.[0].start",
        "portions.[0].end",
        "portions.[0].distance",
        "portions.[0].duration",
        "portions.[0].steps.[0].geometry",
        "portions.[0].steps.[0].attributes",
        "portions.[0].steps.[0].distance",
        "portions.[0].steps.[0].duration",
    ],
    "iso": ["point", "resource", "resourceVersion", "profile", "costType", "costValue", "crs", "geometry", "direction"],
    "nearest": ["resource", "resourceVersion", "coordinates", "points", "points.[0].id", "points.[0].geometry", "points.[0].distance"],
}
MISSING = object()


def at(body: Any, path: str) -> Any:
    """The value at Road2's path (``routes.[0].legs``), or MISSING."""
    for part in path.split("."):
        index = re.fullmatch(r"\[(\d+)\]", part)
        if index and isinstance(body, list) and int(index[1]) < len(body):
            body = body[int(index[1])]
        elif not index and isinstance(body, dict) and part in body:
            body = body[part]
        else:
            return MISSING
    return body


@cache
def to_meters() -> Transformer:
    """Longitude/latitude to UTM 32N (Monaco's zone): buffers in meters as Road2's."""
    return Transformer.from_crs("EPSG:4326", "EPSG:32632", always_xy=True)


def metric(geometry: BaseGeometry) -> BaseGeometry:
    def project(xy: Any) -> Any:
        return numpy.column_stack(to_meters().transform(xy[:, 0], xy[:, 1]))

    return shapely.transform(geometry, project)


def geometry_of(body: dict[str, Any]) -> BaseGeometry:
    geometry = body["geometry"]
    if isinstance(geometry, str):  # polyline (Road2's helper decodes them)
        coordinates = decode_polyline(geometry)
        return Polygon(coordinates) if "costType" in body else LineString(coordinates)
    return shape(geometry)


def point(text: str) -> Point:
    x, y = (float(v) for v in text.split(","))
    return Point(x, y)


def similar(body: dict[str, Any], reference_name: str) -> None:
    """Road2's "similar to reference": distance within 100, ends within 10 m, geometry within a 100 m buffer."""
    path = DATA / reference_name
    if RECORD and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = {key: body[key] for key in ("start", "end", "distance", "point", "costType", "costValue", "geometry") if key in body}
        path.write_text(json.dumps(kept) + "\n")
    reference = json.loads(path.read_text())
    got, expected = metric(geometry_of(body)), metric(geometry_of(reference))
    assert expected.buffer(100).contains(got), f"the geometry leaves the 100 m buffer of {reference_name}"
    if "distance" in reference:
        assert abs(float(body["distance"]) - float(reference["distance"])) <= 100, (body["distance"], reference["distance"])
        for end in ("start", "end"):
            assert metric(point(reference[end])).buffer(10).contains(metric(point(body[end]))), (end, body[end], reference[end])


def test_similar_refuses_another_route() -> None:
    against = json.loads((DATA / "common" / "unique-inverse.json").read_text())
    with pytest.raises(AssertionError, match="buffer"):
        similar(against, "common/unique-direct.json")
    similar(against, "common/unique-inverse.json")


CHECK = re.compile(
    r"JSON|valid (?P<valid>\w+)|body contains \"(?P<text>.*)\"|has `(?P<has>[^`]+)`|no `(?P<no>[^`]+)`|"
    r"`(?P<string>[^`]+)` is a string|header `(?P<header>[^`]+)` ⊇ \"(?P<header_part>.*)\"|"
    r"`(?P<path>[^`]+)` ⊇ \"(?P<part>.*)\"|similar to `(?P<similar>[^`]+)`"
)


def check(response: httpx.Response, checks: str) -> None:
    body: Any = None
    for text in checks.split("; "):
        match = CHECK.fullmatch(text)
        assert match, text
        if body is None and match["text"] is None and match["header"] is None:
            body = response.json()
        if match["valid"]:
            missing = [path for path in VALID[match["valid"]] if at(body, path) is MISSING]
            assert not missing, f"not a complete and valid {match['valid']}: no {missing}"
        elif match["text"] is not None:
            assert match["text"] in response.text, text
        elif match["has"]:
            assert at(body, match["has"]) is not MISSING, text
        elif match["no"]:
            assert at(body, match["no"]) is MISSING, text
        elif match["string"]:
            assert isinstance(at(body, match["string"]), str), text
        elif match["header"]:
            assert match["header_part"] in response.headers.get(match["header"], ""), (text, response.headers)
        elif match["path"]:
            assert match["part"] in str(at(body, match["path"])), (text, at(body, match["path"]))
        elif match["similar"]:
            similar(body, match["similar"])


@pytest.mark.parametrize(("scenario", "method"), run_list()[0])
def test_road2_scenario(road2_demo: Demo, scenario: Scenario, method: str) -> None:
    response = send(road2_demo, scenario, method)
    assert response.status_code == scenario.status, response.text[:500]
    check(response, scenario.checks)
