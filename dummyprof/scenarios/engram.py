"""The ``engram`` scenario: one rank's Engram tables, each fp8 fill method, measured or projected.

Order of work: validate, size every method per rank, compare with the memory
budget (nothing allocated yet), calibrate on a small probe to estimate time,
measure in full what fits both budgets, sample the rest at sizes that fit and
project it to full size. Nothing larger than the budget is ever allocated.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from dummyprof.errors import DoesNotFitError, UsageError
from dummyprof.loaders.fp8_fill import (
    DEFAULT_CHUNK_ELEMENTS,
    DEFAULT_METHODS,
    FLOOR,
    FillMethod,
    TablePair,
    get_method,
    sample_values,
)
from dummyprof.measure.budget import DEFAULT_SHARE
from dummyprof.measure.device import resolve_device, synchronize
from dummyprof.measure.environment import collect_environment
from dummyprof.measure.host_memory import (
    BACKINGS,
    Arena,
    Backing,
    anon_huge_page_bytes,
    pinned_reserved_bytes,
    resolve_backing,
    shm_free_bytes,
)
from dummyprof.measure.memory import (
    PeakRss,
    available_memory_bytes,
    gpu_allocator_peak_figure,
    gpu_free_bytes,
    gpu_used_figure,
    pinned_memory_figure,
    reset_gpu_peak,
    rss_bytes,
)
from dummyprof.measure.projection import SamplingError, fit_proportional, fit_time, project, sample_sizes
from dummyprof.models.engram import EngramSpec, rank_table_bytes, shard, validate_engram_spec
from dummyprof.parsing import format_bytes, format_seconds
from dummyprof.results.common import Figure, MemoryUse, Timing
from dummyprof.results.engram import (
    MEASURED,
    PLANNED,
    PROJECTED,
    BackingInfo,
    Budget,
    EngramLayout,
    EngramResult,
    MethodResult,
    PhaseResult,
    RankPart,
    SamplePoint,
    ValueStats,
)
from dummyprof.results.session import Results

Clock = Callable[[], float]
Progress = Callable[[int, int, str], None]

DEFAULT_TIME_BUDGET_S = 40.0
DEFAULT_REPEAT = 3
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
FULL_ROUND_OVERRUN = 1.5  # one full-size round may overrun the time budget by this factor before projecting
ALLOCATE, FIRST_TOUCH = "allocate", "first touch"


@dataclass
class EngramOptions:
    """Plain data (the CI gate builds it from TOML); sizes are per deployment, the run builds one rank."""

    rows: int = 384_000_000
    dim: int = 256
    block_size: int = 32
    tables: int = 1
    tp_size: int = 1
    dp_size: int = 1
    rank: int = 0
    heads: int | None = None
    offload: bool = False
    backing: str | None = None  # pinned (default with --offload), pageable, hugepages or shm
    device: str = "auto"
    methods: list[str] = field(default_factory=lambda: list(DEFAULT_METHODS))
    repeat: int = DEFAULT_REPEAT
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS
    max_memory: int | None = None
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    deadline_s: float | None = None
    dry_run: bool = False

    def spec(self) -> EngramSpec:
        return EngramSpec(
            rows=self.rows,
            dim=self.dim,
            block_size=self.block_size,
            tables=self.tables,
            tp_size=self.tp_size,
            dp_size=self.dp_size,
            rank=self.rank,
            heads=self.heads,
        )


# --- validation and sizing (no allocation) ----------------------------------------------------------


def _check_options(options: EngramOptions) -> list[FillMethod]:
    validate_engram_spec(options.spec())
    if options.backing is not None:
        if options.backing not in BACKINGS:
            raise UsageError("--backing", f"unknown backing {options.backing!r}; choose from: {', '.join(BACKINGS)}")
        if not options.offload:
            raise UsageError(
                "--backing", "host memory kinds only apply with --offload; add --offload or drop --backing"
            )
    if options.repeat < 1:
        raise UsageError("--repeat", f"must be at least 1, got {options.repeat}; try --repeat 3")
    if options.chunk_elements < 1:
        raise UsageError("--chunk-elements", f"must be at least 1, got {options.chunk_elements}; try 64Mi")
    if not options.time_budget_s > 0 or not math.isfinite(options.time_budget_s):
        raise UsageError("--time-budget", f"must be a positive number of seconds, got {options.time_budget_s}")
    if options.deadline_s is not None and not options.deadline_s > 0:
        raise UsageError("--deadline", f"must be a positive number of seconds, got {options.deadline_s}")
    if options.max_memory is not None and options.max_memory < 1:
        raise UsageError("--max-memory", f"must be positive, got {options.max_memory}")
    if not options.methods:
        raise UsageError("--method", f"give at least one method; choose from: {', '.join(DEFAULT_METHODS)}")
    methods: list[FillMethod] = []
    for name in options.methods:
        method = get_method(name)
        if method in methods:
            raise UsageError("--method", f"{name!r} is listed twice")
        methods.append(method)
    if all(m.name != FLOOR for m in methods):
        methods.append(get_method(FLOOR))  # every run measures its own floor
    return methods


def build_layout(spec: EngramSpec, backing: Backing) -> EngramLayout:
    mine = shard(spec)
    weight = mine.part_rows * spec.dim
    scale = mine.part_rows * spec.scale_cols
    parts = []
    if spec.ranks <= MAX_LISTED_RANKS:
        for r in range(spec.ranks):
            s = shard(spec, r)
            parts.append(RankPart(r, s.first_head, s.heads, s.part_rows, rank_table_bytes(spec, r)))
    return EngramLayout(
        rows=spec.rows,
        dim=spec.dim,
        block_size=spec.block_size,
        tables=spec.tables,
        heads=spec.num_heads,
        tp_size=spec.tp_size,
        dp_size=spec.dp_size,
        rank=spec.rank,
        part_rows=mine.part_rows,
        weight_bytes_per_table=weight,
        scale_bytes_per_table=scale,
        table_bytes_per_rank=spec.tables * (weight + scale),
        reserved_bytes_per_rank=reserved_tables(spec, mine.part_rows, backing),
        total_bytes=spec.tables * spec.rows * spec.row_bytes,
        ranks=parts,
    )


def reserved_tables(spec: EngramSpec, part_rows: int, backing: Backing) -> int:
    """Each tensor is its own allocation, rounded by the backing's rule."""
    per_table = backing.reserved_bytes(part_rows * spec.dim) + backing.reserved_bytes(part_rows * spec.scale_cols)
    return spec.tables * per_table


def needed_bytes(spec: EngramSpec, part_rows: int, method: FillMethod, backing: Backing, chunk: int) -> int:
    return reserved_tables(spec, part_rows, backing) + method.scratch_bytes(part_rows * spec.dim, chunk)


def memory_budget(options: EngramOptions, backing: Backing, device: torch.device) -> tuple[int, str]:
    if backing.used == "device":
        free = gpu_free_bytes(device) or 0
        if options.max_memory is not None:
            return min(options.max_memory, free), f"--max-memory, capped by {format_bytes(free)} free on {device}"
        return int(free * 0.9), f"90% of {format_bytes(free)} free on {device}"
    available = available_memory_bytes()
    if options.max_memory is not None:
        budget = min(options.max_memory, available)
        source = f"--max-memory {format_bytes(options.max_memory)}"
        if budget < options.max_memory:
            source += f", capped by {format_bytes(available)} available"
    else:
        budget = int(available * DEFAULT_SHARE)
        source = f"{DEFAULT_SHARE:.0%} of {format_bytes(available)} available (psutil)"
    if backing.used == "shm":
        shm_free = shm_free_bytes()
        if shm_free is not None and shm_free < budget:
            budget, source = shm_free, f"{format_bytes(shm_free)} free in /dev/shm"
    return budget, source


# --- measurement helpers ---------------------------------------------------------------------------


@dataclass
class _Tables:
    arena: Arena
    pairs: list[TablePair]
    rss_before: int


@dataclass
class _Step:
    seconds: float
    bytes_written: int
    scratch_bytes: int
    rss_before: int
    rss_peak: int
    method: str


class _Runner:
    """Allocates, touches and fills, timing each step and keeping the run's worst peak RSS."""

    def __init__(self, spec: EngramSpec, backing: Backing, device: torch.device, chunk: int, clock: Clock) -> None:
        self.spec = spec
        self.backing = backing
        self.device = device
        self.chunk = chunk
        self.clock = clock
        self.run_peak = 0

    def _sync(self) -> None:
        synchronize(self.device)

    def _note_peak(self, peak: PeakRss) -> tuple[int, int, str]:
        reading = peak.reading
        assert reading is not None
        self.run_peak = max(self.run_peak, reading.peak)
        return reading.before, reading.peak, reading.method

    def allocate(self, part_rows: int) -> tuple[_Tables, float]:
        before = rss_bytes()
        arena = Arena(self.backing)
        peak = PeakRss()
        with peak.measure():
            t0 = self.clock()
            pairs = [
                TablePair(
                    arena.empty((part_rows, self.spec.dim), torch.float8_e4m3fn),
                    arena.empty((part_rows, self.spec.scale_cols), torch.uint8),
                )
                for _ in range(self.spec.tables)
            ]
            self._sync()
            seconds = self.clock() - t0
        self._note_peak(peak)
        return _Tables(arena, pairs, before), seconds

    def first_touch(self, tables: _Tables) -> float:
        """The first write to fresh pages: page faults (and zeroing by the kernel) on top of a memset."""
        peak = PeakRss()
        with peak.measure():
            t0 = self.clock()
            for pair in tables.pairs:
                pair.weight.view(torch.uint8).fill_(0)
                pair.scale.fill_(0)
            self._sync()
            seconds = self.clock() - t0
        self._note_peak(peak)
        return seconds

    def fill(self, method: FillMethod, tables: _Tables) -> _Step:
        # No gc.collect() here: a full collection costs ~0.2 s with torch loaded, and fills create no cycles.
        self._sync()
        reset_gpu_peak(self.device)
        peak = PeakRss()
        with peak.measure():
            t0 = self.clock()
            outcome = method.fill(tables.pairs, self.chunk)
            self._sync()
            seconds = self.clock() - t0
        before, top, how = self._note_peak(peak)
        return _Step(seconds, outcome.bytes_written, outcome.scratch_bytes, before, top, how)

    def release(self, tables: _Tables) -> None:
        tables.pairs.clear()
        tables.arena.release()  # collects once, so mapped buffers are unmapped before the next allocation


def _stepped(s: _Step, step: Callable[[str], None], label: str) -> _Step:
    step(label)
    return s


def _median_step(steps: Sequence[_Step]) -> _Step:
    """The median-time reading, keeping the worst peak RSS seen."""
    ordered = sorted(steps, key=lambda s: s.seconds)
    middle = ordered[(len(ordered) - 1) // 2]
    worst = max(steps, key=lambda s: s.rss_peak)
    return _Step(
        middle.seconds, middle.bytes_written, middle.scratch_bytes, worst.rss_before, worst.rss_peak, worst.method
    )


def _values(tables: _Tables) -> ValueStats:
    v = sample_values(tables.pairs)
    return ValueStats(v.sampled, v.weight_zero_share, v.weight_distinct, list(v.scale_values), v.scale_distinct)


@dataclass
class _Calibration:
    rows: int
    seconds_per_row: dict[str, float]  # method name, ALLOCATE, FIRST_TOUCH


def _probe_rows(spec: EngramSpec, methods: Sequence[FillMethod], budget: int, backing: Backing, chunk: int) -> int:
    rows = max(1, min(shard(spec).part_rows, PROBE_WEIGHT_BYTES // spec.dim))
    while rows > 1 and max(needed_bytes(spec, rows, m, backing, chunk) for m in methods) > budget:
        rows //= 2
    if max(needed_bytes(spec, rows, m, backing, chunk) for m in methods) > budget:
        raise DoesNotFitError(
            "--max-memory",
            f"even one row of every method needs more than the {format_bytes(budget)} budget; raise --max-memory",
        )
    return rows


def _calibrate(runner: _Runner, methods: Sequence[FillMethod], rows: int) -> _Calibration:
    tables, alloc_s = runner.allocate(rows)
    touch_s = runner.first_touch(tables)
    per_row = {ALLOCATE: alloc_s / rows, FIRST_TOUCH: touch_s / rows}
    for method in methods:
        per_row[method.name] = runner.fill(method, tables).seconds / rows
    runner.release(tables)
    return _Calibration(rows, per_row)


# --- the run ---------------------------------------------------------------------------------------


@dataclass
class _Plan:
    full: list[FillMethod]
    projected: list[FillMethod]
    reasons: dict[str, str]
    rounds: int = 0
    sample_rows: list[int] = field(default_factory=list)
    sample_rounds: dict[str, int] = field(default_factory=dict)  # cheap methods are repeated, median kept
    full_rounds: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _memory_plan(
    spec: EngramSpec, methods: Sequence[FillMethod], backing: Backing, budget: int, chunk: int
) -> tuple[dict[str, int], dict[str, bool]]:
    part_rows = shard(spec).part_rows
    needs = {m.name: needed_bytes(spec, part_rows, m, backing, chunk) for m in methods}
    return needs, {name: need <= budget for name, need in needs.items()}


def _time_plan(
    spec: EngramSpec,
    methods: Sequence[FillMethod],
    fits: dict[str, bool],
    calibration: _Calibration,
    options: EngramOptions,
    time_left: float,
    budget: int,
    backing: Backing,
) -> _Plan:
    """Measure in full what fits memory, unless one round would overrun the time budget by half or more.

    What does not fit is sampled in the time that is left (at least SAMPLE_SHARE of it).
    """
    part_rows = shard(spec).part_rows
    rate = calibration.seconds_per_row
    full = [m for m in methods if fits[m.name]]
    projected = [m for m in methods if not fits[m.name]]
    reasons = {m.name: "does not fit in memory" for m in projected}
    setup = (rate[ALLOCATE] + rate[FIRST_TOUCH]) * part_rows
    floor_rate = rate[FLOOR]
    cheap = {m.name for m in methods if rate[m.name] <= CHEAP_FACTOR * floor_rate}

    def round_s(ms: Sequence[FillMethod]) -> float:
        return sum(rate[m.name] for m in ms) * part_rows

    reserve = SAMPLE_SHARE * time_left if projected else 0.0
    while full and setup + round_s(full) > FULL_ROUND_OVERRUN * (time_left - reserve):
        candidates = [m for m in full if m.name != FLOOR] or full  # the floor goes last: it is the cheapest
        slowest = max(candidates, key=lambda m: rate[m.name])
        full.remove(slowest)
        projected.append(slowest)
        reasons[slowest.name] = (
            f"one full-size fill would take about {format_seconds(rate[slowest.name] * part_rows)}, "
            f"over the time budget"
        )
        reserve = SAMPLE_SHARE * time_left
    plan = _Plan(full, projected, reasons)
    if full:
        costly = [m for m in full if m.name not in cheap]
        cheap_round = round_s([m for m in full if m.name in cheap])
        spare = time_left - reserve - setup - options.repeat * cheap_round
        if costly:
            per_round = round_s(costly)
            plan.rounds = max(1, min(options.repeat, int(spare / per_round) if per_round > 0 else 1))
            if plan.rounds < options.repeat:
                plan.notes.append(
                    f"measured {plan.rounds} of {options.repeat} rounds at full size for "
                    f"{', '.join(m.name for m in costly)}: one round takes about {format_seconds(per_round)} "
                    f"and the time budget is {format_seconds(options.time_budget_s)}"
                )
        else:
            plan.rounds = options.repeat
        # Memory-bound fills take milliseconds; repeating them costs little and steadies the floor.
        plan.full_rounds = {m.name: options.repeat if m.name in cheap else plan.rounds for m in full}
        time_left -= setup + sum(rate[m] * part_rows * n for m, n in plan.full_rounds.items())
    return plan


def _plan_samples(
    spec: EngramSpec,
    plan: _Plan,
    methods: Sequence[FillMethod],
    rate: dict[str, float],
    options: EngramOptions,
    time_left: float,
    budget: int,
    backing: Backing,
) -> list[FillMethod]:
    """Sample sizes for the projected methods, planned after the full-size work with the time really left."""
    floor_rate = rate[FLOOR]
    sampled = _sampled_methods(plan.projected, methods, plan.full)
    plan.sample_rounds = {m.name: options.repeat if rate[m.name] <= CHEAP_FACTOR * floor_rate else 1 for m in sampled}
    seconds_per_row = sum(rate[m.name] * plan.sample_rounds[m.name] for m in sampled)
    seconds_per_row += rate[ALLOCATE] + rate[FIRST_TOUCH]
    seconds_per_row *= SAMPLE_TIME_SAFETY
    bytes_per_row = (
        spec.tables * (backing.reserved_bytes(spec.dim) + backing.reserved_bytes(spec.scale_cols))
        + max(m.scratch_per_element for m in sampled) * spec.dim
    )
    try:
        plan.sample_rows = sample_sizes(
            shard(spec).part_rows,
            seconds_per_row=seconds_per_row,
            bytes_per_row=bytes_per_row,
            fixed_bytes=_rounding_slack(spec, backing),
            memory_budget=budget,
            time_budget=max(time_left, MIN_SAMPLE_SHARE * options.time_budget_s),
        )
    except SamplingError as exc:
        names = ", ".join(m.name for m in plan.projected)
        raise DoesNotFitError(
            "--time-budget", f"cannot project {names}: {exc}; raise --time-budget or --max-memory"
        ) from None
    return sampled


def _rounding_slack(spec: EngramSpec, backing: Backing) -> int:
    """Rounding a small sample can add up to one unit per allocation; pinned rounding is checked per size."""
    return 2 * spec.tables * backing.reserved_bytes(1)


def _sampled_methods(
    projected: Sequence[FillMethod], methods: Sequence[FillMethod], full: Sequence[FillMethod]
) -> list[FillMethod]:
    """Projected methods, plus the floor when it is not measured in full (percent of floor needs it)."""
    floor = [m for m in methods if m.name == FLOOR and m not in full and m not in projected]
    return list(projected) + floor


def _method_result(
    method: FillMethod, spec: EngramSpec, layout: EngramLayout, need: int, fits: bool, chunk: int
) -> MethodResult:
    return MethodResult(
        name=method.name,
        origin=method.origin,
        description=method.description,
        fits_in_memory=fits,
        needed_bytes=need,
        peak_scratch_bytes=method.scratch_bytes(layout.part_rows * spec.dim, chunk),
        bytes_written=spec.tables * method.bytes_written(layout.weight_bytes_per_table, layout.scale_bytes_per_table),
    )


def run(
    options: EngramOptions,
    *,
    clock: Clock = time.perf_counter,
    progress: Progress | None = None,
) -> Results:
    """Validate, plan, measure (or project) and return the engram Results."""
    started = clock()
    methods = _check_options(options)
    spec = options.spec()
    device = resolve_device(options.device) if not options.offload else torch.device("cpu")
    backing = resolve_backing(options.backing or "pinned", offload=options.offload, device=device)
    layout = build_layout(spec, backing)
    budget, source = memory_budget(options, backing, device)
    needs, fits = _memory_plan(spec, methods, backing, budget, options.chunk_elements)
    result = EngramResult(
        layout=layout,
        backing=_backing_info(backing),
        budget=Budget(budget, source, options.time_budget_s, options.deadline_s),
        repeat=options.repeat,
        chunk_elements=options.chunk_elements,
        dry_run=options.dry_run,
        methods=[_method_result(m, spec, layout, needs[m.name], fits[m.name], options.chunk_elements) for m in methods],
    )
    results = Results(command="engram", environment=collect_environment(device), engram=result)
    if backing.used != backing.requested and backing.requested != "device":
        results.notices.append(backing.note)
    if options.dry_run:
        _dry_run(result)
        results.summary = summary_line(result)
        return results

    runner = _Runner(spec, backing, device, options.chunk_elements, clock)
    probe = _probe_rows(spec, methods, budget, backing, options.chunk_elements)
    calibration = _calibrate(runner, methods, probe)
    plan = _time_plan(
        spec, methods, fits, calibration, options, options.time_budget_s - (clock() - started), budget, backing
    )
    for projected in plan.projected:
        entry = result.method(projected.name)
        entry.mode, entry.reason = PROJECTED, plan.reasons[projected.name]
    total_steps = [1 + sum(plan.full_rounds.values())]
    done = [1]

    def step(label: str) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total_steps[0], label)

    if progress is not None:
        progress(1, total_steps[0], f"calibrated on {probe:,} rows")
    rate = dict(calibration.seconds_per_row)
    if plan.full:
        _measure_full(runner, plan, result, step)
        # First touch of many GiB can be far slower than on the probe (page reclaim); trust the full figure.
        for phase in result.phases:
            if phase.seconds.value is not None:
                rate[phase.name] = max(rate[phase.name], phase.seconds.value / max(1, result.layout.part_rows))
    if plan.projected:
        time_left = options.time_budget_s - (clock() - started)
        sampled = _plan_samples(spec, plan, methods, rate, options, time_left, budget, backing)
        total_steps[0] += len(plan.sample_rows) * sum(plan.sample_rounds.get(m.name, 1) for m in sampled)
        _measure_samples(runner, plan, result, sampled, step)
    if not plan.full:
        result.gpu = _unallocated_device_figures(device)
    _derive(result)
    result.rounds_measured = plan.rounds
    result.plan_notes.extend(plan.notes)
    result.run_peak_rss_bytes = runner.run_peak or None
    if backing.note and backing.used == backing.requested:
        result.plan_notes.append(backing.note)
    results.summary = summary_line(result)
    return results


def _backing_info(backing: Backing) -> BackingInfo:
    """Measured figures start as unavailable, with the reason, until a full-size allocation fills them in."""
    if backing.used == "pinned":
        reserved = Figure.missing("full tables not allocated here (see the computed figure)")
    else:
        reserved = Figure.missing(f"{backing.used} memory: only torch's CUDA pinned allocator reports reserved bytes")
    huge = Figure.missing(
        "full tables not allocated here"
        if backing.used == "hugepages"
        else f"{backing.used} memory: no huge pages asked"
    )
    return BackingInfo(
        backing.requested,
        backing.used,
        backing.device,
        backing.note,
        backing.rounding,
        reserved_measured_bytes=reserved,
        huge_page_bytes=huge,
    )


def _unallocated_device_figures(device: torch.device) -> MemoryUse:
    """Pinned and GPU figures describe the full tables; say why there are none rather than print 0."""
    not_here = "full tables not allocated here (projected run)"

    def why(figure: Figure) -> Figure:
        return figure if figure.value is None else Figure.missing(not_here)

    return MemoryUse(
        pinned_bytes=why(pinned_memory_figure()),
        gpu_used_bytes=why(gpu_used_figure(device)),
        gpu_allocator_peak_bytes=why(gpu_allocator_peak_figure(device)),
    )


def _dry_run(result: EngramResult) -> None:
    nothing = Figure.missing("dry run: nothing allocated")
    result.gpu = MemoryUse(pinned_bytes=nothing, gpu_used_bytes=nothing, gpu_allocator_peak_bytes=nothing)
    for m in result.methods:
        m.mode = PLANNED
        m.peak_rss_bytes = m.seconds = Figure.missing("dry run: nothing allocated")
        m.reason = (
            "fits: measured in full unless the calibration at start-up says one round exceeds the time budget"
            if m.fits_in_memory
            else "does not fit in memory: will be projected from samples"
        )


def _measure_full(runner: _Runner, plan: _Plan, result: EngramResult, step: Callable[[str], None]) -> None:
    layout = result.layout
    pinned_before = pinned_reserved_bytes() if runner.backing.used == "pinned" else None
    huge_before = anon_huge_page_bytes() if runner.backing.used == "hugepages" else None
    tables, alloc_s = runner.allocate(layout.part_rows)
    after = pinned_reserved_bytes() if runner.backing.used == "pinned" else None
    if pinned_before is not None and after is not None:
        result.backing.reserved_measured_bytes = Figure(float(after - pinned_before))
    elif runner.backing.used == "pinned":
        result.backing.reserved_measured_bytes = Figure.missing("torch.cuda.host_memory_stats() reports no bytes")
    touch_s = runner.first_touch(tables)
    if runner.backing.used == "hugepages":
        after_huge = anon_huge_page_bytes()
        if huge_before is not None and after_huge is not None:
            result.backing.huge_page_bytes = Figure(float(after_huge - huge_before))
        else:
            result.backing.huge_page_bytes = Figure.missing("/proc/self/smaps_rollup has no AnonHugePages")
    table_bytes = layout.table_bytes_per_rank
    result.phases = [
        PhaseResult(ALLOCATE, MEASURED, table_bytes, Figure(alloc_s), Timing([alloc_s])),
        PhaseResult(FIRST_TOUCH, MEASURED, table_bytes, Figure(touch_s), Timing([touch_s])),
    ]
    worst: dict[str, _Step] = {}
    most = max(plan.full_rounds.values())
    for round_index in range(most):
        for method in plan.full:
            if round_index >= plan.full_rounds[method.name]:
                continue
            s = runner.fill(method, tables)
            entry = result.method(method.name)
            entry.timing.samples_s.append(s.seconds)
            entry.measured_scratch_bytes = s.scratch_bytes
            if method.name not in worst or s.rss_peak > worst[method.name].rss_peak:
                worst[method.name] = s
            if round_index == plan.full_rounds[method.name] - 1:
                entry.values = _values(tables)
            step(f"round {round_index + 1}/{plan.full_rounds[method.name]}: {method.name}")
    for name, s in worst.items():
        entry = result.method(name)
        entry.memory = MemoryUse(
            rss_before_bytes=s.rss_before,
            rss_peak_bytes=s.rss_peak,
            rss_peak_method=s.method,
            pinned_bytes=pinned_memory_figure(),
            gpu_used_bytes=gpu_used_figure(runner.device),
            gpu_allocator_peak_bytes=gpu_allocator_peak_figure(runner.device),
        )
        entry.peak_rss_bytes = Figure(float(s.rss_peak))
    result.gpu = MemoryUse(
        pinned_bytes=pinned_memory_figure(),
        gpu_used_bytes=gpu_used_figure(runner.device),
        gpu_allocator_peak_bytes=gpu_allocator_peak_figure(runner.device),
    )
    runner.release(tables)


def _measure_samples(
    runner: _Runner, plan: _Plan, result: EngramResult, sampled: Sequence[FillMethod], step: Callable[[str], None]
) -> None:
    spec = runner.spec
    phase_points: dict[str, list[SamplePoint]] = {ALLOCATE: [], FIRST_TOUCH: []}
    points: dict[str, list[SamplePoint]] = {m.name: [] for m in sampled}
    huge_note = None
    for index, rows in enumerate(plan.sample_rows):
        huge_before = anon_huge_page_bytes() if runner.backing.used == "hugepages" else None
        tables, alloc_s = runner.allocate(rows)
        touch_s = runner.first_touch(tables)
        table_bytes = spec.tables * rows * spec.row_bytes
        reserved = reserved_tables(spec, rows, runner.backing)
        phase_points[ALLOCATE].append(SamplePoint(rows, table_bytes, reserved, alloc_s))
        phase_points[FIRST_TOUCH].append(SamplePoint(rows, table_bytes, reserved, touch_s))
        if huge_before is not None and index == len(plan.sample_rows) - 1:
            after = anon_huge_page_bytes()
            if after is not None:
                huge_note = Figure(float(after - huge_before), projected=False)
        for method in sampled:
            s = _median_step(
                [
                    _stepped(
                        runner.fill(method, tables),
                        step,
                        f"sample {index + 1}/{len(plan.sample_rows)} ({rows:,} rows): {method.name}",
                    )
                    for _ in range(plan.sample_rounds.get(method.name, 1))
                ]
            )
            need = reserved + method.scratch_bytes(rows * spec.dim, runner.chunk)
            points[method.name].append(
                SamplePoint(rows, s.bytes_written, need, s.seconds, s.rss_peak - tables.rss_before, s.scratch_bytes)
            )
            if index == len(plan.sample_rows) - 1:
                entry = result.method(method.name)
                if entry.values is None:
                    entry.values = _values(tables)
        base_rss = tables.rss_before
        runner.release(tables)
    if huge_note is not None:
        result.backing.huge_page_bytes = huge_note
        result.plan_notes.append("huge-page bytes were read back on the largest sample, not the full table")
    if not result.phases:
        table_bytes = result.layout.table_bytes_per_rank
        for name in (ALLOCATE, FIRST_TOUCH):
            pts = phase_points[name]
            fit = fit_time([p.bytes_written for p in pts], [p.seconds for p in pts])
            result.phases.append(
                PhaseResult(
                    name,
                    PROJECTED,
                    table_bytes,
                    Figure(project(fit, table_bytes), projected=True),
                    samples=pts,
                    time_fit=fit,
                )
            )
    for method in sampled:
        entry = result.method(method.name)
        pts = points[method.name]
        entry.samples = pts
        entry.time_fit = fit_time([p.bytes_written for p in pts], [p.seconds for p in pts])
        entry.seconds = Figure(project(entry.time_fit, entry.bytes_written), projected=True)
        growth = [p.rss_growth_bytes for p in pts]
        if all(g is not None for g in growth):
            entry.memory_fit = fit_proportional([p.needed_bytes for p in pts], [float(g or 0) for g in growth])
            # Never below the computed need: small samples can reuse freed heap pages (glibc serves blocks under
            # its 32 MiB mmap threshold from memory it kept), so their growth understates what full size faults in.
            fitted = project(entry.memory_fit, entry.needed_bytes)
            entry.peak_rss_bytes = Figure(base_rss + max(fitted, entry.needed_bytes), projected=True)
    result.plan_notes.append(
        f"projected from {len(plan.sample_rows)} sample sizes of {plan.sample_rows[0]:,} to {plan.sample_rows[-1]:,} "
        f"rows per table ({result.layout.part_rows / plan.sample_rows[-1]:,.0f}x extrapolation to "
        f"{result.layout.part_rows:,} rows)"
    )


def _derive(result: EngramResult) -> None:
    """Seconds, rates, share of the floor, start-up time and the deadline, from what was measured or fitted."""
    for m in result.methods:
        if m.mode == MEASURED and m.timing.samples_s:
            median = m.timing.median
            assert median is not None
            m.seconds = Figure(median)
    floor = next((m for m in result.methods if m.name == result.floor_method), None)
    setup = [p.seconds for p in result.phases]
    for m in result.methods:
        if m.seconds.value is None:
            continue
        if m.seconds.value > 0:
            m.gb_per_s = Figure(m.bytes_written / m.seconds.value / 1e9, projected=m.seconds.projected)
        if floor is not None and floor.seconds.value and m.gb_per_s.value:
            floor_rate = floor.bytes_written / floor.seconds.value / 1e9
            m.percent_of_floor = Figure(
                100 * m.gb_per_s.value / floor_rate, projected=m.seconds.projected or floor.seconds.projected
            )
        if setup and all(s.value is not None for s in setup):
            total = m.seconds.value + sum(s.value or 0.0 for s in setup)
            m.startup_seconds = Figure(total, projected=m.seconds.projected or any(s.projected for s in setup))
            if result.budget.deadline_s is not None:
                m.over_deadline = total > result.budget.deadline_s


def summary_line(result: EngramResult) -> str:
    parts = []
    for m in result.methods:
        if m.name == result.floor_method:
            continue
        if m.fits_in_memory:
            text = f"{m.name}: {format_bytes(m.needed_bytes)} per rank"
        else:
            text = f"{m.name}: needs {format_bytes(m.needed_bytes)} per rank, does not fit here"
        if m.startup_seconds.value is not None:
            kind = "projected" if m.startup_seconds.projected else "measured"
            text += f", {kind} start-up {format_seconds(m.startup_seconds.value)}"
            if m.over_deadline:
                text += f" (over the {format_seconds(result.budget.deadline_s)} deadline)"
        elif m.mode == PLANNED:
            text += ", measured in full" if m.fits_in_memory else ", to be projected"
        parts.append(text)
    head = "plan (dry run): " if result.dry_run else ""
    return head + "; ".join(parts)
