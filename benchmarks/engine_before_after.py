"""Two checkouts of dummyprof, the same projections and the real fills they predict, run interleaved.

For each case, each checkout runs the projected command and the measured one (a real fill of the same work),
``--rounds`` times, checkout after checkout within a round, so both see the same machine. Prints, per checkout and
case, each projection (point and interval) against the median real fill (inside the interval or not, and the
point's ratio to it), and whether every pair of one checkout's projection intervals overlaps (run-to-run).

    python benchmarks/engine_before_after.py BEFORE_CHECKOUT AFTER_CHECKOUT [--rounds 3] [--case engram-fits]

Each checkout runs on this interpreter (``PYTHONPATH=CHECKOUT``): give it one with torch and the project's
dependencies installed. Figures are for a quiet machine; the script prints the load average of each round.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HF = ["--model", f"hf:{Path(__file__).resolve().parents[1] / 'tests/data/Llama-3.1-8B.json'}"]
LLAMA = ["compare", *HF, "--model-arg", "num_hidden_layers=2", "-s", "per-layer", "-s", "legacy", "--device", "cpu"]
TREE = ["compare", "--depth", "12", "-s", "per-layer", "-s", "legacy", "--device", "cpu"]
ENGRAM = ["engram", "--rows", "1e6", "--dim", "512", "--device", "cpu"]
# case: (projected command, measured command), both writing JSON
CASES = {
    "llama-2-layers": (
        [*LLAMA, "--max-memory", "64MiB"],
        [*LLAMA, "--repeat", "3", "--warmup", "0", "--time-budget", "10m"],
    ),
    "tree-depth-12": ([*TREE, "--max-memory", "16MiB"], [*TREE, "--repeat", "3", "--warmup", "0"]),
    "engram-fits": ([*ENGRAM, "--time-budget", "4s"], [*ENGRAM, "--time-budget", "600s", "--repeat", "3"]),
}


def _run(checkout: Path, args: list[str], out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    cmd = [sys.executable, "-m", "dummyprof", *args, "--json", str(out), "-q", "--force"]
    subprocess.run(cmd, check=True, env=env, cwd=checkout, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def _times(doc: dict) -> dict[str, dict]:
    """Each strategy's (compare) or method's (engram) time Estimate."""
    if doc.get("engram") is not None:
        return {m["name"]: m["time"] for m in doc["engram"]["methods"] if m["time"].get("value") is not None}
    return {s["name"]: s["time"] for s in doc["compare"]["strategies"] if s["time"].get("value") is not None}


def _overlap(intervals: list[tuple[float, float]]) -> bool:
    return all(a[0] <= b[1] and b[0] <= a[1] for a, b in itertools.combinations(intervals, 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="only this case (repeatable)")
    args = parser.parse_args()
    cases = {name: CASES[name] for name in args.case or CASES}
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    projected: dict[tuple[str, str, str], list[dict]] = {}  # (checkout, case, name) -> each round's Estimate
    real: dict[tuple[str, str, str], list[float]] = {}  # the measured medians
    with tempfile.TemporaryDirectory() as tmp:
        for round_index in range(args.rounds):
            print(f"round {round_index + 1}: load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
            for case, (proj_args, real_args) in cases.items():
                for label, checkout in checkouts.items():
                    out = Path(tmp) / f"{label}-{case}.json"
                    for name, t in _times(_run(checkout, proj_args, out)).items():
                        if t["how"] == "projected":
                            projected.setdefault((label, case, name), []).append(t)
                    for name, t in _times(_run(checkout, real_args, out)).items():
                        if t["how"] == "measured":
                            real.setdefault((label, case, name), []).append(t["value"])
    print("| checkout | case | fill | projected ~s [low–high] per round | real fill (median) | inside | point/real "
          "| intervals overlap |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for (label, case, name), runs in sorted(projected.items()):
        truth = statistics.median(real[(label, case, name)]) if (label, case, name) in real else None
        cells = ", ".join(f"{t['value']:.3g} [{t['low']:.3g}–{t['high']:.3g}]" for t in runs)
        inside = "n/a" if truth is None else f"{sum(t['low'] <= truth <= t['high'] for t in runs)}/{len(runs)}"
        ratio = "n/a" if truth is None else f"{statistics.median(t['value'] for t in runs) / truth:.2f}"
        truth_cell = "n/a" if truth is None else f"{truth:.3g}"
        overlap = "yes" if _overlap([(t["low"], t["high"]) for t in runs]) else "**no**"
        print(f"| {label} | {case} | {name} | {cells} | {truth_cell} | {inside} | {ratio} | {overlap} |")


if __name__ == "__main__":
    main()
