"""The benchmark table of the documentation (docs/benchmarks.md), regenerated from a ``bench.sweep`` CSV.

    python -m bench.table bench/results/sweep-whole-machine.csv [--page docs/benchmarks.md] [--concurrency 16 64]

For each scenario: the engine server's req/s and roadkit's with each workers setting at the chosen
concurrency (median rounds), the median of the paired ratios with its interval against the issue's
target (``common.paired_ratio``), and the p50 of both at one client. An older CSV without paired
rounds gives the best rounds' table. With ``--page``, the table replaces what stands between that page's
markers ``<!-- bench-table:begin -->`` and ``<!-- bench-table:end -->``, and the sweep's plot is copied
beside it (docs/assets/); without, it is printed.
"""

from __future__ import annotations

import argparse
import csv
import re
import shutil
from pathlib import Path

from bench.common import Ratio

#: scenario -> the target ratio roadkit / engine (issue 11)
TARGETS = {
    "osrm-polyline": 0.5,
    "osrm-geojson-steps": 0.5,
    "osrm-native": 0.5,
    "valhalla-route": 1.0,
    "valhalla-isochrone": 1.0,
    # 100 x 100 matrices
    "osrm-matrix": 0.8,
    "valhalla-matrix": 1.0,
}
#: scenario -> the most p50 overhead at one client, in ms (issue 11: OSRM routes through the simple API)
P50_LIMITS = {"osrm-polyline": 0.5, "osrm-geojson-steps": 0.5}
BEGIN, END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"


def _paired(row: dict[str, str]) -> bool:
    return bool(row.get("ratio_median"))


def _head(first: dict[str, str], description: str, workers: list[str], ratio: str, ratio_align: str) -> list[str]:
    """A table's sentence and header: the engine, roadkit for each workers setting, the ratio, the rest."""
    return [
        f"Measured {first['date']} on {first['machine']} ({first['mode']}; `python -m bench.table` from `bench/sweep.py`'s CSV). "
        + description,
        "",
        "| scenario | engine server req/s | "
        + " | ".join(f"roadkit workers={w} req/s" for w in workers)
        + f" | {ratio} | target | p50 engine / roadkit, 1 client (ms)"
        + " | CPU per request engine / roadkit (ms) | CPU ratio |",
        "|---|---:|" + "---:|" * len(workers) + f"{ratio_align}|---:|---|---|---:|",
    ]


def table(rows: list[dict[str, str]], concurrency: int) -> str:
    first = rows[0]
    workers = list(dict.fromkeys(r["workers"] for r in rows if r["server"] == "roadkit"))
    if all(_paired(r) for r in rows if r["server"] == "roadkit"):
        return paired_table(rows, concurrency, workers)
    lines = _head(
        first,
        f"Requests/s at {concurrency} concurrent clients, best of the alternated rounds; p50 at 1 client; "
        "CPU time per request of each server's processes (engine CPU / roadkit CPU: the ratio of two CPU-bound servers).",
        workers,
        "ratio (best)",
        "---:",
    )
    for scenario in dict.fromkeys(r["scenario"] for r in rows):
        mine = [r for r in rows if r["scenario"] == scenario]
        engine = [r for r in mine if r["server"] != "roadkit"]
        at = [r for r in engine if int(r["concurrency"]) == concurrency]
        if not at:
            continue
        engine_best = max(at, key=lambda r: float(r["rps"]))
        ours = {
            w: next((r for r in mine if r["server"] == "roadkit" and r["workers"] == w and int(r["concurrency"]) == concurrency), None)
            for w in workers
        }
        best = max((float(r["rps"]) for r in ours.values() if r is not None), default=0.0)
        ratio = best / float(engine_best["rps"])
        target = TARGETS.get(scenario)
        one_engine = [r for r in engine if int(r["concurrency"]) == 1]
        one_ours = [r for r in mine if r["server"] == "roadkit" and int(r["concurrency"]) == 1]
        p50 = ""
        if one_engine and one_ours:
            e = min(float(r["p50_ms"]) for r in one_engine)
            o = min(float(r["p50_ms"]) for r in one_ours)
            p50 = f"{e:.2f} / {o:.2f} ({o - e:+.2f})"
        cells = [f"{float(r['rps']):,.0f}" if r is not None else "" for r in ours.values()]
        # CPU time per request at this concurrency (least of the runs): what a saturated machine's ratio would be.
        engine_cpu = min(float(r["cpu_ms_per_request"]) for r in at)
        ours_cpu = min((float(r["cpu_ms_per_request"]) for r in ours.values() if r is not None), default=float("nan"))
        cpu = f"{engine_cpu:.3f} / {ours_cpu:.3f}"
        verdict = "" if target is None else (" ✓" if ratio >= target else " ✗")
        lines.append(
            f"| {scenario} | {engine_best['server']} ({engine_best['workers']}) {float(engine_best['rps']):,.0f} | "
            + " | ".join(cells)
            + f" | **{ratio:.2f}**{verdict} | ≥ {target} | {p50} | {cpu} | {engine_cpu / ours_cpu:.2f} |"
        )
    return "\n".join(lines)


def paired_table(rows: list[dict[str, str]], concurrency: int, workers: list[str]) -> str:
    """The table of a CSV with paired rounds: medians, and the ratio's interval against the target."""
    first = rows[0]
    rounds = first.get("rounds", "?")
    chosen = "auto" if "auto" in workers else workers[-1]
    lines = _head(
        first,
        f"{concurrency} concurrent clients, {rounds} alternated rounds per server. Requests/s: the median round. Ratio: "
        "the median over the rounds of roadkit's req/s over the engine's in the same round, with its distribution-free "
        "interval (coverage in brackets): ✓ the whole interval at or above the target, ≈ the target inside it (not "
        "distinguishable at this noise), ✗ below. p50 at 1 client, median rounds; in brackets roadkit's minus the "
        "engine's, the median over the rounds and its interval (✓ at most 0.5 ms in the whole interval for OSRM routes). "
        "CPU ratio: the engine's CPU time per "
        "request over roadkit's, round by round (above 1 when roadkit needs less).",
        workers,
        f"ratio, workers={chosen} [interval]",
        "---",
    )
    for scenario in dict.fromkeys(r["scenario"] for r in rows):
        mine = [r for r in rows if r["scenario"] == scenario]
        ours = {
            w: next((r for r in mine if r["server"] == "roadkit" and r["workers"] == w and int(r["concurrency"]) == concurrency), None)
            for w in workers
        }
        main_row = ours.get(chosen)
        engine = [r for r in mine if r["server"] != "roadkit" and int(r["concurrency"]) == concurrency]
        if main_row is None or not engine:
            continue
        # The engine was measured beside each roadkit setting: its rounds paired with the chosen setting's.
        position = rows.index(main_row)
        engine_row = max((r for r in engine if rows.index(r) < position), key=rows.index, default=engine[0])
        ratio = Ratio(*(float(main_row[k]) for k in ("ratio_median", "ratio_low", "ratio_high", "ratio_coverage")), int(main_row["rounds"]))
        target = TARGETS.get(scenario)
        verdict = "" if target is None else f" {ratio.verdict(target)}"
        p50 = ""
        one_engine = next((r for r in mine if r["server"] != "roadkit" and int(r["concurrency"]) == 1 and rows.index(r) < position), None)
        one_ours = next((r for r in mine if r["server"] == "roadkit" and r["workers"] == chosen and int(r["concurrency"]) == 1), None)
        if one_engine and one_ours:
            e, o = float(one_engine["p50_ms_median"]), float(one_ours["p50_ms_median"])
            p50 = f"{e:.2f} / {o:.2f} ({o - e:+.2f})"
            if one_ours.get("p50_diff_median"):  # the rounds' paired differences and their interval
                figures = (float(one_ours[k]) for k in ("p50_diff_median", "p50_diff_low", "p50_diff_high"))
                diff = Ratio(*figures, float(one_ours["ratio_coverage"]), int(one_ours["rounds"]))  # the same rounds
                limit = P50_LIMITS.get(scenario)
                mark = "" if limit is None else f" {diff.verdict_at_most(limit)}"
                p50 = f"{e:.2f} / {o:.2f} ({diff.median:+.2f}{mark} [{diff.low:+.2f}, {diff.high:+.2f}])"
        cells = [f"{float(r['rps_median']):,.0f}" if r is not None else "" for r in ours.values()]
        lines.append(
            f"| {scenario} | {engine_row['server']} ({engine_row['workers']}) {float(engine_row['rps_median']):,.0f} | "
            + " | ".join(cells)
            + f" | **{ratio.median:.2f}**{verdict} [{ratio.low:.2f}, {ratio.high:.2f}] ({ratio.coverage:.0%}) | ≥ {target} | {p50}"
            + f" | {float(engine_row['cpu_ms_median']):.3f} / {float(main_row['cpu_ms_median']):.3f}"
            + f" | {float(main_row['cpu_ratio_median']):.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", type=Path)
    parser.add_argument("--page", type=Path, default=None, help="the page whose table is replaced (docs/benchmarks.md)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64], help="one table per value")
    args = parser.parse_args()
    with args.csv.open() as source:
        rows = list(csv.DictReader(source))
    text = "\n\n".join(table(rows, concurrency) for concurrency in args.concurrency)
    page = args.page.read_text() if args.page is not None else ""
    if BEGIN in page and END in page:
        pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
        args.page.write_text(pattern.sub(lambda _: f"{BEGIN}\n{text}\n{END}", page))
        plot = args.csv.with_suffix(".png")
        if plot.exists():
            shutil.copyfile(plot, args.page.parent / "assets" / plot.name)
        print(f"{args.page}: table replaced")
    else:
        print(text)


if __name__ == "__main__":
    main()
