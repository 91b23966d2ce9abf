"""roadkit against the engines' own servers, side by side, over concurrency and workers: CSV + PNG.

``./dev bench`` runs this (``./dev bench -- --quick`` for a short sweep). Each comparison sends the
same random Monaco requests to the engine's own server and to roadkit, with each server's
recommended settings on the whole machine: osrm-routed and valhalla_service with one thread per
core, roadkit in child processes with ``workers`` = 1, 2 and ``"auto"`` (the demo's settings), the
Valhalla Actors split between the workers (as many engine threads in all as valhalla_service has).
``--one-core`` pins every server to one core instead (engine threads 1, one roadkit worker) and
the load generator to the others.

Rounds alternate the engine and roadkit at each concurrency, so both see the machine's noise. Each
round gives a ratio (roadkit's req/s over the engine's in that round, and the engine's CPU time per
request over roadkit's, and roadkit's p50 minus the engine's); the CSV keeps their median and a
distribution-free 95 % interval for it (``common.paired_ratio`` and ``paired_difference``: 6
rounds or more), the median and extreme rounds of each server, and the
best round as before. On a noisy machine the best round is a lottery and one pair says little: the
interval says whether a ratio is above, below or not distinguishable from a target. Results:
``bench/results/<name>.csv`` and ``.png``; ``python -m bench.table`` writes the README's table from the CSV.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import platform
import statistics
import tempfile
from pathlib import Path

from bench.common import (
    CORES,
    RESULTS,
    Result,
    free_port,
    http_200,
    isochrone_points,
    load,
    paired_difference,
    paired_ratio,
    pin_client,
    random_pairs,
    session_cpu_seconds,
    wait_http,
)
from bench.config import roadkit_files
from bench.servers import SCENARIOS, accepted_per_worker, engine_command, roadkit_command, running

Pairs = list[tuple[tuple[float, float], tuple[float, float]]]


def machine() -> str:
    """The CPU model and core count, for the results."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {CORES} core(s) usable"


def sweep(args: argparse.Namespace) -> list[dict[str, object]]:
    """Every scenario x concurrency x workers, engine and roadkit alternated; the best round of each."""
    pinned = args.one_core
    threads = 1 if pinned else CORES
    workers_list: list[str | int] = [1] if pinned else args.workers
    pairs: Pairs = random_pairs(args.requests)
    points = isochrone_points(args.requests)
    rows: list[dict[str, object]] = []
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    where = machine()
    families = sorted({SCENARIOS[s][0] for s in args.scenarios})
    for family in families:
        scenarios = [s for s in args.scenarios if SCENARIOS[s][0] == family]
        engine_name = "osrm-routed" if family == "osrm" else "valhalla_service"
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            engine_port = free_port()
            first = scenarios[0]
            sample = points[0] if family == "valhalla" and first.endswith("isochrone") else pairs[0]
            ready = f"http://127.0.0.1:{engine_port}" + SCENARIOS[first][1](*sample)
            engine_command_line = engine_command(family, workdir, engine_port, threads)
            with running(engine_command_line, pinned=pinned, ready=ready, preload=args.engine_preload) as engine:
                for workers in workers_list:
                    port, admin = free_port(), free_port()
                    folder = workdir / f"w{workers}"
                    folder.mkdir()
                    # As many engine threads in all as the engine's server has: split between the workers.
                    count = CORES if workers == "auto" else max(1, int(workers))
                    per_worker = max(1, threads // count)
                    server = roadkit_files(
                        folder,
                        family,
                        port,
                        admin,
                        workers=workers,
                        threads=per_worker,
                        http_server=args.http_server,
                        allocator=args.allocator,
                        engine_calls=args.engine_calls,
                    )
                    command = roadkit_command(server)
                    with running(command, pinned=pinned, ready=f"http://127.0.0.1:{admin}/admin/1.0.0/health") as ours:
                        wait_http(f"http://127.0.0.1:{port}" + SCENARIOS[first][2](*sample), timeout=180)
                        # Every round of every server, in order: round i of the engine pairs with round i of roadkit.
                        runs: dict[tuple[str, str, int], list[tuple[Result, float]]] = {}
                        for _ in range(args.rounds):
                            for scenario in scenarios:
                                chosen = points if scenario.endswith("isochrone") else pairs
                                engine_urls = [f"http://127.0.0.1:{engine_port}" + SCENARIOS[scenario][1](*p) for p in chosen]
                                ours_urls = [f"http://127.0.0.1:{port}" + SCENARIOS[scenario][2](*p) for p in chosen]
                                for concurrency in args.concurrency:
                                    for who, urls, pid in ((engine_name, engine_urls, engine.pid), ("roadkit", ours_urls, ours.pid)):
                                        name = f"{scenario} {who} w={workers} c={concurrency}"
                                        load(name, urls[:50], concurrency=concurrency, duration=0.5, check=http_200, warm_up=False)
                                        accepted = accepted_per_worker(admin) if who == "roadkit" else []
                                        before = session_cpu_seconds(pid)
                                        result = load(
                                            name, urls, concurrency=concurrency, duration=args.duration, check=http_200, warm_up=False
                                        )
                                        cpu_ms = 1000 * (session_cpu_seconds(pid) - before) / max(result.requests, 1)
                                        runs.setdefault((scenario, who, concurrency), []).append((result, cpu_ms))
                                        # How the round's connections spread over the workers (one accept queue for all).
                                        after = accepted_per_worker(admin) if accepted else []
                                        spread = [b - a for a, b in zip(accepted, after, strict=False)]
                                        print(
                                            result.line(),
                                            f" cpu {cpu_ms:.3f} ms/req",
                                            f" connections per worker {'/'.join(map(str, spread))}" if spread else "",
                                            flush=True,
                                        )
                        for (scenario, who, concurrency), measured in runs.items():
                            engine_runs = runs[(scenario, engine_name, concurrency)]
                            row = summary(measured, engine_runs if who == "roadkit" else None)
                            if who == "roadkit":
                                figures = row.pop("_ratio", "none: no round answered by both")
                                print(f"{scenario} workers={workers} c={concurrency}: roadkit / {engine_name} {figures}", flush=True)
                            rows.append(
                                {
                                    "date": stamp,
                                    "machine": where,
                                    "mode": "one-core" if pinned else "whole-machine",
                                    "scenario": scenario,
                                    "server": who,
                                    "workers": workers if who == "roadkit" else f"{threads} threads",
                                    "concurrency": concurrency,
                                    **row,
                                }
                            )
    return rows


def summary(measured: list[tuple[Result, float]], engine: list[tuple[Result, float]] | None) -> dict[str, object]:
    """One CSV row's figures from a server's rounds: the best round (``rps``, its p50, p99 and CPU, as
    before), the median round, and for roadkit the paired ratios to the engine's rounds (median and
    its confidence interval, see :class:`common.Ratio`), for req/s and for CPU time per request."""
    best, best_cpu = max(measured, key=lambda run: run[0].rps)
    rates = [run[0].rps for run in measured]
    cpus = [run[1] for run in measured]
    row: dict[str, object] = {
        "rps": round(best.rps, 1),
        "p50_ms": round(best.percentile(0.5), 3),
        "p99_ms": round(best.percentile(0.99), 3),
        "cpu_ms_per_request": round(best_cpu, 4),
        "errors": sum(run[0].errors for run in measured),
        "requests": sum(run[0].requests for run in measured),
        "rounds": len(measured),
        "rps_median": round(statistics.median(rates), 1),
        "rps_min": round(min(rates), 1),
        "rps_max": round(max(rates), 1),
        "p50_ms_median": round(statistics.median(run[0].percentile(0.5) for run in measured), 3),
        "p99_ms_median": round(statistics.median(run[0].percentile(0.99) for run in measured), 3),
        "cpu_ms_median": round(statistics.median(cpus), 4),
        "ratio_median": "",
        "ratio_low": "",
        "ratio_high": "",
        "ratio_coverage": "",
        "cpu_ratio_median": "",
        "cpu_ratio_low": "",
        "cpu_ratio_high": "",
        "p50_diff_median": "",
        "p50_diff_low": "",
        "p50_diff_high": "",
    }
    # A round where either server answered nothing (a crash, a port taken) has no ratio: left out.
    kept = [(ours, theirs) for ours, theirs in zip(measured, engine or [], strict=False) if min(ours[0].rps, theirs[0].rps, ours[1]) > 0]
    if kept:
        ratio = paired_ratio([ours[0].rps for ours, _ in kept], [theirs[0].rps for _, theirs in kept])
        # CPU: the engine's CPU per request over roadkit's (above 1 when roadkit needs less), round by round.
        cpu_ratio = paired_ratio([theirs[1] for _, theirs in kept], [ours[1] for ours, _ in kept])
        # p50: roadkit's minus the engine's in the same round (the overhead a client sees), in ms.
        p50 = paired_difference([ours[0].percentile(0.5) for ours, _ in kept], [theirs[0].percentile(0.5) for _, theirs in kept])
        row.update(
            ratio_median=round(ratio.median, 4),
            ratio_low=round(ratio.low, 4),
            ratio_high=round(ratio.high, 4),
            ratio_coverage=round(ratio.coverage, 4),
            cpu_ratio_median=round(cpu_ratio.median, 4),
            cpu_ratio_low=round(cpu_ratio.low, 4),
            cpu_ratio_high=round(cpu_ratio.high, 4),
            p50_diff_median=round(p50.median, 3),
            p50_diff_low=round(p50.low, 3),
            p50_diff_high=round(p50.high, 3),
            _ratio=f"{ratio.text()}; CPU ratio {cpu_ratio.text()}; p50 difference (ms) {p50.text()}",
        )
    return row


def write_csv(rows: list[dict[str, object]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _figure(row: dict[str, object], name: str, fallback: str) -> float:
    """A row's figure, or an older CSV's (without the median columns) ``fallback`` one."""
    value = row.get(name)
    return float(str(value if value not in (None, "") else row[fallback]))


def plot(rows: list[dict[str, object]], path: Path) -> None:
    """req/s and p50/p99 against concurrency, one row of plots per scenario, engine and roadkit side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = list(dict.fromkeys(str(r["scenario"]) for r in rows))
    figure, axes = plt.subplots(len(scenarios), 2, figsize=(12, 3.2 * len(scenarios)), squeeze=False)
    for row_axes, scenario in zip(axes, scenarios, strict=True):
        mine = [r for r in rows if r["scenario"] == scenario]
        series: dict[str, list[dict[str, object]]] = {}
        for r in mine:
            label = str(r["server"]) if r["server"] != "roadkit" else f"roadkit, workers={r['workers']}"
            series.setdefault(label, []).append(r)
        seen_engine = False
        for label, points in series.items():
            points.sort(key=lambda r: int(str(r["concurrency"])))
            if not label.startswith("roadkit"):
                if seen_engine:  # one engine line (measured beside each roadkit setting: the highest median)
                    continue
                seen_engine = True
                best: dict[int, dict[str, object]] = {}
                for r in (r for r in mine if not str(r["server"]).startswith("roadkit")):
                    c = int(str(r["concurrency"]))
                    if c not in best or _figure(r, "rps_median", "rps") > _figure(best[c], "rps_median", "rps"):
                        best[c] = r
                points = [best[c] for c in sorted(best)]
            xs = [int(str(r["concurrency"])) for r in points]
            style = "-" if label.startswith("roadkit") else "--"
            # The median round, the bar from the least to the greatest round.
            rates = [_figure(r, "rps_median", "rps") for r in points]
            spread = [
                [rate - _figure(r, "rps_min", "rps") for rate, r in zip(rates, points, strict=True)],
                [_figure(r, "rps_max", "rps") - rate for rate, r in zip(rates, points, strict=True)],
            ]
            row_axes[0].errorbar(xs, rates, yerr=spread, fmt=style, marker="o", capsize=3, label=label)
            line = row_axes[1].plot(xs, [_figure(r, "p50_ms_median", "p50_ms") for r in points], style, marker="o", label=f"{label} p50")
            row_axes[1].plot(
                xs,
                [_figure(r, "p99_ms_median", "p99_ms") for r in points],
                ":",
                marker="x",
                color=line[0].get_color(),
                label=f"{label} p99",
            )
        row_axes[0].set_title(f"{scenario}: requests/s (median round, bar: least to greatest)")
        row_axes[1].set_title(f"{scenario}: latency of the median round (ms)")
        for ax in row_axes:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("concurrent clients")
            ax.grid(True, alpha=0.3)
        row_axes[1].set_yscale("log")
        row_axes[0].legend(fontsize=7)
        row_axes[1].legend(fontsize=6)
    first = rows[0]
    figure.suptitle(f"roadkit vs the engines' servers, {first['mode']}, {first['machine']}, {first['date']}", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="concurrency 1 and 16, workers auto, one 3-second round")
    parser.add_argument("--one-core", action="store_true", help="every server pinned to one core (engine threads 1, one roadkit worker)")
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--workers", nargs="+", default=["1", "2", "auto"], help='roadkit worker processes: numbers or "auto"')
    parser.add_argument("--duration", type=float, default=2.0, help="seconds per measurement")
    parser.add_argument(
        "--rounds", type=int, default=6, help="alternated rounds: paired ratios per round, their median and its 95 %% interval (6 or more)"
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument(
        "--http-server", choices=["hypercorn", "uvicorn"], default=None, help="the service's [http] server (default: the service default)"
    )
    parser.add_argument("--allocator", default=None, help="roadkit workers' allocator setting (default: the server file's, \"auto\")")
    parser.add_argument(
        "--engine-calls", default=None, choices=["threads", "inline"], help="the Valhalla source's limits.engine_calls (default: threads)"
    )
    parser.add_argument(
        "--engine-preload", default=None, metavar="LIBRARY", help="a library preloaded in the engine's server (e.g. the same allocator)"
    )
    parser.add_argument("--name", default=None, help="results file name (default: sweep-<mode>, sweep-<mode>-quick with --quick)")
    args = parser.parse_args()
    if args.quick:
        args.concurrency, args.workers, args.duration, args.rounds = [1, 16], ["auto"], 3.0, 1
    args.workers = [int(w) if w.isdigit() else w for w in args.workers]
    if args.one_core:
        pin_client()  # whole machine: the load generator shares the cores with the servers, as a user's client would
    rows = sweep(args)
    # A quick sweep never overwrites the full sweep's results (the README's table and plot come from them).
    name = args.name or f"sweep-{'one-core' if args.one_core else 'whole-machine'}{'-quick' if args.quick else ''}"
    write_csv(rows, RESULTS / f"{name}.csv")
    plot(rows, RESULTS / f"{name}.png")
    print(f"written: {RESULTS / name}.csv and .png (README table: python -m bench.table {RESULTS / name}.csv)")


if __name__ == "__main__":
    main()
