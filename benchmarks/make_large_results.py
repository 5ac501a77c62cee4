"""Write a large compare results file, for timing ``dummyprof report`` on one (see BENCHMARKS.md).

A small real ``compare`` run (depth 4) is made first; its per-tensor rows are then repeated under
distinct names until the file holds ``--rows`` of them (400,000 by default: about 260 MB, the size
of a large model's file). Every other field is the run's own, so the file loads and renders like
any results file.

    python benchmarks/make_large_results.py /tmp/large.json [--rows 400000]
    python -m dummyprof report -q /tmp/large.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def small_run(path: Path) -> dict:
    """A real compare run, small enough to take a few seconds."""
    cmd = [sys.executable, "-m", "dummyprof", "compare", "--depth", "4", "--repeat", "3", "--json", str(path)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(path.read_text())


def grow(data: dict, rows: int) -> dict:
    """``data`` with ``compare.tensors`` repeated to ``rows`` rows, each under a distinct name."""
    originals = list(data["compare"]["tensors"].items())
    tensors = {}
    for i in range(rows):
        name, row = originals[i % len(originals)]
        copy = i // len(originals)
        key = f"copy{copy}.{name}"
        tensors[key] = {**row, "names": [f"copy{copy}.{n}" for n in row["names"]], "module": f"copy{copy}"}
    data["compare"]["tensors"] = tensors
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=400_000)
    args = parser.parse_args()
    if args.out.exists():
        parser.error(f"{args.out} exists; give a new path")
    with tempfile.TemporaryDirectory() as tmp:
        data = small_run(Path(tmp) / "small.json")
    args.out.write_text(json.dumps(grow(data, args.rows), indent=2) + "\n")
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.0f} MB, {args.rows} tensor rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
