"""Measured where it fits, projected where it does not (counts are exact at any size: :mod:`loaders.counting`).

A model that does not fit the memory budget, or whose rounds are predicted past the time budget, has every
counted visit priced by calibration fills on :mod:`measure.engine`: tensors of each operation and dtype the model
uses, touched, then filled by the real initializer at a few sizes, interleaved. The engine writes its weights once
into memory it has just allocated, so a projection adds what writing fresh pages costs for every byte first visited
(:mod:`measure.first_touch`, probed in this run); a redundant visit finds its pages touched. A projection is the
walk on meta plus the visits' costs (``engine.cost``), projected by ``engine.project``.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from dummyprof.anatomy import model_bytes
from dummyprof.errors import DoesNotFitError
from dummyprof.loaders.counting import CountingTooLong, CountResult, VisitPlan, count_on_meta
from dummyprof.loaders.initializers import (
    RULE_DECLARED,
    RULE_RANDOM_BYTES,
    RULE_SCALE,
    RULE_SKIP,
    RULE_UNIFORM,
    get_initializer,
)
from dummyprof.loaders.strategies import Strategy
from dummyprof.measure import engine, first_touch
from dummyprof.measure.budget import device_budget
from dummyprof.measure.device import synchronize
from dummyprof.measure.memory import FRESH_MAP_BYTES, MMAP_THRESHOLD, engine_maps_afresh, heap_reused, rss_bytes
from dummyprof.measure.recorder import dtype_name
from dummyprof.models.source import ModelSource
from dummyprof.results.common import Contention, Estimate, FirstTouch, copied
from dummyprof.results.compare import (
    CalibrationClass,
    CompareResult,
    Projection,
    SizeDecision,
    StrategyResult,
)
from dummyprof.scenarios.compare.runner import Clock, summarize_model, summarize_records, tensor_table

CALIBRATION_SHARE = 0.15  # of the time budget, for all calibration fills together
QUICK_BYTES = 1 << 30  # measured rounds writing less than this in all are not worth predicting
SMALL_ELEMENTS = 1024  # a tiny fill, for the cost of one call
SAFETY = 1.25  # building, garbage collection and the recorder between timed fills
# Operations every initializer performs alike (v0.29's and v0.33's ``uniform_`` in place, the fast initializer's
# fallbacks to v0.33): one class each, whichever initializer visits them, so one operation has one rate in a run.
SHARED_RULES = frozenset({RULE_UNIFORM, RULE_DECLARED, RULE_SCALE, RULE_RANDOM_BYTES})


@dataclass
class MetaCounts:
    model: nn.Module
    counts: dict[str, CountResult]
    seconds: float


# Counting (building on meta and walking every strategy) may use this share of --time-budget, the rest
# being for calibration and fills; never less than COUNTING_MIN_S, so a small budget that only asks
# for projection does not refuse a tree that counts in a blink on an idle machine.
COUNTING_SHARE = 0.5
COUNTING_MIN_S = 10.0


def counting_limit(time_budget_s: float) -> float:
    return max(COUNTING_SHARE * time_budget_s, COUNTING_MIN_S)


def count_strategies(
    source: ModelSource,
    strategies: Sequence[Strategy],
    initializer: str | None,
    *,
    time_budget_s: float,
    clock: Clock = time.perf_counter,
) -> MetaCounts:
    """Build on meta and count every strategy; past its share of the time budget, stop and say so."""
    t0 = clock()
    limit = counting_limit(time_budget_s)
    deadline = t0 + limit
    model = source.build(torch.device("meta"))
    built = clock() - t0
    counts = {}
    for strategy in strategies:
        try:
            counts[strategy.name] = count_on_meta(model, strategy, initializer, deadline=deadline, clock=clock)
        except CountingTooLong as late:
            raise DoesNotFitError.for_field(
                "time_budget",
                f"counting visits on the meta model took longer than this budget allows ({limit:.0f} s): "
                f"building it took {built:.1f} s, then {late.strategy} "
                f"had made {late.visits:,} visits in {late.seconds:.1f} s and was not done; raise the time "
                "budget or profile a smaller model (fewer levels or blocks)",
            ) from None
    return MetaCounts(model, counts, clock() - t0)


@dataclass(frozen=True)
class _ClassKey:
    operation: str  # the rule, or for a rule initializers perform differently, ``initializer:rule``
    dtype: torch.dtype


def operation(initializer: str, rule: str) -> str:
    return rule if rule in SHARED_RULES else f"{initializer}:{rule}"


SCRATCH_ROOM = 0.9  # of MMAP_THRESHOLD, for a sampled fill's temporary: under it with glibc's own headers


def _classes(counts: dict[str, CountResult]) -> dict[_ClassKey, tuple[str, str, int]]:
    """Each operation and dtype visited, with an initializer that performs it, a local name that triggers the rule
    and the largest size to sample: the largest visit's, or less where the operation's temporary would otherwise
    pass :data:`MMAP_THRESHOLD` (it is sampled on touched memory; its fresh pages are priced apart)."""
    found: dict[_ClassKey, tuple[str, str, int]] = {}
    for count in counts.values():
        for visit in count.visits:
            written, scratch = visit.outcome
            if visit.rule == RULE_SKIP or written == 0:
                continue
            key = _ClassKey(operation(count.initializer, visit.rule), visit.dtype)
            init, name, largest = found.get(key, (count.initializer, visit.local_name, 0))
            if scratch:
                written = min(written, int(SCRATCH_ROOM * MMAP_THRESHOLD * written / scratch))
            found[key] = (init, name, max(largest, written))
    return found


def _timed_fill(
    init_name: str, key: _ClassKey, local_name: str, nbytes: int, device: torch.device, clock: Clock
) -> float:
    """One fill of a new tensor whose pages were touched first: the fill's own cost (first touch is probed apart)."""
    init = get_initializer(init_name)
    tensor = torch.empty(nbytes // key.dtype.itemsize, dtype=key.dtype, device=device)
    tensor.view(torch.uint8).fill_(0)
    if key.operation == RULE_DECLARED:
        tensor.dummy_weight_value = 1.0  # type: ignore[attr-defined]  # the value does not change the cost
    synchronize(device)
    t0 = clock()
    init(tensor, local_name)
    synchronize(device)
    return clock() - t0


def calibrate(
    counts: dict[str, CountResult],
    device: torch.device,
    *,
    time_budget_s: float,
    clock: Clock = time.perf_counter,
) -> list[CalibrationClass]:
    """Sample the real initializers on touched tensors of every class the counted visits use (``engine.sample``),
    each class within its share of the time budget, their temporaries on touched memory too."""
    classes = _classes(counts)
    share = time_budget_s * CALIBRATION_SHARE / max(1, len(classes))
    out = []
    with heap_reused(device):
        for key, (init_name, local_name, largest) in classes.items():
            out.append(_calibrated(init_name, key, local_name, largest, device, share, clock))
    return out


def _calibrated(
    init_name: str, key: _ClassKey, local_name: str, largest: int, device: torch.device, share: float, clock: Clock
) -> CalibrationClass:
    def fill(nbytes: int) -> float:
        return _timed_fill(init_name, key, local_name, nbytes, device, clock)

    element = key.dtype.itemsize
    run = engine.sample(
        fill, largest, seconds=share, element=element, small_bytes=SMALL_ELEMENTS * element, clock=clock
    )
    return copied(
        CalibrationClass,
        run,  # small_call_s, fit, fit_low, fit_high
        initializer=init_name,
        rule=key.operation.rpartition(":")[2],
        dtype=dtype_name(key.dtype),
        sizes_bytes=run.sizes,
        trials=[Estimate.measured(trials, device=device.type) for trials in run.trials],
    )


def _visit_costs(
    visits: Sequence[VisitPlan], initializer: str, calibration: Sequence[CalibrationClass]
) -> tuple[float, float, float]:
    """Seconds of all visits (point, fastest, slowest): each class's visits at its calibrated costs."""
    by_key = {(operation(c.initializer, c.rule), c.dtype): c for c in calibration}
    calls: dict[tuple[str, str], list[int]] = {}
    for visit in visits:
        if visit.rule != RULE_SKIP and visit.outcome.bytes_written:
            calls.setdefault((operation(initializer, visit.rule), dtype_name(visit.dtype)), []).append(
                visit.outcome.bytes_written
            )
    costs = [engine.cost(by_key[key], sum(sizes), len(sizes)) for key, sizes in calls.items()]
    return sum(c[0] for c in costs), sum(c[1] for c in costs), sum(c[2] for c in costs)


def project_strategy(
    count: CountResult,
    calibration: Sequence[CalibrationClass],
    memset_bytes_per_s: float,
    rss_now: int,
    *,
    pages: FirstTouch | None = None,
    device: str = "",
    contention: Contention | None = None,
) -> Projection:
    """The visits at their calibrated costs, plus the first touch of every page the strategy writes (``pages``:
    this run's probe; None where the device's memory takes no page faults)."""
    touched = _touched(count)
    floors = engine.Floors(memset_bytes_per_s=memset_bytes_per_s, pages=pages, contention=contention)
    costs = _visit_costs(count.visits, count.initializer, calibration)
    written = sum(r.bytes_written for r in count.recorder.records.values())
    timed = engine.project(costs, written, floors, touched=touched, fixed_s=count.walk_seconds, device=device)
    return Projection(
        time=timed.time,
        walk_s=count.walk_seconds,
        first_touch_s=timed.first_touch_s,
        # One byte of RSS per byte the fill first-touches, plus its largest temporary: the filled model holds
        # them, and nothing more (a growth measured on calibration fills once put a peak at 1.34x the need).
        peak_rss_bytes=rss_now + touched + count.recorder.peak_scratch_bytes,
        rss_before_bytes=rss_now,
        floor_bound=timed.floor_bound,
    )


def _touched(count: CountResult) -> int:
    """Bytes the fill first-touches: every page it writes, once, and the temporaries the engine maps afresh at every
    visit (the largest ones; the calibration priced every temporary on touched memory)."""
    pages = sum(r.nbytes for r in count.recorder.records.values() if r.bytes_written)
    return pages + sum(v.outcome.scratch_bytes for v in count.visits if engine_maps_afresh(v.outcome.scratch_bytes))


def _first_touched(meta: MetaCounts) -> tuple[int, int]:
    """The pages the fill writes first, the most of any strategy (each writes every page it touches once first,
    and its largest temporaries at every visit), and the size of the mappings they come in: the tensors' own, that
    of the tensors holding half those bytes (bounded by what glibc maps afresh and the probe's largest chunk)."""
    touched = max((_touched(c) for c in meta.counts.values()), default=0)
    written = {k: r.nbytes for c in meta.counts.values() for k, r in c.recorder.records.items() if r.bytes_written}
    sizes = sorted(written.values())
    cumulative = list(itertools.accumulate(sizes))
    half = sizes[bisect.bisect_left(cumulative, cumulative[-1] / 2)] if sizes else first_touch.CHUNK_BYTES
    return touched, min(max(half, FRESH_MAP_BYTES), first_touch.CHUNK_BYTES)


def decide(
    source: ModelSource,
    meta: MetaCounts,
    device: torch.device,
    *,
    max_memory: int | None,
    rounds: int,
    time_budget_s: float,
    clock: Clock = time.perf_counter,
) -> tuple[SizeDecision, dict[str, Projection]]:
    """Measure or project; calibrate only when the measured run could be long."""
    estimated = source.estimated_bytes if source.estimated_bytes is not None else model_bytes(meta.model)
    needed = estimated + source.largest_scratch_bytes
    budget, _ = device_budget(device, max_memory) if device.type != "meta" else (needed, "")
    decision = SizeDecision(
        needed_bytes=needed, budget_bytes=budget, time_budget_s=time_budget_s, counting_s=meta.seconds
    )
    per_round = sum(sum(r.bytes_written for r in c.recorder.records.values()) for c in meta.counts.values())
    fits = needed <= budget
    if fits and per_round * rounds <= QUICK_BYTES:
        decision.mode, decision.reason = "measured", "fits"
        return decision, {}
    fresh, chunk = _first_touched(meta)
    with engine.measuring(
        engine.Floors(),
        device,
        fresh_bytes=fresh,
        memory_bytes=budget,
        chunk_bytes=chunk,
        time_budget_s=time_budget_s,
        clock=clock,
    ) as floors:
        calibration = calibrate(meta.counts, device, time_budget_s=time_budget_s, clock=clock)
        floors.memset_bytes = max((c.sizes_bytes[-1] for c in calibration), default=1 << 20)
    decision.calibration_s = floors.seconds
    decision.calibration, decision.memset_bytes_per_s, decision.first_touch = (
        calibration,
        floors.memset_bytes_per_s,
        floors.pages,
    )
    rate, rss_now = floors.memset_bytes_per_s, rss_bytes()
    projections = {
        name: project_strategy(
            c, calibration, rate, rss_now, pages=floors.pages, device=device.type, contention=floors.contention
        )
        for name, c in meta.counts.items()
    }
    decision.predicted_s = SAFETY * rounds * sum(p.time.value or 0.0 for p in projections.values())
    if not fits:
        decision.mode, decision.reason = "projected", "memory"
    elif decision.predicted_s > time_budget_s:
        decision.mode, decision.reason = "projected", "time"
    else:
        decision.mode, decision.reason = "measured", "fits"
    return decision, projections


def projected_result(
    source: ModelSource,
    meta: MetaCounts,
    strategies: Sequence[Strategy],
    projections: dict[str, Projection],
    decision: SizeDecision,
    device: str,
) -> CompareResult:
    """Results of a run that filled nothing at full size: exact meta counts, projected times and memory."""
    summary = summarize_model(source, meta.model, device, model_bytes(meta.model))
    result = CompareResult(model=summary, repeat=0, warmup=0, counts="exact-meta", size=decision)
    for strategy in strategies:
        count = meta.counts[strategy.name]
        entry = StrategyResult(name=strategy.name, description=strategy.description, initializer=count.initializer)
        summarize_records(entry, count.recorder.records.values(), count.recorder.peak_scratch_bytes)
        entry.projection = projections[strategy.name]
        entry.time = entry.projection.time
        result.strategies.append(entry)
    result.tensors = tensor_table({name: c.recorder for name, c in meta.counts.items()})
    if strategies and "legacy" not in meta.counts:
        result.baseline_strategy = strategies[0].name
    return result
