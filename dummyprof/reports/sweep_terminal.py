"""Terminal (Rich) rendering of ``sweep`` results: the points, the growth fits and a log-scale sparkline each."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

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
from dummyprof.results.session import Results
from dummyprof.units import format_bytes


def render_sweep(results: Results, console: Console) -> None:
    result = results.sweep
    assert result is not None
    label = parameter_label(result)
    console.print(
        f"sweep of {result.scenario} over {label}: {len(result.values)} points "
        f"({', '.join(f'{v:,}' for v in result.values)}), {result.repeat} measured round(s) per point"
    )
    if result.model_description:
        console.print(f"largest point: {result.model_description}", style="dim")
    points = Table(title="Points", title_justify="left")
    points.add_column(label, justify="right")
    points.add_column("filled", justify="right")
    points.add_column("method" if result.scenario == "engram" else "strategy")
    for column in POINT_HEADER:
        points.add_column(column, justify="right")
    for point in result.points:
        names = [s for s in result.series if s in point.series]
        for i, name in enumerate(names):
            points.add_row(
                f"{point.value:,}" if i == 0 else "",
                format_bytes(point.model_bytes) if i == 0 else "",
                name,
                *point_cells(point.series[name]),
                end_section=i == len(names) - 1,
            )
    console.print(points)
    fits = Table(title="Growth", title_justify="left")
    fits.add_column("series")
    fits.add_column("metric")
    for column in FIT_HEADER:
        fits.add_column(column, justify="right")
    fits.add_column(f"log scale, {label} {result.values[0]:,}→{result.values[-1]:,}")
    for series in result.series:
        for metric in METRIC_LABELS:
            fit = result.fit(series, metric)
            if fit is None:
                continue
            fits.add_row(series, METRIC_LABELS[metric], *fit_cells(fit), sparkline(result.column(series, metric)))
    console.print(fits)
    console.print(fit_note(result), style="dim")
