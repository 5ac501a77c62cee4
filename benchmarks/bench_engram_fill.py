"""Benchmark: the fp8 Engram fill methods side by side on one table, against the memset floor.

Runs the ``engram`` scenario at full size (every method interleaved over the
same tables, in one process, first touch timed apart) and prints a Markdown
table of medians and ratios measured in that one run, then random-fast's ratio
to every other method. ``--bf16`` adds the same comparison on one bfloat16
tensor (memset, random-fast's C kernel and numpy engines, vLLM 0.33's ``uniform_``),
interleaved over rounds, ``--fp8`` the same on an fp8 tensor, and ``--alone``
random-fast's throughput per core per engine (one worker, CPU time).
Usage::

    python benchmarks/bench_engram_fill.py [--rows 2M] [--dim 256] [--repeat 3] [--backing pageable]
        [--fp8 512MiB] [--bf16 512MiB] [--alone]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from dummyprof.loaders import random_fast
from dummyprof.loaders.initializers import V033Initializer
from dummyprof.scenarios.engram.run import EngramOptions, run
from dummyprof.units import format_bytes, format_seconds, parse_bytes, parse_count

FAST = "random-fast"


def side_by_side(dtype: torch.dtype, nbytes: int, repeat: int) -> None:
    """memset, random-fast's engines and v0.33's uniform_ on one touched tensor, interleaved, medians."""
    table = torch.empty(nbytes // dtype.itemsize, dtype=dtype)
    table.view(torch.uint8).fill_(0)  # first touch, not timed
    fills: dict[str, Callable[[], object]] = {"memset": lambda: table.view(torch.uint8).fill_(0)}
    engines = random_fast.available_engines()
    for engine in engines:
        fills[f"{FAST} ({engine})"] = lambda engine=engine: random_fast.fill(table, engine=engine)
    fills["v0.33 uniform_"] = lambda: V033Initializer()(table, "weight")
    times: dict[str, list[float]] = {name: [] for name in fills}
    for _ in range(repeat):
        for name, fill in fills.items():
            started = time.perf_counter()
            fill()
            times[name].append(time.perf_counter() - started)
    median = {name: statistics.median(t) for name, t in times.items()}
    fastest = f"{FAST} ({engines[0]})"
    print(f"{dtype} table of {format_bytes(nbytes)}, {repeat} interleaved rounds:")
    print()
    print(f"| fill | median | GB/s | % of memset | {fastest} speed-up |")
    print("|---|---:|---:|---:|---:|")
    for name, seconds in median.items():
        print(
            f"| {name} | {format_seconds(seconds)} | {nbytes / seconds / 1e9:.2f} "
            f"| {100 * median['memset'] / seconds:.1f}% | {seconds / median[fastest]:.2f}x |"
        )
    random_fast.fill(table)
    values = table.float()
    ints = table.view(torch.int16 if dtype.itemsize == 2 else torch.uint8)
    print()
    print(
        f"{dtype} values of random-fast: min {values.min().item():.3g}, max {values.max().item():.3g}, "
        f"distinct {torch.unique(ints).numel()}, zeros {int((values == 0).sum().item())}"
    )


def throughput_alone(nbytes: int) -> None:
    """random-fast with one worker, in CPU seconds of that thread, per engine: the generator's rate per core."""
    table = torch.empty(nbytes, dtype=torch.float8_e4m3fn)
    table.view(torch.uint8).fill_(0)
    for engine in random_fast.available_engines():
        rates = []
        for _ in range(3):
            started = time.thread_time()
            random_fast.fill(table, workers=1, engine=engine)
            rates.append(nbytes / (time.thread_time() - started) / 1e9)
        print(
            f"one worker, fp8, {format_bytes(nbytes)}: random-fast ({engine}) {statistics.median(rates):.2f} GB/CPU-s"
        )
    memset = []
    for _ in range(3):
        torch.set_num_threads(1)
        started = time.thread_time()
        table.view(torch.uint8).fill_(0)
        memset.append(nbytes / (time.thread_time() - started) / 1e9)
    print(f"memset (1 thread) {statistics.median(memset):.2f} GB per CPU-second")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="2M")
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backing", default="pageable", help="pinned, pageable, hugepages or shm")
    parser.add_argument("--time-budget", type=float, default=600.0, help="large: measure everything in full")
    parser.add_argument("--bf16", default=None, help="size of a bfloat16 table to compare on too, e.g. 512MiB")
    parser.add_argument("--fp8", default=None, help="size of an fp8 (e4m3fn) table to compare on too, e.g. 512MiB")
    parser.add_argument("--alone", action="store_true", help="also random-fast's rate per core, one worker")
    args = parser.parse_args()
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, {threads} torch threads = random-fast workers")
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
        value = phase.time.value or 0.0
        extra = f", {value / floor.time.value:.1f}x a warm memset" if floor.time.value else ""
        print(f"{phase.name}: {format_seconds(value)} ({phase.mode}{extra})")
    print()
    print("| method | mode | median fill | GB/s | % of memset | vs random-convert | peak scratch | zeros in sample |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for m in engram.methods:
        speedup = f"{convert.time.value / m.time.value:.1f}x" if m.time.value and convert.time.value else "n/a"
        zeros = f"{m.values.weight_zero_share:.1%}" if m.values else "n/a"
        print(
            f"| {m.name} | {m.mode} | {format_seconds(m.time.value)} | {m.gb_per_s.value or 0:.2f} "
            f"| {m.percent_of_floor.value or 0:.1f}% | {speedup} | {format_bytes(m.peak_scratch_bytes)} | {zeros} |"
        )
    print()
    print(f"floor (memset) {format_seconds(floor.time.value)}; peak RSS {format_bytes(engram.run_peak_rss_bytes)}")
    fast = next((m for m in engram.methods if m.name == FAST), None)
    if fast is not None and fast.time.value:
        print()
        ratios = ", ".join(
            f"{m.name} {m.time.value / fast.time.value:.1f}x" for m in engram.methods if m.name != FAST and m.time.value
        )
        print(f"random-fast at {fast.percent_of_floor.value or 0:.1f}% of memset; its speed-up over: {ratios}")
        if fast.values is not None:
            v = fast.values
            print(
                f"random-fast values: {v.weight_distinct} distinct, {v.weight_zero_share:.1%} zeros, "
                f"min {v.weight_min}, max {v.weight_max}, scale bytes {v.scale_values}"
            )
    for flag, dtype in (("--fp8", torch.float8_e4m3fn), ("--bf16", torch.bfloat16)):
        size = getattr(args, flag[2:])
        if size is not None:
            print()
            side_by_side(dtype, parse_bytes(flag, size), args.repeat)
    if args.alone:
        print()
        throughput_alone(min(lay.table_bytes_per_rank, 256 << 20))
        torch.set_num_threads(threads)


if __name__ == "__main__":
    main()
