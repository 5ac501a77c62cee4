"""The same projections three times, the middle run with two busy processes alongside (issue #25).

Runs, per round: DeepSeek-V3 tp 8 as a GPU deployment (``--device-memory 141GiB``: the device-resident
bytes are not timed without CUDA, the host-resident ones are), the same layout as a CPU deployment
(``--device cpu``: every byte host-resident, projected from calibration here), and
``engram --rows 2e9 --offload``. Prints a Markdown table: each projection with its interval, the
contention measured during it, and whether every pair of intervals overlaps or the odd run is flagged.

    python benchmarks/reproducibility.py [--rounds 3] [--busy-round 2]
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DSV3 = ["--model", "hf:tests/data/DeepSeek-V3.json", "--tp", "8"]
COMMANDS = {
    "dsv3-gpu": ["compare", *DSV3, "--device-memory", "141GiB"],
    "dsv3-cpu": ["compare", *DSV3, "--device", "cpu"],
    "engram": ["engram", "--rows", "2e9", "--offload"],
}


def _run(args: list[str], out: Path) -> tuple[dict, float]:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dummyprof", *args, "--json", str(out), "-q"], check=True)
    return json.loads(out.read_text()), time.perf_counter() - t0


def _busy(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(n)]


def _contention(c: dict | None) -> str:
    if not c:
        return "n/a"
    flag = f"**contended** ({', '.join(c['reasons'])})" if c["reasons"] else "quiet"
    return f"PSI {c['pressure']:.0%}, own CPU {c['process_cpu_share']:.2f}: {flag}"


def _figures(name: str, doc: dict) -> tuple[str, tuple[float, float] | None, dict | None]:
    if name == "engram":
        section = doc["engram"]
        m = next(m for m in section["methods"] if m["name"] == "constant")
        iv = m["startup"]
        text = f"constant start-up ~{iv['value']:.0f} s [{iv['low']:.0f}–{iv['high']:.0f}]"
        return text, (iv["low"], iv["high"]), m["time"]["contention"]
    d = doc["deployment"]
    r0 = d["ranks"][0]
    s = next(s for s in r0["strategies"] if s["strategy"] == "per-layer")
    device = r0["held_bytes"] - r0["offloaded_bytes"]
    if d["not_timed"]:
        return (f"rank 0: {device / 2**30:.2f} GiB device-resident, {s['visits']} visits: not timed "
                f"({d['not_timed']}); {r0['offloaded_bytes']} B host-resident"), None, None  # fmt: skip
    t = s["time"]
    text = f"per-layer ~{t['value']:.0f} s [{t['low']:.0f}–{t['high']:.0f}] on {d['device']}"
    return text, (t["low"], t["high"]), d.get("contention")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy-round", type=int, default=2, help="the round run with two busy processes (1-based)")
    parser.add_argument("--keep", type=Path, help="a folder to keep each run's results file in")
    args = parser.parse_args()
    rows: dict[str, list[tuple[str, tuple[float, float] | None, dict | None, float, bool]]] = {k: [] for k in COMMANDS}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)  # --keep names a folder it may create
        for round_ in range(1, args.rounds + 1):
            busy = _busy(2) if round_ == args.busy_round else []
            try:
                for name, command in COMMANDS.items():
                    doc, wall = _run(command, Path(tmp) / f"{name}-{round_}.json")
                    rows[name].append((*_figures(name, doc), wall, bool(busy)))
            finally:
                for p in busy:
                    p.kill()
                    p.wait()
    for name, runs in rows.items():
        print(f"\n`dummyprof {' '.join(COMMANDS[name])}`\n")
        print("| run | busy loops | figure | contention measured | wall |")
        print("|---|---|---|---|---:|")
        for i, (text, _, busy_c, wall, busy) in enumerate(runs, 1):
            print(f"| {i} | {'2' if busy else '0'} | {text} | {_contention(busy_c)} | {wall:.1f} s |")
        intervals = [(i, iv, c) for i, (_, iv, c, _, _) in enumerate(runs, 1) if iv is not None]
        for (i, a, ca), (j, b, cb) in itertools.combinations(intervals, 2):
            overlap = a[0] <= b[1] and b[0] <= a[1]
            flagged = [k for k, c in ((i, ca), (j, cb)) if c and c["reasons"]]
            verdict = "overlap" if overlap else f"apart; flagged contended: {flagged or 'none'}"
            print(f"\nruns {i} and {j}: {verdict}", end="")
        print()


if __name__ == "__main__":
    main()
