"""The benchmark's statistics: paired ratios, their median's interval, and the README table's verdict."""

from __future__ import annotations

import math

import pytest

from bench import common, pool_rounds, sweep, table


def sign_test_coverage(n: int, k: int) -> float:
    return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n


@pytest.mark.parametrize(
    ("n", "rank"),
    # The order statistics of the usual 95 % sign-test tables for the median.
    [(6, 1), (7, 1), (8, 1), (9, 2), (10, 2), (12, 3), (15, 4), (20, 6)],
)
def test_the_interval_is_the_sign_tests(n: int, rank: int) -> None:
    ours = [float(100 + 11 * i % n) for i in range(n)]  # a shuffled 100..100+n-1
    ratio = common.paired_ratio(ours, [100.0] * n)
    ordered = sorted(v / 100 for v in ours)
    assert (ratio.low, ratio.high) == (ordered[rank - 1], ordered[n - rank])
    assert ratio.coverage == pytest.approx(sign_test_coverage(n, rank))
    assert ratio.coverage >= 0.95 > sign_test_coverage(n, rank + 1)
    assert ratio.median == pytest.approx(sorted(ordered)[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2)
    assert ratio.pairs == n


def test_few_rounds_give_the_whole_range_and_say_it_covers_less() -> None:
    ratio = common.paired_ratio([9.0, 11.0, 10.0, 12.0], [10.0, 10.0, 10.0, 10.0])
    assert (ratio.low, ratio.high, ratio.median) == (0.9, 1.2, pytest.approx(1.05))
    assert ratio.coverage == pytest.approx(0.875)
    assert common.paired_ratio([5.0], [4.0]).coverage == 0


def test_rounds_are_paired_in_order() -> None:
    # Round by round, roadkit is 10 % faster although its slowest round is slower than the engine's fastest.
    ratio = common.paired_ratio([110.0, 220.0, 330.0, 440.0, 550.0, 660.0], [100.0, 200.0, 300.0, 400.0, 500.0, 600.0])
    assert (ratio.low, ratio.median, ratio.high) == (pytest.approx(1.1),) * 3
    with pytest.raises(ValueError, match="6 against 5 rounds"):
        common.paired_ratio([1.0] * 6, [1.0] * 5)


@pytest.mark.parametrize(
    ("ratios", "verdict"),
    [([1.01, 1.02, 1.03, 1.04, 1.05, 1.06], "✓"), ([0.97, 0.99, 1.0, 1.01, 1.02, 1.03], "≈"), ([0.9, 0.91, 0.92, 0.95, 0.97, 0.99], "✗")],
)
def test_the_verdict_reads_the_interval(ratios: list[float], verdict: str) -> None:
    assert common.paired_ratio(ratios, [1.0] * len(ratios)).verdict(1.0) == verdict


def test_the_readme_table_pairs_roadkit_with_the_engine_rounds_beside_it() -> None:
    result = common.Result

    def runs(rates: list[float], cpu: float) -> list[tuple[object, float]]:
        return [(result("x", int(r * 2), 0, 2.0, [5.0, 6.0, 7.0]), cpu) for r in rates]

    engine_w1, roadkit_w1 = runs([300, 310, 320, 330, 340, 350], 6.0), runs([150, 155, 160, 165, 170, 175], 12.0)
    engine_auto, roadkit_auto = runs([200, 210, 220, 230, 240, 250], 6.0), runs([208, 214, 229, 235, 250, 256], 5.8)
    rows = []
    for workers, engine, ours in (("1", engine_w1, roadkit_w1), ("auto", engine_auto, roadkit_auto)):
        for who, measured, against in (("valhalla_service", engine, None), ("roadkit", ours, engine)):
            row = sweep.summary(measured, against)
            row.pop("_ratio", None)
            rows.append(
                {"date": "d", "machine": "m", "mode": "whole-machine", "scenario": "valhalla-isochrone", "server": who}
                | {"workers": workers if who == "roadkit" else "2 threads", "concurrency": 16}
                | {key: str(value) for key, value in row.items()}
            )
    text = table.table(rows, 16)
    line = next(line for line in text.splitlines() if line.startswith("| valhalla-isochrone"))
    # The engine's median round beside workers=auto (225), roadkit's (232); the ratio 1.02-1.04 in every round: ✓.
    assert line.startswith("| valhalla-isochrone | valhalla_service (2 threads) 225 | 162 | 232 | **1.03** ✓ [1.02, 1.04] (97%) | ≥ 1.0")
    assert "6.000 / 5.800 | 1.03 |" in line
    assert "6 alternated rounds" in text


def test_a_round_without_answers_has_no_ratio() -> None:
    result = common.Result
    engine = [(result("e", n, 0, 1.0, [1.0]), 1.0) for n in (100, 0, 100, 100, 100, 100, 100)]
    ours = [(result("r", n, 0, 1.0, [1.0]), 1.0) for n in (110, 110, 0, 110, 110, 110, 110)]
    row = sweep.summary(ours, engine)
    assert (row["ratio_median"], row["ratio_low"], row["ratio_high"]) == (1.1, 1.1, 1.1)
    assert row["ratio_coverage"] == pytest.approx(0.9375)  # 5 pairs left of 7 rounds: below 95 %
    nothing = sweep.summary(ours[2:3], engine[1:2])
    assert nothing["ratio_median"] == "" and "_ratio" not in nothing


def test_the_rounds_of_several_runs_are_pooled_by_server() -> None:
    run = (
        "roadkit                    203.6 req/s  p50   62.86 ms\n"
        "roadkit / valhalla_service, each round: 1.019 1.140 0.984; median 1.019\n"
        "    median and its interval: 1.019 [0.984, 1.140] (75%, 3 rounds)\n"
        "roadkit-b / valhalla_service, each round: 0.9 1.2; median 1.050\n"
        "roadkit / ceiling, median and its interval: 0.902 [0.877, 0.994] (96%, 20 rounds)\n"
    )
    other = "roadkit / valhalla_service, each round: 1.1 0.95; median 1.025\n"
    pooled = pool_rounds.pooled([run, other, "no rounds here"])
    assert pooled == {"roadkit": [1.019, 1.140, 0.984, 1.1, 0.95], "roadkit-b": [0.9, 1.2]}
    ratio = common.paired_ratio(pooled["roadkit"], [1.0] * 5)
    assert ratio.median == 1.019 and ratio.pairs == 5


def test_the_p50_overhead_is_the_median_of_the_rounds_differences() -> None:
    difference = common.paired_difference([1.3, 1.1, 1.6, 1.25, 1.4, 1.3], [1.0, 0.9, 1.0, 0.95, 1.0, 1.0])
    assert (difference.low, difference.high) == (pytest.approx(0.2), pytest.approx(0.6))
    assert difference.median == pytest.approx(0.3)
    assert difference.verdict_at_most(0.5) == "≈"
    assert difference.verdict_at_most(0.61) == "✓"
    assert difference.verdict_at_most(0.1) == "✗"
    with pytest.raises(ValueError, match="3 against 2 rounds"):
        common.paired_difference([1.0] * 3, [1.0] * 2)


def test_the_readme_table_gives_the_p50_overhead_of_the_paired_rounds() -> None:
    result = common.Result

    def runs(rate: float, p50s: list[float]) -> list[tuple[object, float]]:
        return [(result("x", int(rate), 0, 1.0, [p50]), 1.0) for p50 in p50s]

    rows = []
    one_client = ([1.0, 0.9, 1.0, 0.95, 1.0, 1.0], [1.3, 1.1, 1.6, 1.25, 1.4, 1.3])
    for concurrency, (engine_p50, ours_p50) in ((1, one_client), (16, ([9.0] * 6, [9.0] * 6))):  # the sweep's order
        engine, ours = runs(1000, engine_p50), runs(700, ours_p50)
        for who, measured, against in (("osrm-routed", engine, None), ("roadkit", ours, engine)):
            row = sweep.summary(measured, against)
            row.pop("_ratio", None)
            rows.append(
                {"date": "d", "machine": "m", "mode": "whole-machine", "scenario": "osrm-geojson-steps", "server": who}
                | {"workers": "auto" if who == "roadkit" else "2 threads", "concurrency": concurrency}
                | {key: str(value) for key, value in row.items()}
            )
    line = next(line for line in table.table(rows, 16).splitlines() if line.startswith("| osrm-geojson-steps"))
    # Median rounds 1.00 / 1.30; the rounds' differences 0.3 in the median, [0.2, 0.6]: 0.5 ms is inside.
    assert "| 1.00 / 1.30 (+0.30 ≈ [+0.20, +0.60]) |" in line
