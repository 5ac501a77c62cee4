"""Planning for ``engram`` before anything is allocated: layout and memory need, the budget, the probe's size,
which methods are measured in full and in how many rounds, and the sample sizes of what is projected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from dummyprof.allocation.backings import SHM_DIR, Backing, backing_disk_free, disk_free_bytes
from dummyprof.errors import DoesNotFitError
from dummyprof.loaders.fp8_methods import FLOOR, FillMethod
from dummyprof.measure.budget import DEFAULT_SHARE, host_budget, host_memory, limit_flag, memory_fix, offered_seconds
from dummyprof.measure.engine import SamplingError, sample_sizes
from dummyprof.measure.memory import gpu_free_bytes
from dummyprof.models.engram import EngramSpec, rank_table_bytes, shard
from dummyprof.results.common import copied
from dummyprof.results.engram import FOR_MEMORY, FOR_TIME, Budget, EngramLayout, RankPart, RoundsCut
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.units import format_bytes

# Calibration probe: past glibc's largest mmap threshold (32 MiB), so scratch tensors fault in fresh pages
# as they do at full size; small enough to take a few seconds.
PROBE_WEIGHT_BYTES = 64 * 1024 * 1024
MAX_LISTED_RANKS = 4096
CHEAP_FACTOR = 4.0  # a method within 4x of the memset floor gets every round, at full size and in samples
SAMPLE_SHARE = 0.4  # of the time budget kept for sampling when something must be projected
# Larger samples ran up to ~1.5x slower per row than the probe predicted (fresh scratch pages, a shared
# machine); planning with this margin keeps the whole run near its time budget.
SAMPLE_TIME_SAFETY = 1.5
MIN_SAMPLE_SHARE = 0.25  # sampling still gets this much when the full-size work overran its estimate
# Memory-bound work (memset, constant, first touch) runs at GB/s: a sample of a few MiB takes milliseconds,
# which timer noise and page-cache luck swamp. Their largest sample gets up to this many bytes of tables
# (within the memory budget), where a memset takes about a tenth of a second.
FAST_SAMPLE_BYTES = 1 << 30
FAST_SAMPLE_SHARE = 0.5  # of the sampling time, at most, for the memory-bound group when random methods share it
FULL_ROUND_OVERRUN = 1.5  # one full-size round may overrun the time budget by this factor before projecting
# Before the calibration probe, two small probes (the probe's rows / PRE_PROBE_SHARE, then twice that) predict
# what the least run costs, so that a --time-budget that cannot hold it is refused before measuring starts.
PRE_PROBE_SHARE = 64
LEAST_SIZES = 3  # a projection needs three sample sizes per group, measured however late
ALLOCATE, FIRST_TOUCH, FILL = "allocate", "first touch", "fill"  # the terms of start-up


def build_layout(spec: EngramSpec, backing: Backing) -> EngramLayout:
    mine = shard(spec)
    weight = mine.part_rows * spec.dim
    scale = mine.part_rows * spec.scale_cols
    listed = spec.layout.world if spec.layout.world <= MAX_LISTED_RANKS else 0
    parts = [copied(RankPart, shard(spec, r), rank=r, table_bytes=rank_table_bytes(spec, r)) for r in range(listed)]
    return copied(
        EngramLayout,
        spec,  # rows, dim, block_size, tables, tp, dp, rank
        heads=spec.num_heads,
        part_rows=mine.part_rows,
        weight_bytes_per_table=weight,
        scale_bytes_per_table=scale,
        table_bytes_per_rank=spec.tables * (weight + scale),
        reserved_bytes_per_rank=reserved_tables(spec, mine.part_rows, backing),
        total_bytes=spec.tables * spec.rows * spec.row_bytes,
        ranks=parts,
    )


def reserved_tables(spec: EngramSpec, part_rows: int, backing: Backing) -> int:
    per_table = backing.reserved_bytes(part_rows * spec.dim) + backing.reserved_bytes(part_rows * spec.scale_cols)
    return spec.tables * per_table


def needed_bytes(spec: EngramSpec, part_rows: int, method: FillMethod, backing: Backing, chunk: int) -> int:
    return reserved_tables(spec, part_rows, backing) + method.scratch_bytes(part_rows * spec.dim, chunk)


def memory_budget(options: EngramOptions, backing: Backing, device: torch.device) -> Budget:
    """The run's budget: memory (where it comes from, what bounds it: ``limit``) and time."""

    def budget(nbytes: int, source: str, limit: str) -> Budget:
        return Budget(nbytes, source, options.time_budget_s, options.deadline_s, limit)

    if backing.used == "device":
        free = gpu_free_bytes(device) or 0
        if options.max_memory is not None and options.max_memory <= free:
            return budget(options.max_memory, "--max-memory", "--max-memory")
        if options.max_memory is not None:
            return budget(free, f"--max-memory, capped by {format_bytes(free)} free on {device}", "GPU")
        return budget(int(free * 0.9), f"90% of {format_bytes(free)} free on {device}", "GPU")
    host = host_memory()
    nbytes = host_budget(options.max_memory, memory=host)
    if options.max_memory is None:
        source, limit = f"{DEFAULT_SHARE:.0%} of {host.describe()}", host.limit
    elif nbytes < options.max_memory:
        source, limit = f"--max-memory {format_bytes(options.max_memory)}, capped by {host.describe()}", host.limit
    else:
        source, limit = f"--max-memory {format_bytes(options.max_memory)}", "--max-memory"
    if backing.used == "shm":
        shm_free = disk_free_bytes(SHM_DIR)
        if shm_free is not None and shm_free < nbytes:
            nbytes, source, limit = shm_free, f"{format_bytes(shm_free)} free in /dev/shm", "/dev/shm"
    if backing.used == "mmap":
        disk_free = backing_disk_free(backing)
        if disk_free is not None and disk_free < nbytes:
            where = Path(backing.path).parent
            nbytes, source, limit = disk_free, f"{format_bytes(disk_free)} free on the disk of {where}", "disk"
    result = budget(nbytes, source, limit)
    if host.cgroup is not None:
        result.cgroup_version = host.cgroup.version
        result.cgroup_limit_bytes = host.cgroup.limit_bytes
        result.cgroup_free_bytes = host.cgroup.free_bytes
        result.cgroup_file = str(host.cgroup.limit_file)
    return result


Rates = dict[str, float]  # seconds per row, by method name, ALLOCATE and FIRST_TOUCH: the probe's, then updated


def probe_rows(
    spec: EngramSpec, methods: Sequence[FillMethod], budget: int, backing: Backing, chunk: int, limit: str
) -> int:
    rows = max(1, min(shard(spec).part_rows, PROBE_WEIGHT_BYTES // spec.dim))
    while rows > 1 and max(needed_bytes(spec, rows, m, backing, chunk) for m in methods) > budget:
        rows //= 2
    if max(needed_bytes(spec, rows, m, backing, chunk) for m in methods) > budget:
        raise DoesNotFitError(
            limit_flag(limit),
            f"even one row of every method needs more than the {format_bytes(budget)} budget; {memory_fix(limit)}",
        )
    return rows


def split_by_bound(methods: Sequence[FillMethod], per_row: Rates) -> tuple[list[FillMethod], list[FillMethod]]:
    """The methods within CHEAP_FACTOR of the floor's cost per row (memory-bound), and the rest."""
    fast = [m for m in methods if per_row[m.name] <= CHEAP_FACTOR * per_row.get(FLOOR, 0.0)]
    return fast, [m for m in methods if m not in fast]


@dataclass
class SampleGroup:
    """Methods sampled at the same sizes: memory-bound ones at large sizes, generator-bound ones at smaller."""

    methods: list[FillMethod]
    rows: list[int]
    rounds: dict[str, int]  # cheap methods are repeated at each size, median kept
    memory_bound: bool

    @property
    def steps(self) -> int:
        return len(self.rows) * sum(self.rounds.values())


@dataclass
class Plan:
    full: list[FillMethod]
    projected: list[FillMethod]
    reasons: dict[str, str]  # projected method: FOR_MEMORY or FOR_TIME
    one_fill_s: dict[str, float] = field(default_factory=dict)  # FOR_TIME: one full-size fill, calibrated
    rounds: int = 0
    sample_groups: list[SampleGroup] = field(default_factory=list)
    full_rounds: dict[str, int] = field(default_factory=dict)
    rounds_cut: RoundsCut | None = None

    @property
    def sample_rows(self) -> list[int]:
        """Every sample size, each allocated once (first touch and allocation are sampled at all of them)."""
        return sorted({rows for group in self.sample_groups for rows in group.rows})


@dataclass(frozen=True)
class CallCost:
    """One timed call (a method's fill, allocation or first touch) as a fixed cost plus a cost per row."""

    fixed_s: float
    per_row_s: float

    def at(self, rows: int) -> float:
        return self.fixed_s + self.per_row_s * rows


def call_costs(small: Rates, large: Rates, rows: int, *, dearer: bool = False) -> dict[str, CallCost]:
    """Each call's cost from two pre-probes, ``rows`` and ``2 * rows`` (their per-row rates): the slope, never
    negative nor above either probe's own per-row rate, and the intercept, never above either reading. Noise
    makes a call look dearer, not cheaper: the lower figure is kept, so a budget is refused only when even it
    overruns. ``dearer``: the intercept the dearer reading gives on that slope instead (where the two readings
    disagree with the line, their noise): what a value offered from these probes is sized by, so that followed,
    the next run's lower figure (its own readings) lands under it."""
    costs = {}
    for name, rate in small.items():
        t1, t2 = rate * rows, large[name] * 2 * rows
        slope = max(0.0, min((t2 - t1) / rows, rate, large[name]))
        low = min(t1, t2, t1 - slope * rows)
        costs[name] = CallCost(max(0.0, max(t1 - slope * rows, t2 - 2 * slope * rows) if dearer else low), slope)
    return costs


def least_seconds(
    costs: dict[str, CallCost], methods: Sequence[FillMethod], fits: dict[str, bool], probe: int, repeat: int
) -> tuple[float, float]:
    """The least a run costs after its pre-probes: (the calibration probe on ``probe`` rows, the first three
    sample sizes of each group the run must project, each at one row: their fixed costs)."""
    probe_s = sum(costs[name].at(probe) for name in (ALLOCATE, FIRST_TOUCH, *(m.name for m in methods)))
    sampled = [m for m in methods if not fits[m.name]]  # the floor among them when it does not fit either
    fast, slow = split_by_bound(sampled, {name: cost.per_row_s for name, cost in costs.items()})
    setup = costs[ALLOCATE].at(1) + costs[FIRST_TOUCH].at(1)
    sampling = 0.0
    for group, rounds in ((fast, repeat), (slow, 1)):
        if group:
            sampling += LEAST_SIZES * (setup + rounds * sum(costs[m.name].at(1) for m in group))
    return probe_s, sampling


def time_plan(
    spec: EngramSpec,
    methods: Sequence[FillMethod],
    fits: dict[str, bool],
    rate: Rates,
    options: EngramOptions,
    time_left: float,
) -> Plan:
    """Measure in full what fits memory, unless one round would overrun the time budget by half or more."""
    part_rows = shard(spec).part_rows
    full = [m for m in methods if fits[m.name]]
    projected = [m for m in methods if not fits[m.name]]
    reasons = {m.name: FOR_MEMORY for m in projected}
    one_fill_s: dict[str, float] = {}
    setup = (rate[ALLOCATE] + rate[FIRST_TOUCH]) * part_rows
    cheap = {m.name for m in split_by_bound(methods, rate)[0]}

    def round_s(ms: Sequence[FillMethod]) -> float:
        return sum(rate[m.name] for m in ms) * part_rows

    reserve = SAMPLE_SHARE * time_left if projected else 0.0
    while full and setup + round_s(full) > FULL_ROUND_OVERRUN * (time_left - reserve):
        candidates = [m for m in full if m.name != FLOOR] or full  # the floor goes last: it is the cheapest
        slowest = max(candidates, key=lambda m: rate[m.name])
        full.remove(slowest)
        projected.append(slowest)
        reasons[slowest.name] = FOR_TIME
        one_fill_s[slowest.name] = rate[slowest.name] * part_rows
        reserve = SAMPLE_SHARE * time_left
    plan = Plan(full, projected, reasons, one_fill_s)
    if full:
        costly = [m for m in full if m.name not in cheap]
        cheap_round = round_s([m for m in full if m.name in cheap])
        spare = time_left - reserve - setup - options.repeat * cheap_round
        plan.rounds = options.repeat
        if costly:
            per_round = round_s(costly)
            plan.rounds = max(1, min(options.repeat, int(spare / per_round) if per_round > 0 else 1))
            if plan.rounds < options.repeat:
                names = [m.name for m in costly]
                plan.rounds_cut = RoundsCut(plan.rounds, options.repeat, names, per_round, options.time_budget_s)
        # Memory-bound fills take milliseconds; repeating them costs little and steadies the floor.
        plan.full_rounds = {m.name: options.repeat if m.name in cheap else plan.rounds for m in full}
    return plan


def plan_samples(
    spec: EngramSpec,
    plan: Plan,
    methods: Sequence[FillMethod],
    rate: Rates,
    options: EngramOptions,
    time_left: float,
    budget: int,
    backing: Backing,
    limit: str,
) -> list[FillMethod]:
    """Sample sizes for the projected methods (after the full-size work, with the time really left): memory-bound
    methods get large samples, repeated; generator-bound ones what the rest of the time allows, once each."""
    # The projected methods, and the floor when it is not measured in full (percent of floor needs it).
    floor = [m for m in methods if m.name == FLOOR and m not in plan.full and m not in plan.projected]
    sampled = plan.projected + floor
    fast, slow = split_by_bound(sampled, rate)
    total = max(time_left, MIN_SAMPLE_SHARE * options.time_budget_s)
    setup = rate[ALLOCATE] + rate[FIRST_TOUCH]
    # Bytes of one row of every table. Rounding is per allocation, not per row (rounding one row alone would
    # count a 4 KiB page a row): the slack covers a unit per allocation; pinned rounding can double a request.
    table_row = spec.tables * spec.row_bytes * (2 if backing.caching_host_allocator else 1)
    slack = 2 * spec.tables * backing.reserved_bytes(1)  # weights and scales: one allocation each per table
    part_rows = shard(spec).part_rows
    groups: list[SampleGroup] = []
    spent = 0.0
    try:
        for group, memory_bound in ((fast, True), (slow, False)):
            if not group:
                continue
            rounds = {m.name: options.repeat if memory_bound else 1 for m in group}
            per_row = (setup + sum(rate[m.name] * rounds[m.name] for m in group)) * SAMPLE_TIME_SAFETY
            scratch = max(m.scratch_per_element for m in group) * spec.dim
            if memory_bound:
                # FAST_SAMPLE_BYTES bounds the tables of the largest sample; scratch, if any, comes on top
                memory = min(budget, slack + FAST_SAMPLE_BYTES * (table_row + scratch) // table_row)
                seconds = (FAST_SAMPLE_SHARE if slow else 1.0) * total
            else:
                memory, seconds = budget, max(total - spent, MIN_SAMPLE_SHARE * total)
            rows = sample_sizes(
                part_rows,
                seconds_per_row=per_row,
                bytes_per_row=table_row + scratch,
                fixed_bytes=slack + max(m.fixed_scratch_bytes for m in group),  # random-fast's lanes: not per row
                memory_budget=memory,
                time_budget=seconds,
            )
            groups.append(SampleGroup(group, rows, rounds, memory_bound))
            spent = per_row * sum(rows)
    except SamplingError as exc:
        names = ", ".join(m.name for m in plan.projected)
        if exc.binding == "memory":
            raise DoesNotFitError(limit_flag(limit), f"cannot project {names}: {exc}; {memory_fix(limit)}") from None
        # The sampling share grows at least in proportion to the budget (what is left of it, or its share):
        # the budget scaled by what the smallest samples need over the share they had holds them.
        scale = (exc.needed_s or 0.0) / seconds if seconds > 0 else 0.0
        fix = (
            f"give --time-budget {offered_seconds(options.time_budget_s * scale)}s"
            if scale > 1
            else "raise --time-budget"
        )
        raise DoesNotFitError.for_field("time_budget_s", f"cannot project {names}: {exc}; {fix}") from None
    plan.sample_groups = groups
    return sampled
