"""Markdown rendering of ``sweep`` results."""

from __future__ import annotations

from dummyprof.reports.sweep_format import (
    FIT_HEADER,
    METRIC_LABELS,
    POINT_HEADER,
    fit_cells,
    fit_note,
    parameter_label,
    point_cells,
    sparkline,
)
from dummyprof.reports.tables.escape import markdown_text
from dummyprof.reports.tables.to_markdown import md_table
from dummyprof.results.session import Results


def sweep_markdown(results: Results) -> list[str]:
    result = results.sweep
    assert result is not None
    label = parameter_label(result)
    values = ", ".join(f"{v:,}" for v in result.values)
    lines = ["**Sweep** of " + markdown_text(f"{result.scenario} over {label}: {values}"), ""]
    rows = [
        [series, METRIC_LABELS[metric], *fit_cells(fit), sparkline(result.column(series, metric))]
        for series in result.series
        for metric in METRIC_LABELS
        if (fit := result.fit(series, metric)) is not None
    ]
    lines += md_table(["series", "metric", *FIT_HEADER, "log scale"], rows, align_right=range(2, 6))
    lines += ["", f"_{markdown_text(fit_note(result))}_", ""]
    point_rows = [
        [f"{point.value:,}", name, *point_cells(point.series[name])]
        for point in result.points
        for name in result.series
        if name in point.series
    ]
    lines += md_table([label, "series", *POINT_HEADER], point_rows, align_right=(0, 2, 3, 4, 5))
    return lines
