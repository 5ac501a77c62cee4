"""Benchmark: what the write tracer costs, and why loader times come from untraced runs.

For each preset, fills a fresh model with the ``unique`` strategy untraced,
traced, and traced with the before/after hash that catches writes outside the
dispatcher, interleaved round by round, first round discarded, and prints
medians and ratios as a Markdown table. Usage::

    python benchmarks/bench_tracing_overhead.py [--repeat 5] [--layers 8] [--hidden 1024]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from dummyprof.loaders.strategies import get_strategy, run_strategy
from dummyprof.measure.write_tracer import trace_writes
from dummyprof.models.presets import preset_source
from dummyprof.units import format_bytes, format_seconds

CPU = torch.device("cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=1024)
    args = parser.parse_args()
    cases = {
        "dense-decoder": {"layers": args.layers, "hidden": args.hidden, "intermediate": 11 * args.hidden // 4},
        "moe-decoder": {"layers": args.layers // 2, "hidden": args.hidden // 2, "experts": 64},
        "torch-transformer": {"d_model": args.hidden // 2, "dim_feedforward": args.hidden},
    }
    strategy = get_strategy("unique")
    print("| preset | tensors | bytes | untraced | traced | traced + hash | traced / untraced | + hash / untraced |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, model_args in cases.items():
        source = preset_source(name, model_args)
        plain: list[float] = []
        traced: list[float] = []
        hashed: list[float] = []
        tensors = 0
        for round_index in range(args.repeat + 1):
            model = source.build(CPU)
            t0 = time.perf_counter()
            run_strategy(model, strategy)
            elapsed_plain = time.perf_counter() - t0
            model = source.build(CPU)
            t0 = time.perf_counter()
            trace = trace_writes(model, lambda m: run_strategy(m, strategy), check_untraced=False)
            elapsed_traced = time.perf_counter() - t0  # includes indexing the model after the fill
            model = source.build(CPU)
            t0 = time.perf_counter()
            trace_writes(model, lambda m: run_strategy(m, strategy))
            elapsed_hashed = time.perf_counter() - t0
            tensors = len(trace.records)
            if round_index:
                plain.append(elapsed_plain)
                traced.append(elapsed_traced)
                hashed.append(elapsed_hashed)
        p, t, h = statistics.median(plain), statistics.median(traced), statistics.median(hashed)
        print(
            f"| {name} | {tensors:,} | {format_bytes(source.estimated_bytes)} | {format_seconds(p)} "
            f"| {format_seconds(t)} | {format_seconds(h)} | {t / p:.2f}x | {h / p:.2f}x |"
        )


if __name__ == "__main__":
    main()
