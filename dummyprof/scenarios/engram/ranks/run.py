"""The multi-rank ``engram`` run as one call (``engram --nproc``, the gate, the Python API): the ranks started
here (``launch.spawn``), the gathered Results back."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from dummyprof.measure.memory import cpu_count
from dummyprof.ranks.launch import spawn
from dummyprof.ranks.world import LaunchEnv, RanksFailed
from dummyprof.results.common import copied
from dummyprof.results.session import Results
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.engram.ranks.options import EngramRanksOptions, validate
from dummyprof.scenarios.engram.ranks.rank import Describe, RankOutcome, run_rank

__all__ = ["EngramRanksOptions", "RanksRun", "launch_ranks", "run", "validate"]

START_UP_S = 120.0  # on top of the time budget and --dist-timeout: each rank imports torch, then the contention check


@dataclass
class RanksRun:
    gathered: Results  # rank 0's: every rank's record and the aggregate
    own: list[Results]  # each rank's own single-rank Results, by rank


def threads_per_rank(nproc: int) -> tuple[int, str]:
    """Torch threads for each rank: the user's ``OMP_NUM_THREADS``, else this machine's cores shared out."""
    given = os.environ.get("OMP_NUM_THREADS", "")
    if given.isdigit() and int(given) > 0:
        return int(given), "OMP_NUM_THREADS"
    return max(1, cpu_count() // nproc), "cores"


def launch_ranks(options: EngramRanksOptions, *, describe: Describe = str) -> RanksRun:
    backend = validate(options)
    threads, source = threads_per_rank(options.nproc)
    args = (copied(EngramOptions, options), backend, options.dist_timeout_s, describe, threads, source)
    limit_s = options.time_budget_s + options.dist_timeout_s + START_UP_S
    outcomes = spawn(rank_main, args, options.nproc, limit_s=limit_s, finished=_rank0_failed)
    failed = next((o for _, o in sorted(outcomes.items()) if o.exit_code), None)
    if failed is not None:  # rank 0 says what failed on any rank
        raise RanksFailed(failed.error or f"rank {failed.rank} failed", exit_code=failed.exit_code)
    first = outcomes[0]
    assert first.gathered is not None
    return RanksRun(first.gathered, [o.results for _, o in sorted(outcomes.items()) if o.results is not None])


def run(options: EngramRanksOptions, *, progress: Callable[[int, int, str], None] | None = None) -> Results:
    if progress is not None:
        progress(0, 1, f"{options.nproc} ranks")
    results = launch_ranks(options).gathered
    if progress is not None:
        progress(1, 1, f"{options.nproc} ranks")
    return results


def _rank0_failed(outcomes: dict[int, Any]) -> bool:
    return 0 in outcomes and outcomes[0].exit_code != 0  # the others may be stuck: nothing more to wait for


def rank_main(
    env: LaunchEnv,
    options: EngramOptions,
    backend: str,
    timeout_s: float,
    describe: Describe,
    threads: int,
    threads_source: str,
) -> RankOutcome:
    torch.set_num_threads(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    return run_rank(
        env,
        lambda world: options,
        backend=backend,
        timeout_s=timeout_s,
        describe=describe,
        client=True,
        threads_source=threads_source,
    )
