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
    from dummyprof.measure.device import resolve_device
    from dummyprof.scenarios.compare.run import size_up

    largest_value = options.values[-1]
    largest = compare_options(options, largest_value)
    if largest.repeat_auto:
        return  # --repeat auto stops at the budget by itself
    _, _, _, decision, _ = size_up(largest, resolve_device(largest.device))
    if decision.mode == "projected" and decision.reason == "time":
        point = f"{options.model_arg or options.parameter}={largest_value}"
        raise DoesNotFitError.for_field(
            "time_budget",
            f"the sweep's largest point ({point}) is predicted at {format_seconds(decision.predicted_s)} for "
            f"its {largest.warmup + largest.repeat} rounds, over the {format_seconds(largest.time_budget)} each "
            f"point may take (a sweep never projects); raise --time-budget past "
            f"{format_seconds(decision.predicted_s)}, end the range before {largest_value}, or lower --repeat",
        )
