"""Run fill strategies side by side on freshly built models, interleaved, and collect results."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from dummyprof.anatomy import storage_tensors
from dummyprof.gc_pause import gc_paused
from dummyprof.loaders.initializers import NOT_WRITTEN, Initializer, get_initializer
from dummyprof.loaders.strategies import Strategy, run_strategy
from dummyprof.measure import contention, noise
from dummyprof.measure.device import synchronize
from dummyprof.measure.memory import (
    PeakRss,
    fresh_pages,
    heap_reused,
    map_afresh,
    memory_use,
    reset_gpu_peak,
)
from dummyprof.measure.recorder import StorageRecord, VisitRecorder, index_model
from dummyprof.measure.roofline import GENERATOR_BOUND_SHARE
from dummyprof.models.source import ModelSource
from dummyprof.results.common import MemoryUse, NoiseWarning, copied
from dummyprof.results.compare import CompareResult, FloorResult, ModelSummary, StrategyResult, TensorResult
from dummyprof.scenarios.model_choice import model_summary

Clock = Callable[[], float]
Progress = Callable[[int, int, str], None]  # done, total, label


def _recording_overhead(build: Callable[[], nn.Module], strategy: Strategy, clock: Clock, trials: int = 3) -> float:
    """Seconds the recorder adds to one traversal: the same walk with a no-op initializer, with and without it."""
    model = build()
    plain: list[float] = []
    recorded: list[float] = []
    for _ in range(trials):
        t0 = clock()
        for _name, _tensor in strategy.traverse(model):
            pass
        plain.append(clock() - t0)
        recorder = VisitRecorder(model)
        t0 = clock()
        for _name, tensor in strategy.traverse(model):
            recorder.record(tensor, NOT_WRITTEN)
        recorded.append(clock() - t0)
    del model
    return max(0.0, min(recorded) - min(plain))


def _time_floor(model: nn.Module, device: torch.device, clock: Clock) -> tuple[int, int, float]:
    """Zero every distinct real storage of a fresh model once: the memset floor of this round; its bytes, those
    touched first, and the seconds. Each storage on the kind of pages the fills find: one past the mmap threshold
    is freshly mapped in every model built (its page faults timed, as a fill's are); one below it comes back, for
    fills and floor alike, from memory an earlier model freed, sometimes fresh and sometimes touched, so it is
    touched first, outside the clock, and the floor is the same kind of figure run to run."""
    storages = [t.untyped_storage() for t in storage_tensors(model).values() if t.device.type != "meta"]
    touched = [s for s in storages if device.type == "cpu" and not fresh_pages(s.nbytes(), device)]
    for storage in touched:
        storage.fill_(0)  # type: ignore[attr-defined]  # a memset of the bytes; torch's stubs omit it
    synchronize(device)
    with gc_paused():
        t0 = clock()
        for storage in storages:
            storage.fill_(0)  # type: ignore[attr-defined]
        synchronize(device)
        elapsed = clock() - t0
    return sum(s.nbytes() for s in storages), sum(s.nbytes() for s in touched), elapsed


def summarize_records(result: StrategyResult, records: Iterable[StorageRecord], peak_scratch_bytes: int = 0) -> None:
    visited = [r for r in records if r.visits]
    result.visits = sum(r.visits for r in visited)
    result.distinct_tensors = len(visited)
    result.redundant_visits = sum(r.visits - 1 for r in visited)
    result.max_visits = max((r.visits for r in visited), default=0)
    result.bytes_written = sum(r.bytes_written for r in visited)
    result.redundant_bytes_written = sum(max(0, r.bytes_written - r.nbytes) for r in visited)
    result.peak_scratch_bytes = peak_scratch_bytes


def add_to_tensor_table(table: dict[str, TensorResult], column: str, records: Iterable[StorageRecord]) -> None:
    """Add one strategy's (or loader's) per-storage visits and writes to the table, keyed by qualified name."""
    for record in records:
        entry = table.get(record.name)
        if entry is None:
            lists = {"names": list(record.names), "kinds": list(record.kinds), "shape": list(record.shape)}
            entry = table[record.name] = copied(TensorResult, record, **lists, visits={}, bytes_written={})
        entry.visits[column] = record.visits
        entry.bytes_written[column] = record.bytes_written


def summarize_model(source: ModelSource, model: nn.Module, device: torch.device | str, nbytes: int) -> ModelSummary:
    records = index_model(model)
    return model_summary(
        source,
        str(device),
        modules=sum(1 for _ in model.modules()),
        tensors=len(records),
        names=sum(len(r.names) for r in records.values()),
        nbytes=nbytes,
    )


def tensor_table(recorders: dict[str, VisitRecorder]) -> dict[str, TensorResult]:
    table: dict[str, TensorResult] = {}
    for strategy, recorder in recorders.items():
        add_to_tensor_table(table, strategy, recorder.records.values())
    return table


@dataclass(frozen=True)
class AutoRepeat:
    """``--repeat auto`` (as hyperfine decides): after ``min_rounds``, stop when every speedup's 95% interval is
    within ``tight`` of it (no speedup: every CV), when one more round would overrun ``budget_s``, or at the max."""

    budget_s: float
    min_rounds: int = 3
    max_rounds: int = 50
    tight: float = 0.05


def auto_stop(result: CompareResult, rule: AutoRepeat, rounds: int, elapsed_s: float) -> str:
    """'' to go on, else why to stop: tight, budget or max. ``rounds``: measured rounds so far."""
    if rounds < rule.min_rounds:
        return ""
    if rounds >= rule.max_rounds:
        return "max"
    per_round = elapsed_s / rounds
    if elapsed_s + per_round > rule.budget_s:
        return "budget"
    assess_noise(result)
    intervals = [(s.speedup_interval, result.speedup(s.name)) for s in result.strategies if s.speedup_interval]
    if intervals:
        tight = all(speed and low >= speed * (1 - rule.tight) and high <= speed * (1 + rule.tight)
                    for (low, high), speed in intervals)  # fmt: skip
    else:
        tight = all(s.time.cv is not None and s.time.cv <= rule.tight for s in result.strategies)
    return "tight" if tight else ""


def assess_noise(result: CompareResult) -> None:
    """Each strategy's cold start or outliers, each speedup's bootstrap interval, and whether it straddles 1.0."""
    result.noise = []
    for s in result.strategies:
        result.noise.extend(noise.sample_warnings(s.name, s.time.samples))
        share = result.share_of_floor(s.name)
        if share is not None and share > 1.0:
            result.noise.append(NoiseWarning(noise.FASTER_THAN_FLOOR, s.name, value=share))
    try:
        base = result.strategy(result.baseline_strategy)
    except KeyError:
        return
    for s in result.strategies:
        s.speedup_interval = []
        if s.name == base.name or result.nothing_to_fill:
            continue
        interval = noise.ratio_interval(base.time.samples, s.time.samples)
        if interval is None:
            continue
        s.speedup_interval = list(interval)
        if interval[0] <= 1.0 <= interval[1]:
            result.noise.append(NoiseWarning(noise.SPEEDUP_UNCERTAIN, s.name, low=interval[0], high=interval[1]))


def _past(deadline: float | None, at: float) -> bool:
    return deadline is not None and at > deadline


def _auto_stopped(
    result: CompareResult, strategies: list[StrategyResult], auto: AutoRepeat, measured: int, elapsed: float
) -> bool:
    """With ``--repeat auto``, whether the rounds so far are enough (:func:`auto_stop` says why, on ``result``)."""
    result.strategies = strategies
    result.auto_stop = auto_stop(result, auto, measured, elapsed)
    if result.auto_stop:
        result.repeat = measured
    return bool(result.auto_stop)


@dataclass
class _Tally:
    """What the rounds gather: each strategy's result and its first round's recorder (every later round must
    visit as many tensors), its worst round's memory, and the floor's readings."""

    results: dict[str, StrategyResult]
    floor: FloorResult
    first: dict[str, VisitRecorder] = field(default_factory=dict)
    memory: dict[str, MemoryUse] = field(default_factory=dict)

    @classmethod
    def of(cls, strategies: Sequence[Strategy], initializer: str | None) -> _Tally:
        """Nothing gathered yet for ``strategies``, each filled with ``initializer`` (None: its own)."""
        results = {
            s.name: StrategyResult(name=s.name, description=s.description, initializer=initializer or s.initializer)
            for s in strategies
        }
        return cls(results, FloorResult(generator_bound_share=GENERATOR_BOUND_SHARE))

    def fill(
        self,
        build: Callable[[], nn.Module],
        strategy: Strategy,
        initializer: Initializer,
        device: torch.device,
        clock: Clock,
        *,
        warming: bool,
    ) -> None:
        """One timed fill of ``strategy`` on a fresh model, then the memset floor on another: after every fill, not
        once a round, so there are as many readings as fills, in the same memory state (a fresh model), and the
        fastest is as fast as the fills could be (a preempted memset only ever reads slower, and a fill faster
        than the floor is flagged, see assess_noise)."""
        target = build()
        recorder = VisitRecorder(target)
        synchronize(device)
        reset_gpu_peak(device)
        peak = PeakRss()
        with peak.measure(), gc_paused(), heap_reused(device, grown=False):  # temporaries as the engine's
            t0 = clock()
            run_strategy(target, strategy, initializer=initializer, recorder=recorder)
            synchronize(device)
            elapsed = clock() - t0
        name = strategy.name
        if name not in self.first:
            self.first[name] = recorder
        elif recorder.visits != self.first[name].visits:
            raise RuntimeError(f"strategy {name!r} visited a different number of tensors between rounds")
        if not warming:
            self.results[name].time.add(elapsed)
            assert peak.reading is not None
            used = memory_use(device, peak.reading)
            worst = self.memory.get(name)
            if worst is None or (used.rss_peak_bytes or 0) > (worst.rss_peak_bytes or 0):
                self.memory[name] = used  # the worst round's peak is kept
        del target, recorder
        target = build()
        self.floor.bytes_written, self.floor.touched_bytes, elapsed = _time_floor(target, device, clock)
        if not warming:
            self.floor.time.add(elapsed)
        del target

    def summarize(
        self,
        result: CompareResult,
        strategies: Sequence[Strategy],
        overhead_of: Callable[[], nn.Module] | None,
        clock: Clock,
    ) -> None:
        """Each strategy's records, memory and (with ``overhead_of``, its model's build) recording overhead, the
        tensors' table and the floor onto ``result``."""
        for strategy in strategies:
            entry = self.results[strategy.name]
            recorder = self.first[strategy.name]
            summarize_records(entry, recorder.records.values(), recorder.peak_scratch_bytes)
            entry.memory = self.memory.get(strategy.name) or MemoryUse()
            if overhead_of is not None:
                entry.recording_overhead_s = _recording_overhead(overhead_of, strategy, clock)
        result.strategies = [self.results[s.name] for s in strategies]
        result.tensors = tensor_table(self.first)
        result.floor = self.floor


def run_compare(
    build: Callable[[], nn.Module],
    model: ModelSummary,
    strategies: Sequence[Strategy],
    device: torch.device,
    *,
    repeat: int = 5,
    warmup: int = 1,
    initializer: str | None = None,
    clock: Clock = time.perf_counter,
    progress: Progress | None = None,
    measure_overhead: bool = True,
    auto: AutoRepeat | None = None,
    deadline: float | None = None,
    round_estimate_s: float = 0.0,
) -> CompareResult:
    """Time each strategy over ``warmup + repeat`` interleaved rounds (A, B, C, A, B, C, ...), each fill on a
    fresh model and followed by the memset floor on another; with ``auto``, until :func:`auto_stop` says stop.

    ``deadline`` (a ``clock`` reading) bounds the call: a round is expected to take as long as the slowest so far
    (before the first, ``round_estimate_s``); a warm-up runs only when it and one measured round fit, a measured
    round after the first only when it fits (else ``auto_stop`` is ``budget``): a fill that has started is not cut.
    """
    if auto is not None:
        repeat = auto.max_rounds
    map_afresh(device)  # every round's model on pages it writes first, as the engine's worker does at start-up
    busy = contention.read()  # how busy the machine is over the rounds, stored with them
    started = clock()
    result = CompareResult(model=model, repeat=repeat, warmup=warmup)
    tally = _Tally.of(strategies, initializer)
    if strategies and "legacy" not in tally.results:
        result.baseline_strategy = strategies[0].name
    inits = {s.name: get_initializer(initializer or s.initializer) for s in strategies}
    total = (warmup + repeat) * len(strategies)
    done = 0
    slowest_round = 0.0
    warmed = measured = 0
    while measured < repeat:
        round_start = clock()
        expected = slowest_round or round_estimate_s
        warming = warmed < warmup
        if warming and expected and _past(deadline, round_start + 2 * expected):
            # A warm-up that leaves no time for a measured round is dropped (the report says how many ran).
            result.warmup = warmup = warmed
            total = (warmup + repeat) * len(strategies)
            warming = False
        if not warming and measured >= 1 and _past(deadline, round_start + expected):
            result.repeat, result.auto_stop = measured, "budget"
            break
        label = f"warm-up {warmed + 1}/{warmup}" if warming else f"round {measured + 1}/{repeat}"
        # Collect once a round, outside the clock; during a timed fill the collector is off (as timeit does).
        gc.collect()
        for strategy in strategies:
            tally.fill(build, strategy, inits[strategy.name], device, clock, warming=warming)
            done += 1
            if progress is not None:
                progress(done, total, f"{label}: {strategy.name}")
        slowest_round = max(slowest_round, clock() - round_start)
        if warming:
            warmed += 1
            continue
        measured += 1
        if auto is not None and _auto_stopped(result, [tally.results[s.name] for s in strategies], auto, measured,
                                              clock() - started):  # fmt: skip
            break
    overhead = measure_overhead and not _past(deadline, clock() + slowest_round)
    tally.summarize(result, strategies, build if overhead else None, clock)
    machine = contention.between(busy, contention.read())
    for timed in [*(s.time for s in result.strategies), tally.floor.time]:
        timed.contention, timed.device = machine, result.model.device
    assess_noise(result)
    gc.collect()
    return result
