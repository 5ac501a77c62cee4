"""Benchmark: the fp8 Engram fill methods side by side on one table, against the memset floor.

Runs the ``engram`` scenario at full size (every method interleaved over the
same tables, in one process, first touch timed apart) and prints a Markdown
table of medians and ratios measured in that one run. Usage::

    python benchmarks/bench_engram_fill.py [--rows 2M] [--dim 256] [--repeat 3] [--backing pageable]
"""

from __future__ import annotations

import argparse
import time

from dummyprof.scenarios.engram.run import EngramOptions, run
from dummyprof.units import format_bytes, format_seconds, parse_count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="2M")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backing", default="pageable", help="pinned, pageable, hugepages or shm")
    parser.add_argument("--time-budget", type=float, default=600.0, help="large: measure everything in full")
    args = parser.parse_args()
    options = EngramOptions(
        rows=parse_count("--rows", args.rows),
        dim=args.dim,
        offload=True,
        backing=args.backing,
        repeat=args.repeat,
        time_budget_s=args.time_budget,
    )
    started = time.perf_counter()
    results = run(options)
    wall = time.perf_counter() - started
    engram = results.engram
    assert engram is not None
    floor = engram.method(engram.floor_method)
    convert = engram.method("random-convert")
    lay = engram.layout
    print(
        f"{lay.part_rows:,} rows x {lay.dim} ({format_bytes(lay.table_bytes_per_rank)}), "
        f"{engram.backing.used} memory, {engram.rounds_measured} interleaved rounds, wall {format_seconds(wall)}"
    )
    for phase in engram.phases:
        value = phase.seconds.value or 0.0
        extra = f", {value / floor.seconds.value:.1f}x a warm memset" if floor.seconds.value else ""
        print(f"{phase.name}: {format_seconds(value)} ({phase.mode}{extra})")
    print()
    print("| method | mode | median fill | GB/s | % of memset | vs random-convert | peak scratch | zeros in sample |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for m in engram.methods:
        speedup = (
            f"{convert.seconds.value / m.seconds.value:.1f}x" if m.seconds.value and convert.seconds.value else "n/a"
        )
        zeros = f"{m.values.weight_zero_share:.1%}" if m.values else "n/a"
        print(
            f"| {m.name} | {m.mode} | {format_seconds(m.seconds.value)} | {m.gb_per_s.value or 0:.2f} "
            f"| {m.percent_of_floor.value or 0:.1f}% | {speedup} | {format_bytes(m.peak_scratch_bytes)} | {zeros} |"
        )
    print()
    print(f"floor (memset) {format_seconds(floor.seconds.value)}; peak RSS {format_bytes(engram.run_peak_rss_bytes)}")


if __name__ == "__main__":
    main()
