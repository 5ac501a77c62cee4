"""Metrics of the multi-rank ``engram`` scenario: exact counters per rank, critical-path time per method.

Counters are per rank (``rank1.table_bytes``, ``rank1.memset.bytes_written``): computed from each
rank's shard, so any change is real. ``METHOD.time`` is the start-up critical path of a fill: per
full-size round, the slowest rank's time (all ranks filled in step).
"""

from __future__ import annotations

import statistics
from typing import Any

from dummyprof.gate.engram_metrics import LAYOUT_COUNTERS, MEASURED, METHOD_COUNTERS, layout_counters, method_counters
from dummyprof.gate.metrics import BYTES, TIME, MetricSpec
from dummyprof.results.gate import Metric
from dummyprof.results.session import Results


def _methods(options: Any) -> list[str]:
    from dummyprof.loaders.fp8_methods import FLOOR

    names = list(options.methods)
    return names if FLOOR in names else [*names, FLOOR]


def engram_ranks_metric_names(options: Any) -> dict[str, MetricSpec]:
    methods = _methods(options)
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
    for record in sorted(results.ranks, key=lambda r: r.rank):
        section = record.engram
        if section is None:
            raise ValueError(f"rank {record.rank} returned no engram section")
        metrics.update(layout_counters(section, f"rank{record.rank}."))
        for method in section.methods:
            metrics.update(method_counters(method, f"rank{record.rank}."))
            if method.mode == MEASURED and method.timing.samples_s:
                rounds.setdefault(method.name, []).append(list(method.timing.samples_s))
    for name, per_rank in rounds.items():
        if len(per_rank) != len(results.ranks) or len({len(s) for s in per_rank}) != 1:
            continue  # not measured in full on every rank, or not in step: no critical path to gate
        slowest = [max(values) for values in zip(*per_rank, strict=True)]
        metrics[f"{name}.time"] = Metric("time", "s", statistics.median(slowest), slowest)
    return metrics
