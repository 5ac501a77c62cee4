"""The same deadline judged several times, one run with two busy processes alongside.

Runs ``engram --rows 2e9 --offload --deadline 600`` (or the command given after ``--``) ``--rounds`` times,
round ``--busy-round`` with two ``while 1: pass`` processes beside it, and prints a Markdown table: the
recommended method's start-up with its interval, the verdict stored in the results, the contention measured
during the run and the load average before it. The quiet verdicts must agree with each other and with their
intervals; the busy run must give none.

    python benchmarks/deadline_verdicts.py [--rounds 4] [--busy-round 4] [-- engram --rows 2e9 ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from dummyprof.reports.kinds.engram import recommended
from dummyprof.results.store import load_results

DEFAULT = ["engram", "--rows", "2e9", "--offload", "--deadline", "600"]


def _busy(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(n)]


def _row(index: int, busy: bool, path: Path, load: float) -> str:
    results = load_results(path)
    assert results.engram is not None
    best = recommended(results.engram)
    if best is None:
        return f"| {index} | {'2 busy loops' if busy else 'quiet'} | {load:.2f} | no start-up | | |"
    start = best.startup
    span = f"{start.low:.0f}-{start.high:.0f} s" if start.low is not None and start.high is not None else ""
    verdict = best.deadline.code if best.deadline is not None else "none"
    c = results.engram.contention
    busy_read = ", ".join(c.reasons) if c is not None and c.reasons else "quiet"
    pressure = f"{c.pressure:.0%}" if c is not None and c.pressure is not None else "n/a"
    return (
        f"| {index} | {'2 busy loops' if busy else 'quiet'} | {load:.2f} | {best.name} ~{start.value:.0f} s "
        f"[{span}] | {verdict} | {busy_read} (PSI {pressure}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--busy-round", type=int, default=4, help="the round run with two busy processes (1-based)")
    parser.add_argument("command", nargs="*", help="the dummyprof command (default: engram --rows 2e9 ...)")
    args = parser.parse_args()
    command = args.command or DEFAULT
    print(f"`dummyprof {' '.join(command)}`\n")
    print("| run | machine | load (1 min) | recommended start-up [interval] | verdict | contention |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(1, args.rounds + 1):
            busy = index == args.busy_round
            load = os.getloadavg()[0]
            workers = _busy(2) if busy else []
            out = Path(tmp) / f"run{index}.json"
            try:
                subprocess.run([sys.executable, "-m", "dummyprof", *command, "--json", str(out), "-q"], check=True)
            finally:
                for w in workers:
                    w.kill()
            print(_row(index, busy, out, load), flush=True)


if __name__ == "__main__":
    main()
