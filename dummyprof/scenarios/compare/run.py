"""The ``compare`` scenario: fill strategies side by side on one model, or per rank of a deployment."""

from __future__ import annotations

import time

from dummyprof.models.source import ModelSource
from dummyprof.results.session import Results
from dummyprof.scenarios.compare.measure import measure
from dummyprof.scenarios.compare.options import CompareOptions, validate
from dummyprof.scenarios.compare.runner import Clock, Progress

__all__ = ["CompareOptions", "run", "validate"]


def run(
    options: CompareOptions,
    *,
    source: ModelSource | None = None,
    clock: Clock = time.perf_counter,
    progress: Progress | None = None,
) -> Results:
    """Validate and measure, within ``options.time_budget``: counting and calibration take their shares, the
    measured rounds stop at what is left (one at least: a fill that has started cannot be cut short)."""
    started = clock()
    validate(options)
    if options.deployed or options.online_quant:
        from dummyprof.scenarios.deployment.fills import measure_deployment

        return measure_deployment(options, strategies=options.strategies, source=source, progress=progress)
    return measure(options, source=source, clock=clock, progress=progress, started=started)
