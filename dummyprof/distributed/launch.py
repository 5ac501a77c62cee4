"""``--nproc N``: start N ranks of a dummyprof command through torch.distributed's own launcher.

Exactly what ``torchrun --standalone --nproc-per-node N -m dummyprof ...`` does (the same argument
parser and elastic agent: rendezvous on a free local port, OMP_NUM_THREADS=1 per rank unless set,
every rank stopped when one fails), so both forms give the same report.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

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
        return _exit_code(exc.failures)
    return 0


def _exit_code(failures: Mapping[int, Any]) -> int:
    """Rank 0's own exit code, else the first rank's that exited on its own; a killed rank is named here.

    The launcher stops the other ranks with SIGTERM once one exits, so a rank ended by SIGTERM while another
    exited on its own is not a failure of its own; any other signal (SIGKILL: the OOM killer) is, and that
    rank could say nothing itself.
    """
    own = {rank: f.exitcode for rank, f in sorted(failures.items()) if f.exitcode > 0}
    killed = {rank: f.signal_name() for rank, f in sorted(failures.items()) if f.exitcode < 0}
    named = {rank: name for rank, name in killed.items() if name != "SIGTERM"} or ({} if own else killed)
    for rank, name in named.items():
        sys.stderr.write(f"dummyprof: error: rank {rank} was killed by {name}\n")
    if not own:
        return EXIT_FAILED
    return own.get(0) or next(iter(own.values()))
