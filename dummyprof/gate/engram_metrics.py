"""Metrics of the ``engram`` scenario: per-rank table bytes, and per fill method its exact bytes and time.

Only full-size measured rounds become ``METHOD.time``; a projected method has
no time metric here, so its timing and ratio checks say "could not measure"
instead of comparing a projection as if it were a measurement.
"""

from __future__ import annotations

from typing import Any

from dummyprof.gate.metrics import BYTES, TIME, MetricSpec, section_of
from dummyprof.results.engram import EngramResult, MethodResult
from dummyprof.results.gate import Metric
from dummyprof.results.session import Results

LAYOUT_COUNTERS = ("table_bytes_per_rank", "reserved_bytes_per_rank")
METHOD_COUNTERS = ("bytes_written", "peak_scratch_bytes", "needed_bytes")  # computed from shapes, before filling
# What the fill itself reported at full size: catches a method whose code changed but whose declaration did not.
MEASURED_SCRATCH = "measured_scratch_bytes"
MEASURED = "measured"  # MethodResult.mode of a method timed at full size


def engram_metric_names(options: Any) -> dict[str, MetricSpec]:
    from dummyprof.scenarios.engram.options import methods_to_run

    names = {name: BYTES for name in LAYOUT_COUNTERS}
    for method in methods_to_run(list(options.methods)):
        names.update({f"{method}.{counter}": BYTES for counter in (*METHOD_COUNTERS, MEASURED_SCRATCH)})
        names[f"{method}.time"] = TIME
    return names


def layout_counters(section: EngramResult, prefix: str = "") -> dict[str, Metric]:
    """The table bytes held and reserved; ``prefix`` names one rank of several (``rank1.``)."""
    layout = section.layout
    return {f"{prefix}{name}": Metric("counter", "bytes", float(getattr(layout, name))) for name in LAYOUT_COUNTERS}


def method_counters(method: MethodResult, prefix: str = "") -> dict[str, Metric]:
    """A fill method's exact bytes, computed from shapes; ``prefix`` as for :func:`layout_counters`."""
    return {
        f"{prefix}{method.name}.{counter}": Metric("counter", "bytes", float(getattr(method, counter)))
        for counter in METHOD_COUNTERS
    }


def engram_metrics(results: Results) -> dict[str, Metric]:
    section: EngramResult = section_of(results, "engram")
    metrics = layout_counters(section)
    for method in section.methods:
        metrics.update(method_counters(method))
        if method.measured_scratch_bytes is not None:
            metrics[f"{method.name}.{MEASURED_SCRATCH}"] = Metric(
                "counter", "bytes", float(method.measured_scratch_bytes)
            )
        median = method.timing.median  # None without samples
        if method.mode == MEASURED and median is not None:
            metrics[f"{method.name}.time"] = Metric("time", "s", median, list(method.timing.samples_s))
    return metrics
