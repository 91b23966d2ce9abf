"""The README's benchmark table, regenerated from a ``bench/sweep.py`` CSV.

    python bench/table.py bench/results/sweep-whole-machine.csv [--readme README.md] [--concurrency 16]

For each scenario: the engine server's best req/s and roadkit's with each workers setting at the
chosen concurrency, the ratio of roadkit's best to the engine's against the issue's target, and
the p50 of both at one client. The table replaces what stands between the README's markers
``<!-- bench-table:begin -->`` and ``<!-- bench-table:end -->`` (printed when there are none).
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

#: scenario -> the target ratio roadkit / engine (issue 11)
TARGETS = {
    "osrm-polyline": 0.5,
    "osrm-geojson-steps": 0.5,
    "osrm-native": 0.5,
    "valhalla-route": 1.0,
    "valhalla-isochrone": 1.0,
}
BEGIN, END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"


def table(rows: list[dict[str, str]], concurrency: int) -> str:
    first = rows[0]
    workers = list(dict.fromkeys(r["workers"] for r in rows if r["server"] == "roadkit"))
    lines = [
        f"Measured {first['date']} on {first['machine']} ({first['mode']}; `python bench/table.py` from `bench/sweep.py`'s CSV). "
        f"Requests/s at {concurrency} concurrent clients, best of the alternated rounds; p50 at 1 client; "
        "CPU time per request of each server's processes (engine CPU / roadkit CPU: the ratio of two CPU-bound servers).",
        "",
        "| scenario | engine server req/s | "
        + " | ".join(f"roadkit workers={w} req/s" for w in workers)
        + " | ratio (best) | target | p50 engine / roadkit, 1 client (ms)"
        + " | CPU per request engine / roadkit (ms) | CPU ratio |",
        "|---|---:|" + "---:|" * len(workers) + "---:|---:|---|---|---:|",
    ]
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
            p50 = f"{e:.2f} / {o:.2f} (+{o - e:.2f})"
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", type=Path)
    parser.add_argument("--readme", type=Path, default=Path(__file__).resolve().parents[1] / "README.md")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with args.csv.open() as source:
        rows = list(csv.DictReader(source))
    text = table(rows, args.concurrency)
    readme = args.readme.read_text()
    if BEGIN in readme and END in readme:
        pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
        args.readme.write_text(pattern.sub(lambda _: f"{BEGIN}\n{text}\n{END}", readme))
        print(f"{args.readme}: table replaced")
    else:
        print(text)


if __name__ == "__main__":
    main()
