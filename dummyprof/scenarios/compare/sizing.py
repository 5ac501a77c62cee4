"""Measured where it fits, projected where it does not (counts are exact at any size: :mod:`loaders.counting`).

A model that does not fit the memory budget, or whose rounds are predicted past the time budget, has every
counted visit priced by calibration fills: tensors of each operation and dtype the model uses, touched, then filled
by the real initializer at a few sizes, interleaved. The engine writes its weights once into memory it has just
allocated, so a projection adds what writing fresh pages costs for every byte first visited
(:mod:`measure.first_touch`, probed in this run); a redundant visit finds its pages touched. A projection is the
walk on meta plus the visits' costs at the median of the trials, an interval from the least and steepest slope of
the trials' lines (``slope_bounds``) and the first touch's, never below the bytes written at this run's memset rate
and the first touch's cheapest pages.
"""

from __future__ import annotations

import statistics
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
from dummyprof.measure import contention, first_touch
from dummyprof.measure.budget import device_budget
from dummyprof.measure.device import synchronize
from dummyprof.measure.memory import rss_bytes
from dummyprof.measure.projection import fit_line, fit_proportional
from dummyprof.measure.recorder import dtype_name
from dummyprof.models.source import ModelSource
from dummyprof.results.common import Contention, Estimate, FirstTouch
from dummyprof.results.compare import (
    CalibrationClass,
    CompareResult,
    Projection,
    SizeDecision,
    StrategyResult,
)
from dummyprof.results.engram import LinearFit
from dummyprof.scenarios.compare.runner import Clock, summarize_model, summarize_records, tensor_table

META = torch.device("meta")
CALIBRATION_SHARE = 0.15  # of the time budget, for all calibration fills together
FIRST_TOUCH_SHARE = 0.25  # of the time budget, for the first-touch probe
QUICK_BYTES = 1 << 30  # measured rounds writing less than this in all are not worth predicting
SIZE_POINTS = 4  # calibration sizes s, 2s, 3s, 4s
TRIALS = 5  # per size, interleaved; the median is the point
MIN_STEP = 256 << 10
MAX_STEP = 64 << 20
SMALL_ELEMENTS = 1024
PROBE_BYTES = 16 << 20
SMALL_CALLS = 15
SAFETY = 1.25  # building, garbage collection and the recorder between timed fills
# Operations every initializer performs alike (v0.29's and v0.33's ``uniform_`` in place, the fast initializer's
# fallbacks to v0.33): one class each, whichever initializer visits them, so one operation has one rate in a run.
SHARED_RULES = frozenset({RULE_UNIFORM, RULE_DECLARED, RULE_SCALE, RULE_RANDOM_BYTES})


def fit_time(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Seconds against bytes; through the origin when noise leaves the line no positive slope.

    Writing more bytes never takes less time: a flat or falling line would price big tensors as free.
    """
    fit = fit_line(xs, ys)
    return fit if fit.slope > 0 else fit_proportional(xs, ys)


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
    model = source.build(META)
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


def _classes(counts: dict[str, CountResult]) -> dict[_ClassKey, tuple[str, str, int]]:
    """Each operation and dtype visited, with an initializer that performs it, a local name that triggers the rule
    and the largest size."""
    found: dict[_ClassKey, tuple[str, str, int]] = {}
    for count in counts.values():
        for visit in count.visits:
            if visit.rule == RULE_SKIP or visit.outcome.bytes_written == 0:
                continue
            key = _ClassKey(operation(count.initializer, visit.rule), visit.dtype)
            init, name, largest = found.get(key, (count.initializer, visit.local_name, 0))
            found[key] = (init, name, max(largest, visit.outcome.bytes_written))
    return found


def _timed_fill(
    init_name: str, key: _ClassKey, local_name: str, elements: int, device: torch.device, clock: Clock
) -> float:
    """One fill of a new tensor whose pages were touched first: the fill's own cost (first touch is probed apart)."""
    init = get_initializer(init_name)
    tensor = torch.empty(elements, dtype=key.dtype, device=device)
    tensor.view(torch.uint8).fill_(0)
    if key.operation == RULE_DECLARED:
        tensor.dummy_weight_value = 1.0  # type: ignore[attr-defined]  # the value does not change the cost
    synchronize(device)
    t0 = clock()
    init(tensor, local_name)
    synchronize(device)
    return clock() - t0


def memset_rate(nbytes: int, device: torch.device, clock: Clock = time.perf_counter) -> float:
    """Bytes per second of ``fill_`` over touched memory, the fastest of a few (first touch is priced apart)."""
    size = max(nbytes, 1 << 20)
    buffer = torch.empty(size, dtype=torch.uint8, device=device)
    buffer.fill_(0)
    best = float("inf")
    for value in range(1, TRIALS + 2):
        synchronize(device)
        t0 = clock()
        buffer.fill_(value)
        synchronize(device)
        best = min(best, clock() - t0)
    return size / max(best, 1e-9)


def calibration_step(largest: int, rate: float, share_s: float, element: int) -> int:
    """Bytes between the calibration sizes (s, 2s, 3s, 4s) of a class whose largest visit writes ``largest``
    bytes, at ``rate`` bytes/s: as large as its share of the budget allows, up to MAX_STEP and a quarter of
    ``largest``."""
    units = SIZE_POINTS * (SIZE_POINTS + 1) // 2 * TRIALS
    step = int(min(MAX_STEP, max(MIN_STEP, share_s * rate / units), max(MIN_STEP, largest // SIZE_POINTS)))
    return step - step % element


def calibrate(
    counts: dict[str, CountResult],
    device: torch.device,
    *,
    time_budget_s: float,
    clock: Clock = time.perf_counter,
) -> list[CalibrationClass]:
    """Time the real initializers on touched tensors of every class the counted visits use, each class within its
    share of the time budget."""
    classes = _classes(counts)
    share = time_budget_s * CALIBRATION_SHARE / max(1, len(classes))
    out = []
    for key, (init_name, local_name, largest) in classes.items():
        element = torch.empty(0, dtype=key.dtype).element_size()

        def fill(
            elements: int, init_name: str = init_name, key: _ClassKey = key, local_name: str = local_name
        ) -> float:
            return _timed_fill(init_name, key, local_name, elements, device, clock)

        small = [fill(SMALL_ELEMENTS) for _ in range(SMALL_CALLS)]
        # The probe is big enough to leave the caches, as the model's large tensors do.
        probe_bytes = max(MIN_STEP, min(PROBE_BYTES, largest))
        rate = probe_bytes / max(fill(probe_bytes // element), 1e-9)
        step = calibration_step(largest, rate, share, element)
        sizes = [k * step for k in range(1, SIZE_POINTS + 1)]
        deadline = clock() + share
        samples: list[list[float]] = [[] for _ in sizes]
        for _ in range(TRIALS):  # trial by trial across sizes: running out of time still leaves a line to fit
            for i, n in enumerate(sizes):
                if i >= 2 and samples[1] and clock() > deadline:
                    break
                samples[i].append(fill(n // element))
        kept = [i for i, trials in enumerate(samples) if trials]
        sizes, samples = [sizes[i] for i in kept], [samples[i] for i in kept]
        fit_low, fit_high = slope_bounds(sizes, samples)
        out.append(
            CalibrationClass(
                initializer=init_name,
                rule=key.operation.rpartition(":")[2],
                dtype=dtype_name(key.dtype),
                sizes_bytes=sizes,
                trials=[Estimate.measured(trials, device=device.type) for trials in samples],
                small_call_s=statistics.median(small),
                fit=fit_time(sizes, [statistics.median(s) for s in samples]),
                fit_low=fit_low,
                fit_high=fit_high,
            )
        )
    return out


def slope_bounds(sizes: Sequence[float], samples: Sequence[Sequence[float]]) -> tuple[LinearFit, LinearFit]:
    """The least and the steepest of the lines through each trial across the sizes (trials are interleaved, so
    each is one pass over the machine's state), through each size's fastest and slowest reading, and through
    the capability: the slope's spread from one pass to the next within this run. Lines through the fastest and
    slowest readings alone can both lie on one side of the capability's (a line's intercept absorbs part of the
    noise). A second run can still land outside (BENCHMARKS.md, reproducibility on a quiet machine)."""
    lines = [
        fit_time(sizes, [statistics.median(s) for s in samples]),
        fit_time(sizes, [min(s) for s in samples]),
        fit_time(sizes, [max(s) for s in samples]),
    ]
    for trial in range(min(len(s) for s in samples)):
        lines.append(fit_time(sizes, [s[trial] for s in samples]))
    return min(lines, key=lambda f: f.slope), max(lines, key=lambda f: f.slope)


def _visit_costs(
    visits: Sequence[VisitPlan], initializer: str, calibration: Sequence[CalibrationClass]
) -> tuple[float, float, float]:
    """Seconds of all visits (point, fastest, slowest): each one tiny fill (the per-call cost) plus its bytes at
    the calibrated slope. Not the fitted intercepts: noise over MiB samples, times thousands of small tensors."""
    by_key = {(operation(c.initializer, c.rule), c.dtype): c for c in calibration}
    point = low = high = 0.0
    for visit in visits:
        if visit.rule == RULE_SKIP or visit.outcome.bytes_written == 0:
            continue
        c = by_key[(operation(initializer, visit.rule), dtype_name(visit.dtype))]
        n = visit.outcome.bytes_written
        slopes = [max(0.0, f.slope) for f in (c.fit, c.fit_low, c.fit_high)]
        point += c.small_call_s + slopes[0] * n
        low += c.small_call_s + min(slopes) * n
        high += c.small_call_s + max(slopes) * n
    return point, low, high


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
    point, low, high = _visit_costs(count.visits, count.initializer, calibration)
    records = [r for r in count.recorder.records.values() if r.bytes_written]
    written = sum(r.bytes_written for r in records)
    touched = sum(r.nbytes for r in records)
    touch, touch_low, touch_high = pages.price(touched) if pages is not None else (0.0, 0.0, 0.0)
    floor = (written / memset_bytes_per_s if memset_bytes_per_s > 0 else 0.0) + touch_low
    seconds = count.walk_seconds + point + touch
    bounds = max(count.walk_seconds + low + touch_low, floor), max(count.walk_seconds + high + touch_high, floor)
    return Projection(
        time=Estimate.projected(max(seconds, floor), *bounds, floor=floor, device=device, contention=contention),
        walk_s=count.walk_seconds,
        first_touch_s=touch,
        # One byte of RSS per byte the fill first-touches, plus its largest temporary: the filled model holds
        # them, and nothing more (a growth measured on calibration fills once put a peak at 1.34x the need).
        peak_rss_bytes=rss_now + touched + count.recorder.peak_scratch_bytes,
        rss_before_bytes=rss_now,
        floor_bound=floor > seconds,
    )


def _first_touched(meta: MetaCounts) -> int:
    """The pages the fill writes first, the most of any strategy (each writes every page it touches once first)."""
    return max(
        (sum(r.nbytes for r in c.recorder.records.values() if r.bytes_written) for c in meta.counts.values()), default=0
    )


def probe_pages(meta: MetaCounts, device: torch.device, budget: int, time_budget_s: float) -> FirstTouch | None:
    """This run's first-touch probe over as many fresh pages as the fill first-touches, within half the memory
    left and its share of the time budget; None on a GPU (its memory is mapped when allocated)."""
    if device.type != "cpu":
        return None
    room = max(0, (budget - rss_bytes()) // 2)
    return first_touch.probe(
        _first_touched(meta),
        memory_bytes=room,
        seconds=time_budget_s * FIRST_TOUCH_SHARE,
        share=FIRST_TOUCH_SHARE,
    )


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
    t0 = clock()
    window = contention.Window()
    with window.measure():
        calibration = calibrate(meta.counts, device, time_budget_s=time_budget_s, clock=clock)
        largest = max((c.sizes_bytes[-1] for c in calibration), default=1 << 20)
        rate = memset_rate(largest, device, clock)
        pages = probe_pages(meta, device, budget, time_budget_s)
    decision.calibration_s = clock() - t0
    busy = window.result()
    decision.calibration, decision.memset_bytes_per_s, decision.first_touch = calibration, rate, pages
    rss_now = rss_bytes()
    projections = {
        name: project_strategy(c, calibration, rate, rss_now, pages=pages, device=device.type, contention=busy)
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
