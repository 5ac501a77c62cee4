"""A compare sweep's plan, checked before its first point: the largest point must fit its time budget.

A sweep never projects a point, and each point is a compare run that refuses rounds predicted past
``--time-budget``. The largest point is the slowest, so it is predicted here, the way compare
predicts it (the same counting pass and calibration), and a sweep that would fail there is refused
before the smaller points spend minutes.
"""

from __future__ import annotations

from dummyprof.errors import DoesNotFitError
from dummyprof.scenarios.sweep.options import SweepOptions, compare_options
from dummyprof.units import format_seconds


def check_compare_plan(options: SweepOptions) -> None:
    """Refuse, naming --time-budget, when the largest point's measured rounds are predicted past it."""
    from dummyprof.loaders.strategies import get_strategy
    from dummyprof.measure.device import resolve_device
    from dummyprof.scenarios.compare.sizing import count_strategies, decide
    from dummyprof.scenarios.model_choice import meta_build_limits, source_or_tree

    largest_value = options.values[-1]
    largest = compare_options(options, largest_value)
    if largest.repeat_auto:
        return  # --repeat auto stops at the budget by itself
    device = resolve_device(largest.device)
    source = source_or_tree(
        model=largest.model,
        preset=largest.preset,
        model_args=largest.model_args,
        tree=largest.tree_spec(),
        trust_remote_code=largest.trust_remote_code,
        limits=meta_build_limits(largest.time_budget),
    )
    strategies = [get_strategy(name) for name in largest.strategies]
    meta = count_strategies(source, strategies, largest.initializer, time_budget_s=largest.time_budget)
    decision, _ = decide(
        source,
        meta,
        device,
        max_memory=largest.max_memory,
        rounds=largest.warmup + largest.repeat,
        time_budget_s=largest.time_budget,
    )
    if decision.mode == "projected" and decision.reason == "time":
        point = f"{options.model_arg or options.parameter}={largest_value}"
        raise DoesNotFitError(
            "--time-budget",
            f"the sweep's largest point ({point}) is predicted at {format_seconds(decision.predicted_s)} for "
            f"its {largest.warmup + largest.repeat} rounds, over the {format_seconds(largest.time_budget)} each "
            f"point may take (a sweep never projects); raise --time-budget past "
            f"{format_seconds(decision.predicted_s)}, end the range before {largest_value}, or lower --repeat",
        )
