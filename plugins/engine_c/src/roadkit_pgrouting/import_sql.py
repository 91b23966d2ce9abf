"""The SQL that turns osm2pgrouting's tables into Road2's pgRouting schema.

``{stage}`` holds osm2pgrouting's output (``ways``, ``ways_vertices_pgr``, ``osm_ways`` with the
OSM tags, ``configuration``); ``{new}`` receives Road2's schema: ``ways`` with ``cost_s_<profile>``,
``reverse_cost_s_<profile>``, ``cost_m_<profile>``, ``reverse_cost_m_<profile>`` for ``car`` and
``pedestrian`` (negative = not traversable that way), ``the_geom`` in EPSG:4326, ``importance``,
attributes for constraints (``highway``, ``tunnel``, ``bridge``, ``toll``, ``maxspeed``), and
``ways_vertices_pgr``. Placeholders are quoted identifiers, never user text.
"""

from __future__ import annotations

CAR_CLASSES = (
    "motorway",
    "motorway_link",
    "trunk",
    "trunk_link",
    "primary",
    "primary_link",
    "secondary",
    "secondary_link",
    "tertiary",
    "tertiary_link",
    "unclassified",
    "residential",
    "living_street",
    "service",
    "road",
)
FOOT_EXCLUDED = ("motorway", "motorway_link")
WALKING_SPEED_KMH = 4.0


def _values(names: tuple[str, ...]) -> str:
    return ", ".join(f"'{n}'" for n in names)


WAYS = f"""
CREATE TABLE {{new}}.ways AS
SELECT w.gid AS id, w.osm_id, w.tag_id, w.length, w.length_m, coalesce(w.name, '') AS name,
       w.source, w.target, w.x1, w.y1, w.x2, w.y2, w.one_way, c.tag_value AS highway,
       coalesce(o.tags -> 'tunnel', 'no') NOT IN ('no', 'false', '0') AS tunnel,
       coalesce(o.tags -> 'bridge', 'no') NOT IN ('no', 'false', '0') AS bridge,
       coalesce(o.tags -> 'toll', 'no') = 'yes' AS toll,
       w.maxspeed_forward AS maxspeed,
       CASE WHEN c.tag_value IN ('motorway', 'motorway_link', 'trunk', 'trunk_link', 'primary', 'primary_link') THEN 1
            WHEN c.tag_value IN ('secondary', 'secondary_link') THEN 2
            WHEN c.tag_value IN ('tertiary', 'tertiary_link') THEN 3
            WHEN c.tag_value IN ('unclassified', 'residential') THEN 4 ELSE 5 END AS importance,
       (c.tag_value IN ({_values(CAR_CLASSES)})
         AND coalesce(o.tags -> 'access', 'yes') NOT IN ('no', 'private')
         AND coalesce(o.tags -> 'motor_vehicle', o.tags -> 'motorcar', 'yes') NOT IN ('no', 'private')) AS car,
       (c.tag_value NOT IN ({_values(FOOT_EXCLUDED)})
         AND coalesce(o.tags -> 'foot', CASE WHEN o.tags -> 'access' IN ('no', 'private') THEN 'no' ELSE 'yes' END)
             NOT IN ('no', 'private', 'use_sidepath')) AS foot,
       w.the_geom
FROM {{stage}}.ways w
JOIN {{stage}}.configuration c USING (tag_id)
LEFT JOIN {{stage}}.osm_ways o ON o.osm_id = w.osm_id
WHERE w.source IS NOT NULL AND w.target IS NOT NULL AND w.length_m > 0;

ALTER TABLE {{new}}.ways
  ADD COLUMN cost_m_car double precision, ADD COLUMN reverse_cost_m_car double precision,
  ADD COLUMN cost_s_car double precision, ADD COLUMN reverse_cost_s_car double precision,
  ADD COLUMN cost_m_pedestrian double precision, ADD COLUMN reverse_cost_m_pedestrian double precision,
  ADD COLUMN cost_s_pedestrian double precision, ADD COLUMN reverse_cost_s_pedestrian double precision;

-- one_way: 1 = along the geometry only, -1 = against it only (osm2pgrouting's reading of oneway tags
-- and roundabouts). Cars keep to it, pedestrians walk both ways at {WALKING_SPEED_KMH:g} km/h.
UPDATE {{new}}.ways SET
  cost_m_car = CASE WHEN car AND one_way <> -1 THEN length_m ELSE -1 END,
  reverse_cost_m_car = CASE WHEN car AND one_way <> 1 THEN length_m ELSE -1 END,
  cost_s_car = CASE WHEN car AND one_way <> -1 THEN length_m * 3.6 / greatest(maxspeed, 5) ELSE -1 END,
  reverse_cost_s_car = CASE WHEN car AND one_way <> 1 THEN length_m * 3.6 / greatest(maxspeed, 5) ELSE -1 END,
  cost_m_pedestrian = CASE WHEN foot THEN length_m ELSE -1 END,
  reverse_cost_m_pedestrian = CASE WHEN foot THEN length_m ELSE -1 END,
  cost_s_pedestrian = CASE WHEN foot THEN length_m * 3.6 / {WALKING_SPEED_KMH} ELSE -1 END,
  reverse_cost_s_pedestrian = CASE WHEN foot THEN length_m * 3.6 / {WALKING_SPEED_KMH} ELSE -1 END;

ALTER TABLE {{new}}.ways ADD PRIMARY KEY (id);

CREATE TABLE {{new}}.ways_vertices_pgr AS
SELECT v.id, v.osm_id, v.cnt, v.chk, v.ein, v.eout, v.the_geom FROM {{stage}}.ways_vertices_pgr v
-- A semi-join on the ways' ends (hashed): an EXISTS with "source = id OR target = id" scans the ways
-- once per vertex, hours for a million edges.
WHERE v.id IN (SELECT source FROM {{new}}.ways UNION ALL SELECT target FROM {{new}}.ways);
ALTER TABLE {{new}}.ways_vertices_pgr ADD PRIMARY KEY (id);
"""

# Components of a profile's graph with fewer than {min} vertices are disabled for that profile: a
# point snapped onto an island (a private car park, a footway on a roof) would find no path.
COMPONENTS = """
WITH comp AS (
  SELECT component, node FROM pgr_strongComponents(
    'SELECT id, source, target, cost_s_{profile} AS cost, reverse_cost_s_{profile} AS reverse_cost
     FROM {new}.ways WHERE cost_s_{profile} > 0 OR reverse_cost_s_{profile} > 0')
), small AS (
  SELECT node FROM comp WHERE component IN (SELECT component FROM comp GROUP BY component HAVING count(*) < {min})
)
UPDATE {new}.ways SET cost_s_{profile} = -1, reverse_cost_s_{profile} = -1, cost_m_{profile} = -1,
                      reverse_cost_m_{profile} = -1
WHERE source IN (SELECT node FROM small) OR target IN (SELECT node FROM small)
"""

RESTRICTIONS_TABLE = """
CREATE TABLE {stage}.restriction_prefixes (
  relation bigint, kind text, via text, prefix bigint[], vertex bigint, to_edges bigint[]
);
"""

# turn_restrictions: the edge paths pgRouting's TRSP must not take (``path``), with Road2's ``id_from``
# and ``id_to`` (first and last edge), the OSM relation, its kind and whether its via is a node or a way.
# A prefix (from edge + via edges, ending at ``vertex``, see roadkit_pgrouting.restrictions) gives:
# ``no_*``: prefix + each to edge; ``only_*``: prefix + every other car edge at ``vertex``, U-turn included.
RESTRICTIONS = """
CREATE TABLE {new}.turn_restrictions AS
WITH ends AS (  -- every (vertex, car edge) pair: an equi-join (hashed) where "vertex IN (source, target)" would scan
  SELECT source AS vertex, id FROM {new}.ways WHERE car UNION ALL SELECT target, id FROM {new}.ways WHERE car
), paths AS (
  SELECT p.relation, p.kind, p.via, p.prefix || t.id AS path
  FROM {stage}.restriction_prefixes p CROSS JOIN LATERAL unnest(p.to_edges) AS t(id)
  WHERE starts_with(p.kind, 'no_')
  UNION
  SELECT p.relation, p.kind, p.via, p.prefix || e.id
  FROM {stage}.restriction_prefixes p JOIN ends e ON e.vertex = p.vertex
  WHERE starts_with(p.kind, 'only_') AND e.id <> ALL (p.to_edges)
)
SELECT (row_number() OVER (ORDER BY relation, path))::bigint AS id, path[1] AS id_from, path[cardinality(path)] AS id_to,
       path, relation AS osm_id, kind, via
FROM paths;
"""

# The ways stored by importance, then by place (geohash): a long route's main network (a few importances
# in a wide box) is then read from few pages, not from every page of the box (1 M edges: 191 -> 101 ms).
INDEXES = """
CREATE INDEX ON {new}.ways USING gist (the_geom);
CREATE INDEX ON {new}.ways (source);
CREATE INDEX ON {new}.ways (target);
CREATE INDEX ON {new}.ways (importance);
CREATE INDEX ON {new}.ways_vertices_pgr USING gist (the_geom);
CREATE INDEX ways_order_idx ON {new}.ways (importance, ST_GeoHash(ST_StartPoint(the_geom), 12));
CLUSTER {new}.ways USING ways_order_idx;
DROP INDEX {new}.ways_order_idx;
"""
