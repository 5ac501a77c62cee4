"""Benchmark: how the legacy traversal's cost grows with depth, next to per-layer and unique.

Runs the ``compare`` scenario at several depths (each strategy interleaved, in
one process, warm-up discarded) and prints a Markdown table of medians and
ratios measured side by side. Usage::

    python benchmarks/bench_compare.py [--depths 4,8,12,16,24] [--hidden 512] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

from dummyprof.scenarios.compare.run import CompareOptions, run
from dummyprof.units import format_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="4,8,12,16,24")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--width", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--initializer", default=None, help="force v0.33 or v0.29 for all (isolates the traversal)")
    args = parser.parse_args()
    print(
        "| depth | tensors | legacy visits | per-layer visits | legacy median | per-layer median | unique median "
        "| legacy / per-layer time | legacy / per-layer visits | recorder cost (legacy) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    started = time.perf_counter()
    for depth in (int(d) for d in args.depths.split(",")):
        results = run(
            CompareOptions(
                depth=depth,
                width=args.width,
                hidden=args.hidden,
                repeat=args.repeat,
                device="cpu",
                initializer=args.initializer,
            )
        )
        assert results.compare is not None
        c = results.compare
        legacy, per_layer, unique = (c.strategy(n) for n in ("legacy", "per-layer", "unique"))
        assert legacy.time.value and per_layer.time.value and legacy.recording_overhead_s is not None
        print(
            f"| {depth} | {c.model.tensors} | {legacy.visits:,} | {per_layer.visits:,} "
            f"| {format_seconds(legacy.time.value)} | {format_seconds(per_layer.time.value)} "
            f"| {format_seconds(unique.time.value)} "
            f"| {legacy.time.value / per_layer.time.value:.1f}x | {legacy.visits / per_layer.visits:.1f}x "
            f"| {100 * legacy.recording_overhead_s / legacy.time.value:.2f}% |"
        )
    env = results.environment
    print(
        f"\n{env.cpu_model} x{env.cpu_count}, torch {env.torch_version}, {env.torch_threads} threads, "
        f"hidden {args.hidden}, width {args.width}, initializer {args.initializer or 'per strategy'}, "
        f"{args.repeat} rounds; total {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
