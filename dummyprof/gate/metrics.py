"""Metrics per command: what a scenario's Results yield, and which names its options will produce.

One registry entry per command, so a new scenario plugs in without touching the checks.
Torch-free: extraction reads only the Results model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dummyprof.results.compare import CompareResult
from dummyprof.results.gate import Metric
from dummyprof.results.session import Results

# Counters of every strategy, with their units. All are exact and smaller is better.
COMPARE_COUNTERS = {
    "visits": "visits",
    "redundant_visits": "visits",
    "max_visits": "visits",
    "bytes_written": "bytes",
    "redundant_bytes_written": "bytes",
    "peak_scratch_bytes": "bytes",
}


@dataclass(frozen=True)
class MetricSpec:
    kind: str  # counter or time
    unit: str


TIME = MetricSpec("time", "s")
BYTES = MetricSpec("counter", "bytes")

Extractor = Callable[[Results], dict[str, Metric]]
Namer = Callable[[Any], dict[str, MetricSpec]]


def _loader_names(options: Any) -> list[str]:
    """Names of the user's loaders (``compare --loader``), which run as strategies of their own."""
    specs = getattr(options, "loaders", None)
    if not specs:
        return []
    from dummyprof.scenarios.options import loader_names

    return loader_names(specs, options.strategies)  # from the specs: the user's module is not imported


def section_of(results: Results, command: str) -> Any:
    """The command's section of ``results``; a scenario that returned none is a bug, said as one."""
    section = getattr(results, command, None)
    if section is None:
        raise ValueError(f"the {command} scenario returned no {command} section")
    return section


def compare_metric_names(options: Any) -> dict[str, MetricSpec]:
    per_strategy = {**{c: MetricSpec("counter", unit) for c, unit in COMPARE_COUNTERS.items()}, "time": TIME}
    strategies = [*options.strategies, *_loader_names(options)]
    return {f"{strategy}.{metric}": spec for strategy in strategies for metric, spec in per_strategy.items()}


def compare_metrics(results: Results) -> dict[str, Metric]:
    section: CompareResult = section_of(results, "compare")
    metrics: dict[str, Metric] = {}
    for s in section.strategies:
        for counter, unit in COMPARE_COUNTERS.items():
            metrics[f"{s.name}.{counter}"] = Metric("counter", unit, float(getattr(s, counter)))
        median = s.timing.median
        if median is not None:
            metrics[f"{s.name}.time"] = Metric("time", "s", float(median), list(s.timing.samples_s))
    return metrics
