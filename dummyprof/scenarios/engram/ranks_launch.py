"""The multi-rank ``engram`` run as one call (for the perf gate): start the ranks, read back the gathered Results.

The ranks run as ``python -m dummyprof engram --nproc N ...`` (torch.distributed's own launcher), with
their output captured, so a gate run prints nothing of theirs; rank 0's results file is read back.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dummyprof.errors import DummyprofError, UsageError
from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.engram.options import validate as validate_engram

DEFAULT_DIST_TIMEOUT_S = 120.0
START_UP_S = 120.0  # on top of the time budget: starting the ranks (each imports torch) and the contention check
# Option names whose flag is not ``--`` + the name with dashes.
FLAGS = {"methods": "--method", "time_budget_s": "--time-budget", "deadline_s": "--deadline"}


@dataclass
class EngramRanksOptions(EngramOptions):
    """``EngramOptions`` for every rank at once; ``rank`` is ignored (each rank takes its own)."""

    nproc: int = 2
    dist_timeout_s: float = DEFAULT_DIST_TIMEOUT_S


def validate(options: EngramRanksOptions) -> None:
    """The engram checks, and tp x dp must equal the number of ranks."""
    if options.nproc < 1:
        raise UsageError("nproc", f"must be at least 1, got {options.nproc}")
    if options.tp_size * options.dp_size != options.nproc:
        raise UsageError(
            "nproc",
            f"tp_size {options.tp_size} x dp_size {options.dp_size} must equal nproc {options.nproc}",
        )
    validate_engram(dataclasses.replace(options, rank=0))


def engram_argv(options: EngramOptions) -> list[str]:
    """The ``dummyprof engram`` flags that give ``options`` (defaults left out)."""
    defaults = EngramOptions()
    argv: list[str] = []
    for f in dataclasses.fields(EngramOptions):
        value, default = getattr(options, f.name), getattr(defaults, f.name)
        if f.name == "rank" or value == default or value is None:
            continue
        flag = FLAGS.get(f.name, "--" + f.name.replace("_", "-"))
        if isinstance(value, bool):
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv


def run(options: EngramRanksOptions, *, progress: Callable[[int, int, str], None] | None = None) -> Results:
    validate(options)
    with tempfile.TemporaryDirectory(prefix="dummyprof-ranks-") as tmp:
        path = Path(tmp) / "ranks.json"
        command = [sys.executable, "-m", "dummyprof", "engram", "--nproc", str(options.nproc)]
        command += [*engram_argv(options), "--dist-timeout", f"{options.dist_timeout_s:g}", "--json", str(path), "-q"]
        if progress is not None:
            progress(0, 1, f"{options.nproc} ranks")
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=options.time_budget_s + START_UP_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise DummyprofError(
                f"{options.nproc} ranks did not finish within {options.time_budget_s + START_UP_S:g} s"
            ) from None
        if done.returncode != 0 or not path.exists():
            errors = [line for line in done.stderr.splitlines() if line.startswith("dummyprof: error:")]
            why = errors[-1] if errors else (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise DummyprofError(f"{options.nproc} ranks exited with {done.returncode}: {why}")
        results = load_results(path)
    if progress is not None:
        progress(1, 1, f"{options.nproc} ranks")
    return results
