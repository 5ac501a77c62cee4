"""``--nproc N``: start N ranks of a dummyprof command through torch.distributed's own launcher.

Exactly what ``torchrun --standalone --nproc-per-node N -m dummyprof ...`` does (the same argument
parser and elastic agent: rendezvous on a free local port, OMP_NUM_THREADS=1 per rank unless set,
every rank stopped when one fails), so both forms give the same report.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from dummyprof.distributed.world import EXIT_FAILED


def torchrun_args(nproc: int, module_args: Sequence[str]) -> list[str]:
    """torchrun's own command line for ``nproc`` local ranks running ``python -m dummyprof <module_args>``."""
    return ["--standalone", "--nproc-per-node", str(nproc), "--max-restarts", "0", "-m", "dummyprof", *module_args]


def launch(nproc: int, module_args: Sequence[str]) -> int:
    """Run the ranks to the end; the exit code of the run (rank 0's when it failed, else the first failure's)."""
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    args = torchrun.parse_args(torchrun_args(nproc, module_args))
    try:
        torchrun.run(args)
    except ChildFailedError as exc:
        codes = {}
        for rank, failure in sorted(exc.failures.items()):
            if failure.exitcode < 0:
                # Killed: that rank could say nothing, so the launcher does.
                sys.stderr.write(f"dummyprof: error: rank {rank} was killed by {failure.signal_name()}\n")
                codes[rank] = EXIT_FAILED
            else:
                codes[rank] = failure.exitcode
        return codes.get(0) or next((c for c in codes.values() if c > 0), EXIT_FAILED)
    return 0
