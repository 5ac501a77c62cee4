"""Why a figure is unavailable, in words: Results store a code (see results/engram.py), reporters say it."""

from __future__ import annotations

from dummyprof.results.engram import (
    DRY_RUN,
    FASTER_THAN_FLOOR,
    NO_ANON_HUGE_PAGES,
    NO_HOST_MEMORY_STATS,
    NO_HUGE_PAGES_ASKED,
    NO_RESERVED_FIGURE,
    NOT_ALLOCATED,
    NOT_ALLOCATED_COMPUTED,
    NOT_ALLOCATED_PROJECTED,
)

REASONS = {
    DRY_RUN: "dry run: nothing allocated",
    NOT_ALLOCATED: "full tables not allocated here",
    NOT_ALLOCATED_COMPUTED: "full tables not allocated here (see the computed figure)",
    NOT_ALLOCATED_PROJECTED: "full tables not allocated here (projected run)",
    NO_HOST_MEMORY_STATS: "torch.cuda.host_memory_stats() reports no bytes",
    NO_ANON_HUGE_PAGES: "/proc/self/smaps_rollup has no AnonHugePages",
    FASTER_THAN_FLOOR: "over!: measured faster than this run's fastest memset floor, which no fill can be: "
    "the floor readings were disturbed (CPU contention?); rerun on a quiet machine",
}
OF_A_BACKING = {  # CODE:KIND, the kind of memory used
    NO_RESERVED_FIGURE: "{} memory: only torch's CUDA pinned allocator reports reserved bytes",
    NO_HUGE_PAGES_ASKED: "{} memory: no huge pages asked",
}


def unavailable_text(reason: str) -> str:
    """The words for a code; anything else (an older file's sentence, a probe's own message) as it is."""
    code, _, kind = reason.partition(":")
    if kind and code in OF_A_BACKING:
        return OF_A_BACKING[code].format(kind)
    return REASONS.get(reason, reason)
