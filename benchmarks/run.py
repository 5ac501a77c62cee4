"""dummyprof's own benchmarks: its targets, measured side by side in one run.

Full mode (default) measures, on this machine, and prints a Markdown table:

1. ``dummyprof --help`` wall time (subprocess, median of 5), next to ``python -c pass``;
2. ``dummyprof compare --depth 12`` end to end (subprocess: import, build, warm-up,
   5 timed rounds, recorder-cost runs, report), median of ``--e2e-runs``;
3. visit accounting: the recorder's measured cost as a share of each strategy's fill;
4. ``per-layer`` against a floor: the same initializer on the same tensors in the
   same order, no traversal, interleaved on fresh models (ratio of medians);
5. peak RSS of a ``compare --depth 12`` subprocess against the tree's bytes plus the
   peak RSS of a process that only imports torch and dummyprof (the baseline).

Quick mode (``--quick``, run by CI) checks only what no machine can change:
exact visit counts at depth 12, the deepest tensors' 13 legacy fills in a trace,
scratch bounds, the growth exponents of a depth sweep, and that ``--help``
imports no torch. It never looks at a time. Exit 1 when a check fails.

    python benchmarks/run.py            # full figures, for BENCHMARKS.md
    python benchmarks/run.py --quick    # CI
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

DUMMYPROF = [sys.executable, "-m", "dummyprof"]


def _wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _peak_rss(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process, from wait4's rusage."""
    t0 = time.perf_counter()
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {process.returncode}")
    return time.perf_counter() - t0, usage.ru_maxrss * 1024  # Linux: KiB


# --- quick mode: machine-independent checks ----------------------------------------------------------


def quick() -> int:
    import json
    import tempfile
    from pathlib import Path

    from dummyprof.scenarios.compare.run import CompareOptions, run
    from dummyprof.scenarios.sweep.run import SweepOptions
    from dummyprof.scenarios.sweep.run import run as sweep

    failures: list[str] = []

    def check(name: str, ok: bool, detail: str) -> None:
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
        if not ok:
            failures.append(name)

    started = time.perf_counter()
    probe = "import sys, dummyprof.cli.app; print('torch' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.strip()
    check("--help imports no torch", loaded == "False", f"torch in sys.modules after importing the CLI: {loaded}")

    results = run(CompareOptions(depth=12, hidden=32, repeat=1, warmup=0, device="cpu", trace=True))
    c = results.compare
    assert c is not None
    visits = {s.name: s.visits for s in c.strategies}
    check("visits at depth 12", visits == {"legacy": 814, "per-layer": 110, "unique": 109}, str(visits))
    deepest = max(c.tensors.values(), key=lambda t: t.depth)
    check("deepest tensor visits", deepest.visits == {"legacy": 13, "per-layer": 1, "unique": 1}, str(deepest.visits))
    largest = max(t.nbytes for t in c.tensors.values())
    scratch = {s.name: s.peak_scratch_bytes for s in c.strategies}
    check(
        "scratch bounds",
        scratch["per-layer"] <= largest and scratch["unique"] <= largest and scratch["legacy"] <= 3 * largest,
        f"peak scratch {scratch} vs largest tensor {largest} B (v0.29 widens fp8 to fp16: at most 3x)",
    )
    with tempfile.TemporaryDirectory() as tmp:
        from dummyprof.reports.trace_formats import chrome_trace

        path = Path(tmp) / "t.json"
        path.write_text(chrome_trace(results))
        events = json.loads(path.read_text())["traceEvents"]
    name = f"{'.'.join(['child0'] * 12)}.weight"
    fills = sum(1 for e in events if e.get("cat") == "fill" and e["name"] == name and e["tid"] == 1)
    check("trace: legacy fills of the deepest weight", fills == 13, f"{fills} fills")

    growth = sweep(
        SweepOptions(
            values=[4, 8, 12, 16],
            fit_from=8,
            compare=CompareOptions(hidden=32, repeat=1, warmup=0, device="cpu", strategies=["legacy", "per-layer"]),
        )
    ).sweep
    assert growth is not None
    legacy, per_layer = growth.fit("legacy", "visits"), growth.fit("per-layer", "visits")
    assert legacy is not None and per_layer is not None
    check("legacy visit exponent (8-16)", 1.7 < legacy.exponent < 2.0, f"{legacy.exponent:.3f}")
    check("per-layer visit exponent (8-16)", 0.9 < per_layer.exponent < 1.05, f"{per_layer.exponent:.3f}")
    print(f"quick checks: {len(failures)} failed, {time.perf_counter() - started:.0f} s")
    return 1 if failures else 0


# --- full mode: figures for BENCHMARKS.md -----------------------------------------------------------


def _floor_vs_per_layer(depth: int, hidden: int, rounds: int) -> tuple[float, float]:
    """Medians of per-layer's fill and of the floor (same initializer, same tensors, no traversal), interleaved."""
    import gc

    import torch

    from dummyprof.loaders.initializers import get_initializer
    from dummyprof.loaders.strategies import get_strategy, run_strategy
    from dummyprof.models.synthetic import TreeSpec, synthetic_source

    build = synthetic_source(TreeSpec(depth=depth, hidden=hidden)).build
    strategy = get_strategy("per-layer")
    init = get_initializer(strategy.initializer)
    device = torch.device("cpu")
    walked: list[float] = []
    floor: list[float] = []
    for _ in range(rounds + 1):  # the first round warms up
        gc.collect()
        model = build(device)
        t0 = time.perf_counter()
        run_strategy(model, strategy, initializer=init)
        walked.append(time.perf_counter() - t0)
        model = build(device)
        tensors = list(strategy.traverse(model))  # collected before the clock: the floor has no traversal
        t0 = time.perf_counter()
        with torch.no_grad():
            for local, tensor in tensors:
                init(tensor, local)
        floor.append(time.perf_counter() - t0)
        del model, tensors
    return statistics.median(walked[1:]), statistics.median(floor[1:])


def full(e2e_runs: int) -> int:
    from dummyprof.scenarios.compare.run import CompareOptions, run

    rows: list[tuple[str, str, str, str]] = []

    def row(target: str, measured: str, goal: str, met: bool | None) -> None:
        rows.append((target, measured, goal, "n/a" if met is None else ("yes" if met else "no")))

    started = time.perf_counter()
    helps = [_wall([*DUMMYPROF, "--help"]) for _ in range(5)]
    bare = [_wall([sys.executable, "-c", "pass"]) for _ in range(5)]
    help_s = statistics.median(helps)
    row(
        "`dummyprof --help`",
        f"{help_s:.2f} s median of 5 (min {min(helps):.2f}); bare `python -c pass` {statistics.median(bare):.2f} s",
        "< 0.3 s",
        help_s < 0.3,
    )

    e2e = []
    peaks = []
    for _ in range(e2e_runs):
        wall, peak = _peak_rss([*DUMMYPROF, "compare", "--depth", "12", "--device", "cpu", "--quiet"])
        e2e.append(wall)
        peaks.append(peak)
    e2e_s = statistics.median(e2e)
    row(
        "`compare --depth 12` end to end",
        f"{e2e_s:.1f} s median of {e2e_runs} ({min(e2e):.1f}–{max(e2e):.1f}); 1 warm-up + 5 timed rounds x 3 "
        "strategies, recorder-cost runs, default flags",
        "< 10 s",
        e2e_s < 10,
    )

    results = run(CompareOptions(depth=12, device="cpu"))
    c = results.compare
    assert c is not None
    shares = {s.name: 100 * (s.recording_overhead_s or 0) / s.time.value for s in c.strategies if s.time.value}
    row(
        "visit accounting",
        ", ".join(f"{n} {v:.2f}%" for n, v in shares.items()) + " of the fill (recorder cost measured in the run)",
        "< 3%",
        max(shares.values()) < 3,
    )

    walked, floor = _floor_vs_per_layer(12, 512, 9)
    row(
        "per-layer vs floor",
        f"per-layer {walked * 1e3:.1f} ms, floor {floor * 1e3:.1f} ms: {walked / floor:.3f}x "
        "(medians of 9, interleaved)",
        "<= 1.10x",
        walked / floor <= 1.10,
    )

    _, torch_peak = _peak_rss([sys.executable, "-c", "import torch, dummyprof.scenarios.compare.run"])
    peak = max(peaks)
    allowed = 1.2 * (c.model.bytes + torch_peak)
    row(
        "peak RSS of compare",
        f"{peak / 2**20:.0f} MiB; tree {c.model.bytes / 2**20:.1f} MiB + torch baseline {torch_peak / 2**20:.0f} MiB "
        f"= {(c.model.bytes + torch_peak) / 2**20:.0f} MiB; ratio {peak / (c.model.bytes + torch_peak):.2f}x",
        "<= 1.2x",
        peak <= allowed,
    )
    env = results.environment
    print("| target | measured | goal | met |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(
        f"\n{env.cpu_model} x{env.cpu_count}, torch {env.torch_version}, {env.torch_threads} threads, "
        f"load average {os.getloadavg()[0]:.1f} at the end; total {time.perf_counter() - started:.0f} s"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="machine-independent checks only (CI)")
    parser.add_argument("--e2e-runs", type=int, default=3, help="end-to-end compare runs (full mode)")
    args = parser.parse_args(argv)
    mode: Callable[[], int] = quick if args.quick else (lambda: full(args.e2e_runs))
    return mode()


if __name__ == "__main__":
    sys.exit(main())
