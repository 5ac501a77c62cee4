"""Measured where it fits, projected where it does not (counts are exact at any size: :mod:`loaders.counting`).

A model that does not fit the memory budget, or whose rounds are predicted past the time budget, has every
counted visit priced by calibration fills: fresh tensors of each (initializer, rule, dtype) the model uses,
filled by the real initializer at a few sizes, interleaved. A projection is the walk on meta plus the visits'
costs at the fastest quartile of the trials, an interval from the least and steepest slope of the trials'
lines (``slope_bounds``), never below the bytes written at this run's memset rate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from dummyprof.anatomy import model_bytes
from dummyprof.errors import DoesNotFitError
from dummyprof.loaders.counting import CountingTooLong, CountResult, VisitPlan, count_on_meta
from dummyprof.loaders.initializers import RULE_DECLARED, RULE_SKIP, get_initializer
from dummyprof.loaders.strategies import Strategy
from dummyprof.measure import contention
from dummyprof.measure.budget import device_budget
from dummyprof.measure.device import synchronize
from dummyprof.measure.memory import MMAP_THRESHOLD, fresh_pages, rss_bytes
from dummyprof.measure.projection import capability, fit_line, fit_proportional
from dummyprof.measure.recorder import dtype_name
from dummyprof.models.source import ModelSource
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
QUICK_BYTES = 1 << 30  # measured rounds writing less than this in all are not worth predicting
SIZE_POINTS = 4  # calibration sizes s, 2s, 3s, 4s
TRIALS = 5  # per size, interleaved; the fastest quartile (the 2nd fastest of 5) is the capability
MIN_STEP = 256 << 10
MAX_STEP = 64 << 20
SMALL_ELEMENTS = 1024
PROBE_BYTES = 16 << 20
SMALL_CALLS = 15
SAFETY = 1.25  # building, garbage collection and the recorder between timed fills
# glibc serves a request of 32 MiB or more (the ceiling of its dynamic mmap threshold) with fresh pages, as a
# model's large tensors are when first filled; below it, memory an earlier fill freed comes back already touched and
# a fill costs ~15% less per byte (2-core EPYC, bf16 uniform_). Calibration sizes straddling it moved the slope, and
# DeepSeek-V3's projection, ~10% run to run (BENCHMARKS.md), so a CPU class with tensors past it is calibrated past
# it, or, where its room cannot hold that, wholly below it (and the report says so).
FRESH_BYTES = 33 << 20  # the least step past it
REUSED_STEP = (MMAP_THRESHOLD - (1 << 20)) // SIZE_POINTS  # the most step whose 4 sizes all stay under it
PROBE_MARGIN = 1.5


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
    initializer: str
    rule: str
    dtype: torch.dtype


def _classes(counts: dict[str, CountResult]) -> dict[_ClassKey, tuple[str, int]]:
    """Each (initializer, rule, dtype) visited, with a local name that triggers the rule and the largest size."""
    found: dict[_ClassKey, tuple[str, int]] = {}
    for count in counts.values():
        for visit in count.visits:
            if visit.rule == RULE_SKIP or visit.outcome.bytes_written == 0:
                continue
            key = _ClassKey(count.initializer, visit.rule, visit.dtype)
            name, largest = found.get(key, (visit.local_name, 0))
            found[key] = (name, max(largest, visit.outcome.bytes_written))
    return found


def _timed_fill(key: _ClassKey, local_name: str, elements: int, device: torch.device, clock: Clock) -> float:
    init = get_initializer(key.initializer)
    tensor = torch.empty(elements, dtype=key.dtype, device=device)  # fresh memory: a real fill first-touches too
    if key.rule == RULE_DECLARED:
        tensor.dummy_weight_value = 1.0  # type: ignore[attr-defined]  # the value does not change the cost
    synchronize(device)
    t0 = clock()
    init(tensor, local_name)
    synchronize(device)
    return clock() - t0


def memset_rate(nbytes: int, device: torch.device, clock: Clock = time.perf_counter, *, fresh: bool = False) -> float:
    """Bytes per second of ``fill_``, the fastest of a few: over memory already touched, or with ``fresh`` over a
    new allocation of at least :data:`FRESH_BYTES` each time (fresh pages, their faults included), as the
    calibration fills it bounds were timed (:func:`floor_on_fresh_pages`)."""
    size = max(nbytes, FRESH_BYTES if fresh else 1 << 20)
    buffer = torch.empty(size, dtype=torch.uint8, device=device)
    buffer.fill_(0)
    best = float("inf")
    for value in range(1, TRIALS + 2):
        if fresh:
            del buffer  # unmapped, so the next allocation is mapped afresh
            buffer = torch.empty(size, dtype=torch.uint8, device=device)
        synchronize(device)
        t0 = clock()
        buffer.fill_(value)
        synchronize(device)
        best = min(best, clock() - t0)
    return size / max(best, 1e-9)


def floor_on_fresh_pages(calibration: Sequence[CalibrationClass], device: torch.device) -> bool:
    """Whether the memset floor is timed on fresh pages: when the class with the largest sizes was calibrated on
    them (its sizes past the mmap threshold), as the model's largest tensors are first filled."""
    largest = max((c for c in calibration if c.sizes_bytes), key=lambda c: c.sizes_bytes[-1], default=None)
    return largest is not None and fresh_pages(largest.sizes_bytes[0], device)


def fresh_room(largest: int, rate: float) -> float | None:
    """Seconds a class needs to calibrate past the threshold (every trial of its two smallest sizes there, which
    always run), at ``rate`` bytes/s; None when its largest visit stays below it."""
    return SAFETY * TRIALS * 3 * FRESH_BYTES / rate if largest >= MMAP_THRESHOLD else None


def calibration_step(
    largest: int, rate: float, share_s: float, room_s: float, element: int, need_s: float | None = None
) -> int:
    """Bytes between the calibration sizes (s, 2s, 3s, 4s) of a class whose largest visit writes ``largest``
    bytes, at ``rate`` bytes/s: as large as its share of the budget allows, up to MAX_STEP and a quarter of
    ``largest``. ``need_s`` (``fresh_room``, CPU only): past the mmap threshold when ``room_s`` holds it, else
    every size below it, never straddling."""
    units = SIZE_POINTS * (SIZE_POINTS + 1) // 2 * TRIALS
    step = int(min(MAX_STEP, max(MIN_STEP, share_s * rate / units), max(MIN_STEP, largest // SIZE_POINTS)))
    if need_s is not None:
        step = max(step, FRESH_BYTES) if need_s <= room_s else min(step, REUSED_STEP)
    return step - step % element


def calibrate(
    counts: dict[str, CountResult],
    device: torch.device,
    *,
    time_budget_s: float,
    room_s: float = 0.0,
    clock: Clock = time.perf_counter,
) -> list[CalibrationClass]:
    """Time the real initializers on fresh tensors of every class the counted visits use, each class within its
    share of the time budget; ``room_s``: the seconds the calibration may take in all when no measured round
    follows it (a model that does not fit memory), which lets a large class calibrate on fresh pages."""
    classes = _classes(counts)
    share = time_budget_s * CALIBRATION_SHARE / max(1, len(classes))
    room = max(share, room_s / max(1, len(classes)))
    out = []
    for key, (local_name, largest) in classes.items():
        element = torch.empty(0, dtype=key.dtype).element_size()
        small = [_timed_fill(key, local_name, SMALL_ELEMENTS, device, clock) for _ in range(SMALL_CALLS)]
        # The probe is big enough to leave the caches, as the model's large tensors do.
        probe_bytes = max(MIN_STEP, min(PROBE_BYTES, largest))
        probe = _timed_fill(key, local_name, probe_bytes // element, device, clock)
        rate = probe_bytes / max(probe, 1e-9)
        need = fresh_room(largest, rate) if device.type == "cpu" else None  # glibc's pages: nothing of a GPU's
        step = calibration_step(largest, rate, share, room, element, need)
        sizes = [k * step for k in range(1, SIZE_POINTS + 1)]
        deadline = clock() + share
        samples: list[list[float]] = [[] for _ in sizes]
        for _ in range(TRIALS):  # trial by trial across sizes: running out of time still leaves a line to fit
            for i, n in enumerate(sizes):
                if i >= 2 and samples[1] and clock() > deadline:
                    break
                samples[i].append(_timed_fill(key, local_name, n // element, device, clock))
        kept = [i for i, trials in enumerate(samples) if trials]
        sizes, samples = [sizes[i] for i in kept], [samples[i] for i in kept]
        fit_low, fit_high = slope_bounds(sizes, samples)
        out.append(
            CalibrationClass(
                initializer=key.initializer,
                rule=key.rule,
                dtype=dtype_name(key.dtype),
                sizes_bytes=sizes,
                samples_s=samples,
                small_call_s=capability(small),
                fit=fit_time(sizes, [capability(s) for s in samples]),
                fit_low=fit_low,
                fit_high=fit_high,
                fresh_room_s=need if need is not None and need > room else None,
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
        fit_time(sizes, [capability(s) for s in samples]),
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
    by_key = {(c.initializer, c.rule, c.dtype): c for c in calibration}
    point = low = high = 0.0
    for visit in visits:
        if visit.rule == RULE_SKIP or visit.outcome.bytes_written == 0:
            continue
        c = by_key[(initializer, visit.rule, dtype_name(visit.dtype))]
        n = visit.outcome.bytes_written
        slopes = [max(0.0, f.slope) for f in (c.fit, c.fit_low, c.fit_high)]
        point += c.small_call_s + slopes[0] * n
        low += c.small_call_s + min(slopes) * n
        high += c.small_call_s + max(slopes) * n
    return point, low, high


def project_strategy(
    count: CountResult, calibration: Sequence[CalibrationClass], memset_bytes_per_s: float, rss_now: int
) -> Projection:
    point, low, high = _visit_costs(count.visits, count.initializer, calibration)
    records = [r for r in count.recorder.records.values() if r.bytes_written]
    written = sum(r.bytes_written for r in records)
    touched = sum(r.nbytes for r in records)
    floor = written / memset_bytes_per_s if memset_bytes_per_s > 0 else 0.0
    seconds = count.walk_seconds + point
    return Projection(
        seconds=max(seconds, floor),
        low_s=max(count.walk_seconds + low, floor),
        high_s=max(count.walk_seconds + high, floor),
        floor_s=floor,
        walk_s=count.walk_seconds,
        # One byte of RSS per byte the fill first-touches, plus its largest temporary: the filled model holds
        # them, and nothing more (a growth measured on calibration fills once put a peak at 1.34x the need).
        peak_rss_bytes=rss_now + touched + count.recorder.peak_scratch_bytes,
        rss_before_bytes=rss_now,
        floor_bound=floor > seconds,
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
        room = 0.0 if fits else time_budget_s - meta.seconds  # projected for sure: no measured round follows
        calibration = calibrate(meta.counts, device, time_budget_s=time_budget_s, room_s=room, clock=clock)
        largest = max((c.sizes_bytes[-1] for c in calibration), default=1 << 20)
        fresh = floor_on_fresh_pages(calibration, device)
        rate = memset_rate(largest, device, clock, fresh=fresh)
    decision.calibration_s = clock() - t0
    decision.contention = window.result()
    decision.calibration = calibration
    decision.memset_bytes_per_s, decision.memset_fresh_pages = rate, fresh
    rss_now = rss_bytes()
    projections = {name: project_strategy(c, calibration, rate, rss_now) for name, c in meta.counts.items()}
    decision.predicted_s = SAFETY * rounds * sum(p.seconds for p in projections.values())
    if not fits:
        decision.mode, decision.reason = "projected", "memory"
    elif decision.predicted_s > time_budget_s:
        decision.mode, decision.reason = "projected", "time"
    else:
        decision.mode, decision.reason = "measured", "fits"
    if decision.mode == "projected":  # a measured run's times are not the calibration's
        decision.fresh_budget_s = fresh_budget(calibration, fits=fits, counting_s=meta.seconds)
    return decision, projections


def fresh_budget(calibration: Sequence[CalibrationClass], *, fits: bool, counting_s: float) -> float | None:
    """The --time-budget whose calibration room holds every class that was calibrated below the mmap threshold for
    lack of it (``calibrate``: a share of the budget per class, or what counting left when no round follows)."""
    need = max((c.fresh_room_s for c in calibration if c.fresh_room_s is not None), default=None)
    if need is None:
        return None
    need *= PROBE_MARGIN  # one probe fill gave the rate: a budget just over its need flips on the next probe
    classes = len(calibration)
    return counting_s + classes * need if not fits else classes * need / CALIBRATION_SHARE


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
        result.strategies.append(entry)
    result.tensors = tensor_table({name: c.recorder for name, c in meta.counts.items()})
    if strategies and "legacy" not in meta.counts:
        result.baseline_strategy = strategies[0].name
    return result
