"""Results of a multi-rank Engram run (torchrun or ``--nproc``): one record per rank, gathered by rank 0, each
with its own ``engram`` section, and the aggregate: each phase's slowest rank, memory per node, contention."""

from __future__ import annotations

from msgspec import field

from dummyprof.results.common import Count, Estimate, Record, named
from dummyprof.results.engram import EngramResult


class RankFill(Record):
    method: str = ""
    mode: str = ""  # measured, projected or planned (as the rank's engram section says)
    time: Estimate = field(default_factory=Estimate)  # the fill with every rank filling at once
    needed_bytes: Count = 0  # tables + scratch of this rank, computed before allocating
    fits_in_memory: bool = True  # within this rank's share of the node's memory budget
    peak_rss_bytes: Estimate = field(default_factory=Estimate)
    alone_s: Estimate = field(default_factory=Estimate)  # contention check: this rank alone, the others waiting
    together_s: Estimate = field(default_factory=Estimate)  # contention check: every rank at once, same tables
    contention_rounds: Count = 0  # rounds of the contention check (medians above)


class RankRecord(Record):
    rank: Count = 0
    world_size: Count = 1
    local_rank: Count = 0
    local_world_size: Count = 1
    host: str = ""
    part_rows: Count = 0  # rows of one table on this rank
    table_bytes: Count = 0  # all tables, weights + scales, as requested (pinned: requested from the allocator)
    reserved_bytes: Count = 0  # after the backing's rounding, computed
    reserved_measured_bytes: Estimate = field(default_factory=Estimate)  # pinned: read back from the allocator
    backing: str = ""  # the memory kind really used
    available_bytes: Count = 0  # host memory available when this rank started (psutil)
    memory_budget_bytes: Count = 0  # this rank's share of the node budget
    allocate_s: Estimate = field(default_factory=Estimate)
    first_touch_s: Estimate = field(default_factory=Estimate)
    fills: list[RankFill] = []
    peak_rss_bytes: Count | None = None  # worst peak RSS of any measured step on this rank
    steps: list[str] = []  # barriers passed, in order (all ranks must agree)
    threads: Count = 0  # torch threads of this rank
    threads_source: str = ""  # who chose them: "cores" (cores / local ranks), "OMP_NUM_THREADS" or "torch"
    cores: Count = 0  # cores this rank's process may run on
    engram: EngramResult | None = None  # the rank's full engram section

    def fill(self, method: str) -> RankFill:
        return named(self.fills, method, key="method")


class PhaseCritical(Record):
    """The slowest rank of one phase: start-up waits for it."""

    phase: str = ""  # allocate, first touch, or a fill method
    slowest_rank: Count | None = None
    seconds: Estimate = field(default_factory=Estimate)
    fastest_seconds: Estimate = field(default_factory=Estimate)


class NodeMemory(Record):
    """One host: its ranks together."""

    host: str = ""
    ranks: list[Count] = []
    available_bytes: Count = 0  # the smallest reading of its ranks at start
    peak_rss_sum_bytes: Count | None = None  # sum of its ranks' peaks (an upper bound: peaks need not coincide)
    table_bytes: Count = 0  # all its ranks' tables, requested
    reserved_bytes: Count = 0  # computed
    needed_bytes: dict[str, Count] = {}  # per method: all its ranks' tables + scratch
    fits: dict[str, bool] = {}  # per method: needed <= available


class Contention(Record):
    """One method: the same shards filled one rank at a time, then by all ranks at once."""

    method: str = ""
    rounds: Count = 0
    alone_s: Estimate = field(default_factory=Estimate)  # slowest rank alone
    together_s: Estimate = field(default_factory=Estimate)  # slowest rank with every rank filling
    ratio: Estimate = field(default_factory=Estimate)  # together / alone: 1.0 means no contention
    unavailable: str = ""  # why no check was made (projected method, dry run)


class RanksAggregate(Record):
    world_size: Count = 0
    backend: str = ""  # gloo or nccl
    nodes: list[NodeMemory] = []
    critical_path: list[PhaseCritical] = []
    contention: list[Contention] = []
    steps_aligned: bool = True  # every rank passed the same barriers in the same order
    notes: list[str] = []
