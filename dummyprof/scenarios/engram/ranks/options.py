"""Options of a multi-rank ``engram`` run started from here (``--nproc``, the gate, the Python API).

Everything is checked before any rank starts: the ranks must be the tables' tp x dp shards, and this
machine must have a core and the memory of one more process for each of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from dummyprof.errors import UsageError
from dummyprof.measure.memory import available_memory_bytes, cpu_count, rss_bytes
from dummyprof.ranks.world import pick_backend
from dummyprof.results.common import copied
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.engram.options import validate as validate_engram
from dummyprof.schema import given_as
from dummyprof.units import format_bytes


@dataclass
class EngramRanksOptions(EngramOptions):
    """``EngramOptions`` for every rank at once; ``rank`` stays 0 (each rank takes its own)."""

    nproc: int = 2
    dist_timeout_s: float = given_as(120.0, "--dist-timeout")
    dist_backend: str = "auto"


def validate(options: EngramRanksOptions) -> str:
    """The engram checks, tp x dp against the ranks, room on this machine for them; returns the backend."""
    n = options.nproc
    if n < 1:
        raise UsageError.for_field("nproc", f"must be at least 1, got {n}")
    if not options.dist_timeout_s > 0:
        raise UsageError.for_field(
            "dist_timeout_s", f"must be a positive number of seconds, got {options.dist_timeout_s:g}"
        )
    shards = options.layout.world
    if shards != n:
        raise UsageError.for_field(
            "nproc",
            f"{n} ranks, but the tables are split over tp {options.tp} x dp {options.dp} = {shards}; "
            f"make tp x dp {n} (e.g. tp {n}, dp 1) or start {shards}",
        )
    if options.rank != 0:
        raise UsageError.for_field("rank", f"every rank takes its own (0 to {n - 1}); drop it")
    backend = pick_backend(options.dist_backend, offload=options.offload, device=options.device)
    validate_engram(copied(EngramOptions, options))
    check_machine(n)
    return backend


def private_bytes() -> int:
    """This process's own memory (USS): what each rank needs again; the libraries' pages are shared."""
    import psutil

    try:
        return int(psutil.Process().memory_full_info().uss)
    except (psutil.Error, AttributeError):  # no /proc/self/smaps here: the whole RSS, an overestimate
        return rss_bytes()


def check_machine(nproc: int) -> None:
    """A core per rank, and the memory of ``nproc`` processes like this one (torch loaded): a lower bound."""
    import torch  # noqa: F401 - every rank loads torch: measure this process with it loaded

    cores = cpu_count()
    if nproc > cores:
        raise UsageError.for_field(
            "nproc",
            f"{nproc} ranks on {cores} cores: ranks sharing a core time the scheduler, not the fills; "
            f"use {cores} or fewer",
        )
    per_rank, available = private_bytes(), available_memory_bytes()
    if nproc * per_rank > available:
        raise UsageError.for_field(
            "nproc",
            f"{nproc} ranks need at least {format_bytes(nproc * per_rank)} for their processes alone "
            f"({format_bytes(per_rank)} each, this process's own memory with torch loaded), more than the "
            f"{format_bytes(available)} available; use {available // per_rank} or fewer",
        )
