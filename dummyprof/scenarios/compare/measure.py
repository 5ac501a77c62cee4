"""compare's measurement of one model (one process, or a deployment's shard): counts on meta, then measured
rounds or a projection."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from dummyprof.anatomy import allocated_bytes
from dummyprof.errors import DoesNotFitError, UsageError
from dummyprof.loaders import random_fast
from dummyprof.loaders.counting import CountResult
from dummyprof.loaders.initializers import FastInitializer
from dummyprof.loaders.strategies import Strategy, get_strategy
from dummyprof.loaders.user_loader import loader_strategy
from dummyprof.measure.budget import offered_seconds
from dummyprof.measure.device import resolve_device
from dummyprof.measure.environment import collect_environment
from dummyprof.models.source import ModelSource
from dummyprof.results.compare import Projection, SizeDecision, StrategyResult
from dummyprof.results.session import Results
from dummyprof.scenarios.compare.options import CompareOptions
from dummyprof.scenarios.compare.runner import AutoRepeat, Clock, Progress, run_compare, summarize_model
from dummyprof.scenarios.compare.sizing import (
    COUNTING_SHARE,
    MetaCounts,
    count_strategies,
    counting_limit,
    decide,
    projected_result,
)
from dummyprof.scenarios.compare.trace import trace_fills
from dummyprof.scenarios.model_choice import check_source_fits, chosen_source
from dummyprof.units import format_bytes, format_seconds

if TYPE_CHECKING:
    import torch


def _same_counts(entry: StrategyResult, count: CountResult) -> bool:
    records = count.recorder.records.values()
    return entry.visits == count.recorder.visits and entry.bytes_written == sum(r.bytes_written for r in records)


MIN_REDUCED_REPEATS = 3  # fewer measured rounds than this say too little: project instead


def budget_that_measures(decision: SizeDecision, projections: dict[str, Projection]) -> int:
    """The ``--time-budget`` (whole seconds) under which ``decide`` measures this model instead of projecting it:
    the measured rounds' prediction at its interval's high end, with the margin a rerun's prediction needs, and
    the counting and calibration that come before the rounds."""
    predicted = decision.predicted_s or 0.0
    times = [p.time for p in projections.values()]
    noise = max(((t.high or 0.0) / t.value for t in times if t.value and t.value > 0), default=1.0)
    before = decision.counting_s + decision.calibration_s
    return offered_seconds(predicted, noise=noise) + math.ceil(before)


def _over(decision: SizeDecision) -> str:
    if decision.reason == "time":
        return f"its measured rounds are predicted at {format_seconds(decision.predicted_s)}, over the time budget"
    return f"it needs {format_bytes(decision.needed_bytes)}, over the {format_bytes(decision.budget_bytes)} it may use"


def _fill_fix(decision: SizeDecision, projections: dict[str, Projection]) -> str:
    """The budget that lets this model be filled: a --time-budget that measures it, or the memory it must fit."""
    if decision.reason == "time":
        return f"give --time-budget {budget_that_measures(decision, projections)}s, or shrink the model (--model-arg)"
    return f"shrink the model (--model-arg) to {format_bytes(decision.budget_bytes)} with its largest temporary"


def size_up(
    options: CompareOptions, device: torch.device, source: ModelSource | None = None
) -> tuple[ModelSource, list[Strategy], MetaCounts, SizeDecision, dict[str, Projection]]:
    """The first half of a run: the model, each strategy's exact counts on meta, measure or project."""
    if source is None:
        source = chosen_source(options, counting_limit(options.time_budget), COUNTING_SHARE)
    builtin = [get_strategy(name) for name in options.strategies]
    meta = count_strategies(source, builtin, options.initializer, time_budget_s=options.time_budget)
    decision, projections = decide(
        source,
        meta,
        device,
        max_memory=options.max_memory,
        rounds=options.warmup + options.repeat,
        time_budget_s=options.time_budget,
    )
    return source, builtin, meta, decision, projections


def _repeat(options: CompareOptions, decision: SizeDecision) -> int:
    """The measured rounds: as asked, or fewer where only fewer fit the time budget: the most it holds, at least
    MIN_REDUCED_REPEATS (``decision`` is then measured, ``reduced``, rather than projected; the report says so), else
    0 (it stays projected)."""
    if decision.mode != "projected" or decision.reason != "time" or not options.project or options.repeat_auto:
        return options.repeat
    if not decision.predicted_s:
        return 0
    rounds = options.warmup + options.repeat  # what decision.predicted_s is for
    per_round = decision.predicted_s / rounds
    repeat = min(options.repeat - 1, int(options.time_budget / per_round) - options.warmup)
    if repeat < MIN_REDUCED_REPEATS:
        return 0
    decision.predicted_s = decision.predicted_s * (options.warmup + repeat) / rounds
    decision.mode, decision.reason = "measured", "reduced"
    return repeat


def _refuse_projection(
    options: CompareOptions,
    decision: SizeDecision,
    source: ModelSource,
    device: torch.device,
    loaders: bool,
    projections: dict[str, Projection],
) -> None:
    """A projected model is refused without ``--project``, and with what only a real fill gives (a trace, a
    loader's writes); each refusal names the budget that works."""
    if not options.project:
        check_source_fits(source, device, options.max_memory)
        raise DoesNotFitError.for_field(
            "time_budget",
            f"{source.description}: the measured rounds are predicted at {format_seconds(decision.predicted_s)}, "
            f"over the time budget of {format_seconds(options.time_budget)}; give --time-budget "
            f"{budget_that_measures(decision, projections)}s or shrink the model",
        )
    for field, wanted, why in (
        ("trace", options.trace, "a trace is recorded from a real fill"),
        ("loaders", loaders, "a loader's writes are only seen by running it"),
    ):
        if wanted:
            raise UsageError.for_field(
                field,
                f"{source.description} is projected, not filled, here ({_over(decision)}); "
                f"{why}: {_fill_fix(decision, projections)}",
            )


def measure(
    options: CompareOptions,
    *,
    source: ModelSource | None = None,
    clock: Clock = time.perf_counter,
    progress: Progress | None = None,
    started: float | None = None,
) -> Results:
    """Measure (or project) every strategy on ``source`` (default: the options' model), within
    ``options.time_budget`` from ``started``; ``options`` are validated by the caller."""
    started = clock() if started is None else started
    from dummyprof.scenarios.loader_runs import apply_traces, load_loaders, trace_loaders

    loaders = load_loaders(options.loaders, options.loader_args, options.strategies)
    device = resolve_device(options.device)
    source, builtin, meta, decision, projections = size_up(options, device, source)
    repeat = _repeat(options, decision)
    if decision.mode == "projected":
        _refuse_projection(options, decision, source, device, bool(loaders), projections)
        result = projected_result(source, meta, builtin, projections, decision, str(device))
        return Results(
            command="compare", environment=collect_environment(device), compare=result, notices=list(source.notes)
        )
    build = source.build
    probe = build(device)
    summary = summarize_model(source, probe, device, allocated_bytes(probe))
    del probe
    strategies = builtin + [loader_strategy(loader) for loader in loaders]
    # The write tracing and the --trace fills run before the timed rounds, so their time comes out of
    # the rounds' share of the budget instead of running past its end.
    traced = trace_loaders(loaders, lambda: build(device))
    traces = trace_fills(build, device, builtin, options.initializer) if options.trace else None
    rounds = options.warmup + repeat  # what decision.predicted_s is for
    result = run_compare(
        lambda: build(device),
        summary,
        strategies,
        device,
        repeat=repeat,
        warmup=options.warmup,
        initializer=options.initializer,
        clock=clock,
        progress=progress,
        auto=AutoRepeat(budget_s=options.time_budget) if options.repeat_auto else None,
        measure_overhead=not loaders,  # it would run each loader six more times
        deadline=started + options.time_budget,
        round_estimate_s=(decision.predicted_s or 0.0) / rounds,
    )
    result.size = decision
    if decision.reason == "reduced" or (result.auto_stop == "budget" and not options.repeat_auto):
        result.repeats_requested = options.repeat
    for entry in result.strategies:
        entry.projection = projections.get(entry.name)  # set when calibrated: the projection next to the measurement
    if builtin and all(_same_counts(result.strategy(s.name), meta.counts[s.name]) for s in builtin):
        result.counts = "exact"  # the real fills recorded what the counting pass on meta predicted
    loader_notes = apply_traces(result, traced)
    result.trace = traces or []
    engine = random_fast.default_engine() if options.initializer == FastInitializer.name else ""
    environment = collect_environment(device, random_fast_engine=engine)
    return Results(command="compare", environment=environment, compare=result, notices=source.notes + loader_notes)
