"""Metrics of the ``sweep`` scenario: growth exponents (machine-independent for counts) and exact counts.

``SERIES.visits.exponent`` is fitted to exact visit counts, so it is the same on
every machine: a gate can bound it (``limits``) or compare two series in one run
(``ratios``). ``SERIES.time.exponent`` is fitted to medians and carries the
machine's noise. ``SERIES.visits`` and ``SERIES.bytes_written`` are the exact
counts at the largest point.
"""

from __future__ import annotations

from typing import Any

from dummyprof.gate.metrics import MetricSpec, section_of
from dummyprof.results.gate import Metric
from dummyprof.results.session import Results
from dummyprof.results.sweep import SweepResult

FIT = "fit"  # a metric kind of its own: not an exact counter, not a timing with samples


def _series(options: Any) -> tuple[list[str], tuple[str, ...]]:
    if options.parameter == "rows":
        from dummyprof.scenarios.engram.options import EngramOptions, methods_to_run

        return methods_to_run(list((options.engram or EngramOptions()).methods)), ("time",)
    return list(options.compare.strategies), ("visits", "time")


def sweep_metric_names(options: Any) -> dict[str, MetricSpec]:
    series, fitted = _series(options)
    names: dict[str, MetricSpec] = {}
    for name in series:
        for metric in fitted:
            names[f"{name}.{metric}.exponent"] = MetricSpec(FIT, "exponent")
        if "visits" in fitted:
            names[f"{name}.visits"] = MetricSpec("counter", "visits")
        names[f"{name}.bytes_written"] = MetricSpec("counter", "bytes")
    return names


def sweep_metrics(results: Results) -> dict[str, Metric]:
    section: SweepResult = section_of(results, "sweep")
    metrics: dict[str, Metric] = {}
    for fit in section.fits:
        if fit.metric in ("visits", "time"):
            metrics[f"{fit.series}.{fit.metric}.exponent"] = Metric(FIT, "exponent", fit.exponent)
    largest = section.points[-1] if section.points else None
    for name, entry in (largest.series if largest else {}).items():
        if entry.visits is not None:
            metrics[f"{name}.visits"] = Metric("counter", "visits", float(entry.visits))
        metrics[f"{name}.bytes_written"] = Metric("counter", "bytes", float(entry.bytes_written))
    return metrics
