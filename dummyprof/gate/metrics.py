"""Metrics per command (torch-free): what a scenario's Results yield, and the names its options will produce.

The names of each command: docs/gate.md. Only rounds measured at full size become a time (a projected engram
method has none: its checks say "could not measure"); a sweep's ``SERIES.visits.exponent`` is fitted to exact
counts, ``SERIES.time.exponent`` to medians; engram-ranks' ``METHOD.time`` is each round's slowest rank.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from dummyprof.results.common import Contention, Estimate
from dummyprof.results.compare import CompareResult
from dummyprof.results.engram import MEASURED, EngramResult, MethodResult
from dummyprof.results.gate import Metric
from dummyprof.results.session import Results
from dummyprof.results.sweep import SweepResult

if TYPE_CHECKING:
    from dummyprof.scenarios.engram.options import EngramOptions
    from dummyprof.scenarios.engram.ranks.options import EngramRanksOptions
    from dummyprof.scenarios.options import FillGroup
    from dummyprof.scenarios.sweep.options import SweepOptions

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


def _loader_names(options: FillGroup) -> list[str]:  # the user's loaders (--loader) run as strategies of their own
    if not options.loaders:
        return []
    from dummyprof.scenarios.options import loader_names

    return loader_names(options.loaders, options.strategies)  # from the specs: the user's module is not imported


def section_of(results: Results, command: str) -> Any:
    section = getattr(results, command, None)
    if section is None:
        raise ValueError(f"the {command} scenario returned no {command} section")
    return section


def compare_metric_names(options: FillGroup) -> dict[str, MetricSpec]:
    per_strategy = {**{c: MetricSpec("counter", unit) for c, unit in COMPARE_COUNTERS.items()}, "time": TIME}
    strategies = [*options.strategies, *_loader_names(options)]
    return {f"{strategy}.{metric}": spec for strategy in strategies for metric, spec in per_strategy.items()}


def compare_metrics(results: Results) -> dict[str, Metric]:
    section: CompareResult = section_of(results, "compare")
    metrics: dict[str, Metric] = {}
    for s in section.strategies:
        for counter, unit in COMPARE_COUNTERS.items():
            metrics[f"{s.name}.{counter}"] = Metric("counter", unit, float(getattr(s, counter)))
        if s.time.samples and s.time.value is not None:
            metrics[f"{s.name}.time"] = _time(s.time)
    return metrics


def _time(time: Estimate) -> Metric:
    return Metric("time", "s", float(time.value or 0.0), Estimate.measured(time.samples, contention=time.contention))


def _worst(readings: list[Contention]) -> Contention | None:
    """Every rank's contention codes on the first contended rank's reading (else the first rank's)."""
    if not readings:
        return None
    codes = list(dict.fromkeys(code for c in readings for code in c.reasons))
    return msgspec.structs.replace(next((c for c in readings if c.contended), readings[0]), reasons=codes)


FIT = "fit"  # a metric kind of its own: not an exact counter, not a timing with samples


def _series(options: SweepOptions) -> tuple[list[str], tuple[str, ...]]:
    if options.parameter == "rows":
        from dummyprof.scenarios.engram.options import EngramOptions, methods_to_run

        return methods_to_run(list((options.engram or EngramOptions()).methods)), ("time",)
    return list(options.compare.strategies), ("visits", "time")


def sweep_metric_names(options: SweepOptions) -> dict[str, MetricSpec]:
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
    for name, entry in (section.points[-1].series if section.points else {}).items():  # the largest point
        if entry.visits is not None:
            metrics[f"{name}.visits"] = Metric("counter", "visits", float(entry.visits))
        metrics[f"{name}.bytes_written"] = Metric("counter", "bytes", float(entry.bytes_written))
    return metrics


LAYOUT_COUNTERS = ("table_bytes_per_rank", "reserved_bytes_per_rank")
METHOD_COUNTERS = ("bytes_written", "peak_scratch_bytes", "needed_bytes")  # computed from shapes, before filling
# What the fill itself reported at full size: catches a method whose code changed but whose declaration did not.
MEASURED_SCRATCH = "measured_scratch_bytes"


def engram_metric_names(options: EngramOptions) -> dict[str, MetricSpec]:
    from dummyprof.scenarios.engram.options import methods_to_run

    names = {name: BYTES for name in LAYOUT_COUNTERS}
    for method in methods_to_run(list(options.methods)):
        names.update({f"{method}.{counter}": BYTES for counter in (*METHOD_COUNTERS, MEASURED_SCRATCH)})
        names[f"{method}.time"] = TIME
    return names


def layout_counters(section: EngramResult, prefix: str = "") -> dict[str, Metric]:  # prefix: ``rank1.``
    layout = section.layout
    return {f"{prefix}{name}": Metric("counter", "bytes", float(getattr(layout, name))) for name in LAYOUT_COUNTERS}


def method_counters(method: MethodResult, prefix: str = "") -> dict[str, Metric]:
    return {
        f"{prefix}{method.name}.{counter}": Metric("counter", "bytes", float(getattr(method, counter)))
        for counter in METHOD_COUNTERS
    }


def engram_metrics(results: Results) -> dict[str, Metric]:
    section: EngramResult = section_of(results, "engram")
    metrics = layout_counters(section)
    for method in section.methods:
        metrics.update(method_counters(method))
        measured = method.measured_scratch_bytes
        if measured is not None:
            metrics[f"{method.name}.{MEASURED_SCRATCH}"] = Metric("counter", "bytes", float(measured))
        if method.mode == MEASURED and method.time.samples and method.time.value is not None:
            metrics[f"{method.name}.time"] = _time(method.time)
    return metrics


def engram_ranks_metric_names(options: EngramRanksOptions) -> dict[str, MetricSpec]:
    from dummyprof.scenarios.engram.options import methods_to_run

    methods = methods_to_run(list(options.methods))
    names: dict[str, MetricSpec] = {}
    for rank in range(options.nproc):
        names.update({f"rank{rank}.{counter}": BYTES for counter in LAYOUT_COUNTERS})
        names.update({f"rank{rank}.{m}.{counter}": BYTES for m in methods for counter in METHOD_COUNTERS})
    names.update({f"{method}.time": TIME for method in methods})
    return names


def engram_ranks_metrics(results: Results) -> dict[str, Metric]:
    if not results.ranks:
        raise ValueError("the multi-rank engram scenario returned no ranks")
    metrics: dict[str, Metric] = {}
    rounds: dict[str, list[list[float]]] = {}
    readings: list[Contention] = []
    for record in sorted(results.ranks, key=lambda r: r.rank):
        section = record.engram
        if section is None:
            raise ValueError(f"rank {record.rank} returned no engram section")
        metrics.update(layout_counters(section, f"rank{record.rank}."))
        readings += [m.time.contention for m in section.methods if m.time.contention is not None][:1]
        for method in section.methods:
            metrics.update(method_counters(method, f"rank{record.rank}."))
            if method.mode == MEASURED and method.time.samples:
                rounds.setdefault(method.name, []).append(list(method.time.samples))
    for name, per_rank in rounds.items():
        if len(per_rank) != len(results.ranks) or len({len(s) for s in per_rank}) != 1:
            continue  # not measured in full on every rank, or not in step: no critical path to gate
        slowest = [max(values) for values in zip(*per_rank, strict=True)]
        metrics[f"{name}.time"] = _time(Estimate.measured(slowest, contention=_worst(readings)))
    return metrics
