"""Pool the paired rounds of several ``bench.investigations.thread_cpu`` runs: one median and interval for them all.

    python -m bench.pool_rounds run1.txt run2.txt ...

Each run prints, per server, ``<who> / valhalla_service, each round: r1 r2 ...; median m``: the
ratios of its rounds, each round paired with valhalla_service's just before it. On a noisy machine
one run's 10-24 rounds give an interval wider than the question; the rounds of several runs of the
same settings, pooled, narrow it (the sign test's interval of :func:`common.paired_ratio` assumes
only that each round's ratio is as likely above as below the median). Pool only runs of the same
code and settings: the output names the files so that the claim can be checked.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bench.common import paired_ratio

_ROUNDS = re.compile(r"^(?P<who>\S+) / valhalla_service, each round: (?P<ratios>[0-9. ]+);", re.MULTILINE)


def pooled(texts: list[str]) -> dict[str, list[float]]:
    """The ratios of every round of each server, over all the runs' outputs, in their order."""
    rounds: dict[str, list[float]] = {}
    for text in texts:
        for match in _ROUNDS.finditer(text):
            rounds.setdefault(match["who"], []).extend(float(r) for r in match["ratios"].split())
    return rounds


def main() -> None:
    paths = [Path(arg) for arg in sys.argv[1:]]
    if not paths:
        sys.exit("usage: python -m bench.pool_rounds <output of bench.investigations.thread_cpu>...")
    for who, ratios in pooled([path.read_text() for path in paths]).items():
        ratio = paired_ratio(ratios, [1.0] * len(ratios))
        above = sum(r > 1.0 for r in ratios)
        print(f"{who} / valhalla_service, {len(paths)} runs: {ratio.text()}; {above} of {len(ratios)} rounds above 1.0")


if __name__ == "__main__":
    main()
