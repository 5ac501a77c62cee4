"""The ``compare`` scenario: fill strategies side by side on one model."""

from __future__ import annotations

import time

from dummyprof.anatomy import allocated_bytes
from dummyprof.errors import UsageError
from dummyprof.loaders.strategies import get_strategy
from dummyprof.measure.device import resolve_device
from dummyprof.measure.environment import collect_environment
from dummyprof.measure.recorder import index_model
from dummyprof.models.source import ModelSource
from dummyprof.results.session import Results
from dummyprof.scenarios.compare.options import DEFAULT_STRATEGIES, CompareOptions, validate
from dummyprof.scenarios.compare.runner import Clock, Progress, run_compare
from dummyprof.scenarios.model_choice import check_source_fits, model_summary, source_or_tree

__all__ = ["DEFAULT_STRATEGIES", "CompareOptions", "run", "validate"]


def run(
    options: CompareOptions,
    *,
    source: ModelSource | None = None,
    clock: Clock = time.perf_counter,
    progress: Progress | None = None,
) -> Results:
    """Validate, size-check, measure and return the compare Results."""
    validate(options)
    from dummyprof.scenarios.loader_runs import apply_traces, load_loaders, loader_strategies

    loaders = load_loaders(options.loaders, options.loader_args, options.strategies)
    if options.repeat < 1:
        raise UsageError("--repeat", f"must be at least 1, got {options.repeat}")
    device = resolve_device(options.device)
    if source is None:
        source = source_or_tree(
            model=options.model,
            preset=options.preset,
            model_args=options.model_args,
            tree=options.tree_spec(),
            trust_remote_code=options.trust_remote_code,
        )
    flag = "--preset" if options.preset else source.size_flag
    check_source_fits(source, device, options.max_memory, flag=flag)
    build = source.build
    probe = build(device)
    records = index_model(probe)
    summary = model_summary(
        source,
        str(device),
        modules=sum(1 for _ in probe.modules()),
        tensors=len(records),
        names=sum(len(r.names) for r in records.values()),
        nbytes=allocated_bytes(probe),
    )
    del probe
    strategies = [get_strategy(name) for name in options.strategies] + loader_strategies(loaders)
    result = run_compare(
        lambda: build(device),
        summary,
        strategies,
        device,
        repeat=options.repeat,
        warmup=options.warmup,
        initializer=options.initializer,
        clock=clock,
        progress=progress,
        measure_overhead=not loaders,  # it would run each loader six more times
    )
    loader_notes = apply_traces(result, loaders, lambda: build(device))
    results = Results(command="compare", environment=collect_environment(device), compare=result)
    results.notices.extend(source.notes)
    results.notices.extend(loader_notes)
    return results
