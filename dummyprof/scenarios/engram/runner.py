"""Measurement for ``engram``: what ``plan`` decided (probe, full-size rounds, samples) on one rank's tables, then
the samples projected to full size, and rates, share of the floor and start-up time derived."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar

import torch

from dummyprof.allocation.backings import Arena, Backing, anon_huge_page_bytes, pinned_reserved_bytes
from dummyprof.loaders.fp8_methods import FillMethod, TablePair, sample_values
from dummyprof.loaders.outcome import FillOutcome
from dummyprof.measure import engine
from dummyprof.measure.device import synchronize
from dummyprof.measure.memory import (
    PeakReading,
    PeakRss,
    engine_maps_afresh,
    heap_reused,
    memory_use,
    reset_gpu_peak,
    rss_bytes,
)
from dummyprof.measure.projection import fit_line, fit_proportional
from dummyprof.measure.roofline import generator_bound, share_of_floor
from dummyprof.models.engram import EngramSpec, EngramTable
from dummyprof.results.common import Estimate, FirstTouch, MemoryUse, copied
from dummyprof.results.engram import (
    FALLBACK_FLAT,
    FALLBACK_POOR_FIT,
    FASTER_THAN_FLOOR,
    MEASURED,
    NO_ANON_HUGE_PAGES,
    NO_HOST_MEMORY_STATS,
    NOT_ALLOCATED_PROJECTED,
    PROJECTED,
    EngramLayout,
    EngramResult,
    LinearFit,
    MethodResult,
    PhaseResult,
    SampleGroupInfo,
    SampleOverrun,
    SamplePoint,
    TimeProjection,
    ValueStats,
)
from dummyprof.results.verdict import MISSED, judge
from dummyprof.scenarios.engram.plan import ALLOCATE, FILL, FIRST_TOUCH, Plan, Rates, SampleGroup, reserved_tables

Clock = Callable[[], float]
T = TypeVar("T")


class RankSync(Protocol):
    """``ranks.world.World``: a barrier before every timed step, rank 0's value (its plan) broadcast to all."""

    def barrier(self, label: str) -> None: ...

    def broadcast(self, label: str, value: T) -> T: ...


class _NoSync:
    def barrier(self, label: str) -> None:
        pass

    def broadcast(self, label: str, value: T) -> T:
        return value


NO_SYNC: RankSync = _NoSync()


@dataclass
class Tables:
    arena: Arena
    modules: list[EngramTable]
    pairs: list[TablePair]
    rss_before: int


@dataclass
class Step:
    seconds: float
    outcome: FillOutcome
    peak: PeakReading


@dataclass
class Runner:
    """Allocates, touches and fills, timing each step (after a barrier) and keeping the worst peak RSS."""

    spec: EngramSpec
    backing: Backing
    device: torch.device
    chunk: int
    clock: Clock
    sync: RankSync = NO_SYNC
    run_peak: int = field(default=0, init=False)

    def _timed(self, label: str, work: Callable[[], T]) -> tuple[T, float, PeakReading]:
        self.sync.barrier(label)
        peak = PeakRss()
        with peak.measure():
            t0 = self.clock()
            value = work()
            synchronize(self.device)
            seconds = self.clock() - t0
        reading = peak.reading
        assert reading is not None
        self.run_peak = max(self.run_peak, reading.peak)
        return value, seconds, reading

    def allocate(self, part_rows: int) -> tuple[Tables, float]:
        before = rss_bytes()
        arena = Arena(self.backing)

        def build() -> list[EngramTable]:  # the model's own tables, in the backing's memory
            spec = self.spec
            return [EngramTable(part_rows, spec.dim, spec.block_size, empty=arena.empty) for _ in range(spec.tables)]

        modules, seconds, _ = self._timed("allocate", build)
        pairs = [TablePair(m.weight, m.weight_scale_inv) for m in modules]
        return Tables(arena, modules, pairs, before), seconds

    def first_touch(self, tables: Tables) -> float:
        """The first write to fresh pages: page faults (and zeroing by the kernel) on top of a memset."""

        def touch() -> None:
            for pair in tables.pairs:
                pair.weight.view(torch.uint8).fill_(0)
                pair.scale.fill_(0)

        return self._timed("first touch", touch)[1]

    def fill(self, method: FillMethod, tables: Tables) -> Step:
        # No gc.collect(): ~0.2 s with torch loaded, and fills create no cycles. `constant` fills the tables
        # declared (dummy_weight_value) as offloaded tables are; the others fill them undeclared.
        for module in tables.modules:
            module.declare(method.declared)
        synchronize(self.device)
        reset_gpu_peak(self.device)
        outcome, seconds, peak = self._timed(f"fill {method.name}", lambda: method.fill(tables.pairs, self.chunk))
        return Step(seconds, outcome, peak)

    def fills(
        self, tables: Tables, methods: Sequence[FillMethod], rounds: dict[str, int], done: Callable[[str, int], None]
    ) -> dict[str, list[Step]]:
        """Every method filled on ``tables`` for its ``rounds``, round by round across the methods; ``done`` after
        each fill, with the method's name and the round (from 1): the calibration, full-size rounds and samples."""
        steps: dict[str, list[Step]] = {m.name: [] for m in methods}
        for r in range(1, max(rounds.values(), default=0) + 1):
            for method in [m for m in methods if r <= rounds[m.name]]:
                steps[method.name].append(self.fill(method, tables))
                done(method.name, r)
        return steps

    def release(self, tables: Tables) -> None:
        tables.pairs.clear()
        tables.modules.clear()
        tables.arena.release()  # mapped buffers are unmapped before the next allocation


def _median_step(steps: Sequence[Step]) -> Step:
    """The median-time reading, keeping the worst peak RSS seen."""
    middle = sorted(steps, key=lambda s: s.seconds)[(len(steps) - 1) // 2]
    return replace(middle, peak=max(steps, key=lambda s: s.peak.peak).peak)


def _values(tables: Tables) -> ValueStats:
    v = sample_values(tables.pairs)
    return copied(ValueStats, v, scale_values=list(v.scale_values))


def _growth(before: int | None, after: int | None, missing: str) -> Estimate:
    return Estimate(float(after - before)) if before is not None and after is not None else Estimate.missing(missing)


def calibrate(runner: Runner, methods: Sequence[FillMethod], rows: int) -> Rates:
    tables, alloc_s = runner.allocate(rows)
    touch_s = runner.first_touch(tables)
    per_row = {ALLOCATE: alloc_s / rows, FIRST_TOUCH: touch_s / rows}
    for name, steps in runner.fills(tables, methods, {m.name: 1 for m in methods}, lambda *_: None).items():
        per_row[name] = steps[0].seconds / rows
    runner.release(tables)
    return per_row


def measure_full(runner: Runner, plan: Plan, result: EngramResult, step: Callable[[str], None]) -> None:
    layout = result.layout
    counted = runner.backing.caching_host_allocator  # host_memory_stats() sees these, not cudaHostRegister
    huge = runner.backing.used == "hugepages"
    pinned_before = pinned_reserved_bytes() if counted else None
    huge_before = anon_huge_page_bytes() if huge else None
    tables, alloc_s = runner.allocate(layout.part_rows)
    if counted:
        result.backing.reserved_measured_bytes = _growth(pinned_before, pinned_reserved_bytes(), NO_HOST_MEMORY_STATS)
    touch_s = runner.first_touch(tables)
    if huge:
        result.backing.huge_page_bytes = _growth(huge_before, anon_huge_page_bytes(), NO_ANON_HUGE_PAGES)
    table_bytes = layout.table_bytes_per_rank
    result.phases = [
        PhaseResult(ALLOCATE, MEASURED, table_bytes, Estimate.measured([alloc_s], device=runner.device.type)),
        PhaseResult(FIRST_TOUCH, MEASURED, table_bytes, Estimate.measured([touch_s], device=runner.device.type)),
    ]

    def done(name: str, r: int) -> None:
        if r == plan.full_rounds[name]:
            result.method(name).values = _values(tables)
        step(f"round {r}/{plan.full_rounds[name]}: {name}")

    worst: dict[str, Step] = {}
    for name, steps in runner.fills(tables, plan.full, plan.full_rounds, done).items():
        entry = result.method(name)
        entry.time = Estimate.measured([s.seconds for s in steps], device=runner.device.type)
        entry.measured_scratch_bytes = steps[-1].outcome.scratch_bytes
        worst[name] = max(steps, key=lambda s: s.peak.peak)
    for name, s in worst.items():
        entry = result.method(name)
        entry.memory = memory_use(runner.device, s.peak)
        entry.peak_rss_bytes = Estimate(float(s.peak.peak))
    result.gpu = memory_use(runner.device)
    runner.release(tables)


MIN_SAMPLE_SIZES = 3  # a group keeps at least this many sizes however late: a line needs them


def _late(runner: Runner, group: SampleGroup, rows: int, took: dict[int, float], deadline: float | None) -> bool:
    """Whether sample size ``rows`` of ``group`` is predicted (its last size measured, scaled by rows) to end past
    ``deadline``; rank 0 decides for all."""
    if deadline is None:
        return False
    last = max(r for r in group.rows if r in took)
    return runner.sync.broadcast("sample cut", runner.clock() + took[last] * rows / last > deadline)


def _minimum_overrun(plan: Plan, took: dict[int, float], now: float, deadline: float | None) -> float | None:
    """Seconds past ``deadline`` the sizes each group still needs for MIN_SAMPLE_SIZES are predicted to end
    (scaled by rows from its last size measured); None when they fit or nothing is predicted."""
    if deadline is None:
        return None
    needed: dict[int, float] = {}
    for group in plan.sample_groups:
        done = [r for r in group.rows if r in took]
        if done:
            for rows in [r for r in group.rows if r not in took][: max(0, MIN_SAMPLE_SIZES - len(done))]:
                needed[rows] = max(needed.get(rows, 0.0), took[done[-1]] * rows / done[-1])
    over = now + sum(needed.values()) - deadline
    return over if needed and over > 0 else None


@dataclass
class _Sampling:
    """What sampling the groups gathers: each size's phase and fill readings, how long each size took."""

    phases: dict[str, list[SamplePoint]]
    points: dict[str, list[SamplePoint]]
    step: Callable[[str], None]
    took: dict[int, float] = field(default_factory=dict)
    base_rss: int = 0
    huge: Estimate | None = None
    predicted: tuple[int, float] | None = None  # after which size the least sampling was predicted to overrun


KEPT_SLACK = 1 << 20  # the allocator's headers around a kept block


def fresh_scratch_bytes(method: FillMethod, weight_elements: int, chunk: int, tables: int = 1) -> int:
    """Bytes of temporaries a fill of ``tables`` tables maps afresh (an engine's worker: glibc's threshold), its first
    touch of them; the smaller ones come back from heap touched before."""
    return tables * sum(t for t in method.temporaries(weight_elements, chunk) if engine_maps_afresh(t))


def _touch_point(pages: FirstTouch, threads: int) -> Callable[[int], float]:
    return lambda n: pages.price(n, threads)[0]


def on_touched(
    points: Sequence[SamplePoint], method: FillMethod, layout: EngramLayout, chunk: int, price: Callable[[int], float]
) -> list[SamplePoint]:
    """``points`` with each reading less the first touch (``price``) of the temporaries its fill mapped afresh (32 MiB
    or more; the smaller ones came from the kept heap): every reading on touched memory, so that sizes on both sides
    of the threshold make one line."""
    adjusted = []
    for p in points:
        fresh = price(fresh_scratch_bytes(method, p.part_rows * layout.dim, chunk, layout.tables))
        readings = [max(0.0, r - fresh) for r in p.time.samples]
        adjusted.append(copied(SamplePoint, p, time=Estimate.measured(readings)) if fresh else p)
    return adjusted


def _sample_size(
    runner: Runner, plan: Plan, result: EngramResult, group: SampleGroup, rows: int, into: _Sampling
) -> None:
    """One sample size of ``group``: allocate, first-touch and fill every method of the group for its rounds, the
    median round a point (its readings kept) and the tables' values after it."""
    spec, started = runner.spec, runner.clock()
    largest = rows == plan.sample_rows[-1]
    huge_before = anon_huge_page_bytes() if runner.backing.used == "hugepages" and largest else None
    tables, alloc_s = runner.allocate(rows)
    touch_s = runner.first_touch(tables)
    table_bytes, reserved = spec.tables * rows * spec.row_bytes, reserved_tables(spec, rows, runner.backing)
    for phase, seconds in ((ALLOCATE, alloc_s), (FIRST_TOUCH, touch_s)):
        into.phases[phase].append(SamplePoint(rows, table_bytes, reserved, Estimate.measured([seconds])))
    if huge_before is not None and (after := anon_huge_page_bytes()) is not None:
        into.huge = Estimate(float(after - huge_before))
    k = group.rows.index(rows) + 1

    def done(name: str, r: int) -> None:
        into.step(f"sample {k}/{len(group.rows)} ({rows:,} rows): {name}")
        if r == group.rounds[name]:  # sampled methods are never filled in full: the largest size's values
            result.method(name).values = _values(tables)

    elements, chunk = spec.dim * rows, runner.chunk  # per table: tables are filled one after another
    kept = max(sum(m.temporaries(elements, chunk)) - fresh_scratch_bytes(m, elements, chunk) for m in group.methods)
    with heap_reused(runner.device, grown=kept > 0, kept_bytes=kept + KEPT_SLACK):
        filled = runner.fills(tables, group.methods, group.rounds, done)
    for method in group.methods:
        readings = filled[method.name]
        s = _median_step(readings)
        need = reserved + method.scratch_bytes(rows * spec.dim, runner.chunk)
        times, rss = Estimate.measured([r.seconds for r in readings]), s.peak.peak - tables.rss_before
        point = SamplePoint(rows, s.outcome.bytes_written, need, times, rss, s.outcome.scratch_bytes)
        into.points[method.name].append(point)
    into.base_rss = tables.rss_before
    runner.release(tables)
    into.took[rows] = runner.clock() - started


def measure_samples(
    runner: Runner,
    plan: Plan,
    result: EngramResult,
    sampled: Sequence[FillMethod],
    step: Callable[[str], None],
    deadline: float | None = None,
) -> dict[str, list[SamplePoint]]:
    """Each group sampled on the engine (``engine.timed_trials``: sizes ascending, each allocated, first-touched
    and filled by the group's methods on a kept heap): the allocation's and first touch's points, by size.

    A size predicted (its group's last size, scaled by rows) to end past ``deadline`` is left out once its group
    has MIN_SAMPLE_SIZES sizes (a machine busier than at calibration once ran 77 s against 40 s); rank 0 decides
    for all. Ending past it anyway is ``result.sample_overrun``.
    """
    into = _Sampling({ALLOCATE: [], FIRST_TOUCH: []}, {m.name: [] for m in sampled}, step)
    for group in sorted(plan.sample_groups, key=lambda g: g.rows[0]):

        def at(rows: int, group: SampleGroup = group) -> None:
            _sample_size(runner, plan, result, group, rows, into)
            if into.predicted is None:  # the earliest prediction, kept for the report should the run overrun
                over = _minimum_overrun(plan, into.took, runner.clock(), deadline)
                into.predicted = None if over is None else (rows, over)

        def late(rows: int, group: SampleGroup = group) -> bool:
            return _late(runner, group, rows, into.took, deadline)

        readings = engine.timed_trials(group.rows, at, late=late, rounds=1, least=MIN_SAMPLE_SIZES)
        result.sample_sizes_cut += [r for r, taken in zip(group.rows, readings, strict=True) if not taken]
    if deadline is not None and runner.clock() > deadline:
        result.sample_overrun = SampleOverrun(runner.clock() - deadline, result.budget.time_s)
        if into.predicted is not None:
            result.sample_overrun.predicted_after_rows, result.sample_overrun.predicted_over_s = into.predicted
    if into.huge is not None:
        result.backing.huge_page_bytes = into.huge
        result.huge_pages_from_sample = True
    for method in sampled:
        entry = result.method(method.name)
        entry.samples = into.points[method.name]
        growth = [float(p.rss_growth_bytes or 0) for p in entry.samples]  # every point above has one
        entry.memory_fit = fit_proportional([p.needed_bytes for p in entry.samples], growth)
        # The RSS before the tables plus the computed need, as a measured peak is. Not the fitted growth: small
        # samples reuse freed heap pages (under glibc's 32 MiB mmap threshold), and page-cache noise once fitted
        # x1.342, more than the fill can hold. The fit stays in the report as RSS/need.
        entry.peak_rss_bytes = Estimate.projected(into.base_rss + entry.needed_bytes)
    result.sample_groups = [
        SampleGroupInfo(
            g.memory_bound, [m.name for m in g.methods], [r for r in g.rows if r in into.took], max(g.rounds.values())
        )
        for g in plan.sample_groups
    ]
    return {k: sorted(v, key=lambda p: p.part_rows) for k, v in into.phases.items()}


def floor_rate(result: EngramResult) -> float | None:
    """Bytes per second of the memset floor at full size (its median, or projected)."""
    floor = result.floor()
    if floor is None:
        return None
    return floor.bytes_written / floor.time.value if floor.time.value else None


def _fastest(points: Sequence[SamplePoint]) -> float | None:
    """Bytes per second of the fastest reading at any size: what this run measured the operation doing."""
    return max((p.bytes_written / r for p in points for r in p.time.samples if r > 0), default=None)


FIXED_R_SQUARED = 0.9  # below it, a fixed step's line is noise around its median reading


def _projected(
    points: Sequence[SamplePoint],
    nbytes: int,
    ceiling: tuple[float | None, str],
    device: str,
    *,
    fixed: bool = False,
    touched: int = 0,
    touch_threads: int = 1,
    pages: FirstTouch | None = None,
) -> tuple[LinearFit, TimeProjection]:
    """``points`` projected to ``nbytes`` by the engine (the medians' line, its slope bounds), never faster than the
    ceiling's rate: the fit used, and the projection (its ``line``: the medians' least squares, always fitted). A
    line that does not rise gives way to the largest sample's rate through the origin, between the fastest and
    slowest per-byte reading; ``fixed``, a step that need not grow with bytes (mapping pageable memory), to the
    median of its readings, also where the line is poor. ``touched``: the temporaries the full size maps afresh
    (``points`` on touched memory), priced by ``pages`` (this run's first-touch probe) over ``touch_threads``."""
    sampled = engine.fitted([p.bytes_written for p in points], [p.time.samples for p in points])
    line, largest = fit_line(sampled.sizes, [statistics.median(t) for t in sampled.trials]), max(sampled.sizes)
    flat = line.slope <= 0
    if flat:  # the per-byte rates of every reading bound it, as no line can
        per_byte = [r / p.bytes_written for p in points for r in p.time.samples]
        slope = statistics.median(sampled.trials[-1]) / largest
        sampled.fit = LinearFit(slope=slope, r_squared=line.r_squared, points=1, x_max=largest, model="b x")
        sampled.fit_low, sampled.fit_high = LinearFit(slope=min(per_byte)), LinearFit(slope=max(per_byte))
    rate, name = ceiling
    floors = engine.Floors(memset_bytes_per_s=rate or 0.0, pages=pages)
    costs = engine.cost(sampled, nbytes, calls=0)
    timed = engine.project(costs, nbytes, floors, touched=touched, touch_threads=touch_threads, device=device)
    projection = TimeProjection(
        time=timed.time,
        interval="readings" if flat else "slopes",
        line=line,
        fallback=FALLBACK_FLAT if flat else "",
        rate_bytes=largest if flat else 0,
        ceiling_bytes_per_s=rate,
        ceiling_name=name if rate else "",
        bounded=timed.floor_bound,
        extrapolation=nbytes / largest,
        fresh_bytes=touched if pages is not None else 0,
        first_touch_s=timed.first_touch_s,
    )
    if not (fixed and (flat or line.r_squared < FIXED_R_SQUARED)):
        return sampled.fit, projection
    readings = sorted(r for p in points for r in p.time.samples)
    median = statistics.median(readings)
    projection.time = Estimate.projected(median, readings[0], readings[-1], device=device)
    projection.interval, projection.bounded, projection.rate_bytes = "readings", False, 0
    projection.min_r_squared = FIXED_R_SQUARED
    projection.fallback = FALLBACK_FLAT if flat else FALLBACK_POOR_FIT
    fit = LinearFit(intercept=median, r_squared=line.r_squared, points=len(readings), x_max=largest, model="a")
    return fit, projection


def project_samples(
    result: EngramResult,
    sampled: Sequence[FillMethod],
    phase_points: dict[str, list[SamplePoint]],
    pages: FirstTouch | None = None,
) -> None:
    """Project every sampled figure on the engine: the floor bounded by its fastest reading, every other fill by
    the floor's rate, first touch by both, allocation (address space, no bytes moved) by nothing. The first touch
    of the temporaries a fill maps afresh, priced by ``pages``, comes off each sample's readings and onto the full
    size's (``on_touched``)."""
    ordered = sorted(sampled, key=lambda m: m.name != result.floor_method)
    device, layout, chunk = result.backing.device, result.layout, result.chunk_elements
    for method in ordered:
        entry = result.method(method.name)
        own = method.name == result.floor_method
        rate = _fastest(entry.samples) if own else floor_rate(result)
        ceiling = (rate, result.floor_method)
        touched = fresh_scratch_bytes(method, layout.part_rows * layout.dim, chunk, layout.tables)
        threads = torch.get_num_threads() if method.temporaries_parallel else 1
        points = entry.samples
        if pages is not None:
            points = on_touched(points, method, layout, chunk, _touch_point(pages, threads))
        entry.time_fit, entry.projection = _projected(
            points, entry.bytes_written, ceiling, device, touched=touched, touch_threads=threads, pages=pages
        )
        entry.time = entry.projection.time
    if result.phases:
        return
    table_bytes = result.layout.table_bytes_per_rank
    for phase in (ALLOCATE, FIRST_TOUCH):
        pts = phase_points[phase]
        bound: tuple[float | None, str] = (None, "")
        if phase == FIRST_TOUCH:
            rates = ((_fastest(pts), FIRST_TOUCH), (floor_rate(result), result.floor_method))
            bound = min(((r, n) for r, n in rates if r), default=(None, ""))
        fit, projection = _projected(pts, table_bytes, bound, device, fixed=phase == ALLOCATE)
        result.phases.append(
            PhaseResult(
                phase, PROJECTED, table_bytes, projection.time, samples=pts, time_fit=fit, projection=projection
            )
        )


def unallocated_device_figures(device: torch.device) -> MemoryUse:
    """Pinned and GPU figures describe the full tables: why there are none, rather than 0."""
    memory = memory_use(device)
    for name in ("pinned_bytes", "gpu_used_bytes", "gpu_allocator_peak_bytes"):
        if getattr(memory, name).value is not None:
            setattr(memory, name, Estimate.missing(NOT_ALLOCATED_PROJECTED))
    return memory


def derive(result: EngramResult) -> None:
    """Rates, share of the floor, start-up time (with its interval and largest term) and the deadline."""
    floor = result.floor()
    # The floor is its fastest round (a preempted memset only reads slower), as compare's is: a fill still
    # faster than that is flagged, never shown as a share above 100%.
    floor_s = None if floor is None else floor.time.low if floor.time.samples else floor.time.value
    setup = [p.time for p in result.phases]
    for m in result.methods:
        if m.time.value is None:
            continue
        projected = m.time.how
        if m.time.value > 0:
            m.gb_per_s = Estimate(m.bytes_written / m.time.value / 1e9, projected)
        if floor is not None and floor_s:
            share = share_of_floor(m.bytes_written, m.time.value, floor.bytes_written, floor_s)
            if share is not None:
                either = PROJECTED if floor.time.is_projected else projected
                m.percent_of_floor = (
                    Estimate(100 * share, either) if share <= 1.0 else Estimate.missing(FASTER_THAN_FLOOR)
                )
                m.generator_bound = generator_bound(share)
        if setup and all(s.value is not None for s in setup):
            _startup(result, m)


def _startup(result: EngramResult, m: MethodResult) -> None:
    """A method's start-up (the set-up phases and its fill), its largest term, its interval (the sum of the terms'
    lows and highs, a measured term its fastest and slowest reading) and its
    deadline verdict, judged on that interval."""
    times = [*(p.time for p in result.phases), m.time]
    terms = {p.name: p.time.value or 0.0 for p in result.phases}
    terms[FILL] = m.time.value or 0.0
    total = sum(terms.values())
    low = sum(t.low if t.low is not None else t.value or 0.0 for t in times)
    high = sum(t.high if t.high is not None else t.value or 0.0 for t in times)
    projected = any(t.is_projected for t in times)
    # a measured start-up keeps its ends too (what its verdict is judged on); without samples it draws no range
    how = PROJECTED if projected else MEASURED
    m.startup = Estimate(total, how, low=low, high=high, device=m.time.device)
    m.startup_dominant = max(terms, key=lambda k: terms[k])
    m.startup_dominant_share = terms[m.startup_dominant] / total if total > 0 else None
    if result.budget.deadline_s is not None:
        busy = result.contention is not None and result.contention.contended
        m.deadline = judge(low, high, result.budget.deadline_s, contended=busy)
        m.over_deadline = m.deadline.code == MISSED
