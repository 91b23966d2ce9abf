"""``prefer`` and ``avoid`` constraints as Valhalla ``use_*`` costing options.

Road2's loose constraints multiply the cost of the matching ways by a ratio (``costRatio``, by
default the resource's 0.8 for prefer and 1.2 for avoid). Valhalla expresses the same wish as a
``use_*`` preference between 0 (avoid) and 1 (favour), 0.5 being neutral, which its costings turn
into a factor on the matching edges. The ratio is mapped through Valhalla's own curves (auto
costing) where they are known, so a ratio means about the same on both engines:

* ``use_highways``: edges cost ``1 + 8·(1 − 2u)²`` below 0.5 and ``1 + (0.5 − u)³`` above;
* ``use_tolls``: ``1 + 4 − 8u`` below 0.5 and ``1 + 0.03·(0.5 − u)`` above;
* any other ``use_*`` option: ``u = 0.5 / ratio``.

The field of a resource value names the option: ``use_highways`` directly, or the exclusion of
the same ways (``exclude_highways``, ``exclude_tolls``, ``exclude_ferries``), so one key can offer
``banned``, ``prefer`` and ``avoid``.
"""

from __future__ import annotations

import math

#: The exclusion fields whose ways a ``use_*`` preference weighs.
PREFERENCE_OF_EXCLUSION = {"exclude_highways": "use_highways", "exclude_tolls": "use_tolls", "exclude_ferries": "use_ferry"}

_MOTOR = frozenset({"use_highways", "use_tolls", "use_ferry", "use_living_streets", "use_tracks"})
#: The ``use_*`` options each Valhalla costing reads (others are ignored by the engine, so refused here).
PREFERENCES_OF_COSTING = {
    "auto": _MOTOR,
    "bus": _MOTOR,
    "taxi": _MOTOR,
    "truck": _MOTOR,
    "motorcycle": _MOTOR | {"use_trails"},
    "motor_scooter": _MOTOR | {"use_primary", "use_hills"},
    "pedestrian": frozenset({"use_ferry", "use_living_streets", "use_tracks", "use_hills", "use_lit"}),
    "multimodal": frozenset({"use_ferry", "use_living_streets", "use_tracks", "use_hills", "use_lit"}),
    "bicycle": frozenset({"use_ferry", "use_roads", "use_hills", "use_living_streets"}),
    "bikeshare": frozenset({"use_ferry", "use_roads", "use_hills", "use_living_streets"}),
}
KNOWN_PREFERENCES = frozenset().union(*PREFERENCES_OF_COSTING.values())


def preference_option(field: str | None) -> str | None:
    """The ``use_*`` option a resource value's field stands for (None when it has none)."""
    if field is None:
        return None
    name = field.partition("=")[0].strip()
    if name in KNOWN_PREFERENCES:
        return name
    return PREFERENCE_OF_EXCLUSION.get(name)


def preference_value(option: str, ratio: float) -> float:
    """The ``use_*`` value (0..1) that weighs the matching ways by about ``ratio``."""
    if option == "use_highways":
        value = 0.5 + math.cbrt(1.0 - ratio) if ratio < 1 else (1.0 - math.sqrt((ratio - 1.0) / 8.0)) / 2.0
    elif option == "use_tolls":
        value = 0.5 + (1.0 - ratio) / 0.03 if ratio < 1 else (5.0 - ratio) / 8.0
    else:
        value = 0.5 / ratio
    return round(min(1.0, max(0.0, value)), 4)
