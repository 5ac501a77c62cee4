"""github-action-benchmark's ``customSmallerIsBetter`` list of {name, unit, value}: every metric of every measured
scenario and every in-run ratio, for the action to chart across commits."""

from __future__ import annotations

import json

from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.results.session import Results


def benchmark_entries(results: Results) -> list[dict[str, object]]:
    section = results.gate
    assert section is not None
    entries: list[dict[str, object]] = []
    for run in section.scenarios:
        if run.error is not None:
            continue
        for name, metric in run.metrics.items():
            entry: dict[str, object] = {"name": f"{run.name}: {name}", "unit": metric.unit, "value": metric.value}
            if metric.kind == "time":
                stdev = metric.time.stdev if metric.time is not None else None
                if stdev is not None:
                    entry["range"] = f"± {stdev:.6g}"
                entry["extra"] = f"median of {len(metric.samples)} interleaved rounds"
            entries.append(entry)
    for check in section.checks:
        if check.kind == "ratio" and check.current is not None:
            entries.append(
                {
                    "name": f"{check.scenario}: {check.name}",
                    "unit": "ratio",
                    "value": check.current,
                    "extra": f"same-run ratio of medians; limit {check.threshold}",
                }
            )
    return entries


# Each entry begins with the command that wrote it (github-action-benchmark keeps name, unit, value, range and extra,
# and drops any other key): the file is told as dummyprof's own (files/outputs.own_kind), the next run replaces it.
OWNER_KEY = "dummyprof"


def render(results: Results, options: RenderOptions) -> str:
    entries = [{OWNER_KEY: results.command, **entry} for entry in benchmark_entries(results)]
    return json.dumps(entries, indent=2, allow_nan=False) + "\n"


REPORTER = Reporter(
    "benchmark-json",
    ".json",
    frozenset({"gate", "baseline"}),
    render,
    "metrics for github-action-benchmark (tool: customSmallerIsBetter)",
)
