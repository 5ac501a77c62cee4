"""Terminal (Rich) rendering of ``sweep`` results: the points, the growth fits and a log-scale sparkline each.

Sized for 80 columns (issue #13): the points are one table when it fits the width, else two (time, and
work) like compare's; a time range has its own column, projected times are marked ``~``.
"""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from dummyprof.reports.narrow import PROJECTED_MARK, PROJECTED_NOTE, narrow_table, number_columns, text_column
from dummyprof.reports.sweep_format import fit_note, parameter_label, sparkline
from dummyprof.results.session import Results
from dummyprof.results.sweep import GrowthFit, SeriesPoint, SweepResult
from dummyprof.units import format_bytes, format_seconds

# Shorter than the Markdown report's labels ("time (median)", "bytes written"): the table title says median.
METRICS = {"visits": "visits", "time": "time", "bytes": "written"}


def _time(entry: SeriesPoint) -> str:
    if entry.seconds is None:
        return "n/a"
    text = format_seconds(entry.seconds)
    return PROJECTED_MARK + text if entry.projected else text


def _range(entry: SeriesPoint) -> str:
    if entry.projected or len(entry.samples_s) < 2:
        return ""
    return f"{format_seconds(min(entry.samples_s))}–{format_seconds(max(entry.samples_s))}"


def _rows(result: SweepResult) -> list[tuple[str, str, str, SeriesPoint]]:
    """(value, filled, series, entry) per row; value and filled only on a point's first row."""
    rows = []
    for point in result.points:
        names = [s for s in result.series if s in point.series]
        for i, name in enumerate(names):
            first = i == 0
            rows.append(
                (f"{point.value:,}" if first else "", format_bytes(point.model_bytes) if first else "", name,
                 point.series[name])
            )  # fmt: skip
    return rows


def points_tables(result: SweepResult, width: int) -> list[Table]:
    """One table of every figure per point if it fits ``width``, else a time table and a work table."""
    label = parameter_label(result)
    series_header = "method" if result.scenario == "engram" else "strategy"
    ranged = any(_range(entry) for *_, entry in _rows(result))
    counted = any(entry.visits is not None for *_, entry in _rows(result))

    def table(title: str, *, time: bool, work: bool) -> Table:
        t = narrow_table(title)
        text_column(t, label, justify="right")
        if work:
            number_columns(t, "filled")
        t.add_column(series_header, no_wrap=True)
        if time:
            number_columns(t, "median", *(["min–max"] if ranged else []))
        if work:
            number_columns(t, *(["visits"] if counted else []), "written", "peak RSS")
        for value, filled, name, entry in _rows(result):
            cells = [value] + ([filled] if work else []) + [name]
            if time:
                cells += [_time(entry)] + ([_range(entry)] if ranged else [])
            if work:
                if counted:
                    cells.append("n/a" if entry.visits is None else f"{entry.visits:,}")
                rss = entry.peak_rss_bytes
                cells += [format_bytes(entry.bytes_written), format_bytes(rss) if rss is not None else "n/a"]
            t.add_row(*cells)
        return t

    whole = table("Points (time: median of the rounds)", time=True, work=True)
    wide = Console(width=10_000)  # the table's natural width, before any column would wrap or fold
    if Measurement.get(wide, wide.options, whole).maximum <= width:
        return [whole]
    return [
        table("Points: time (median of the rounds)", time=True, work=False),
        table("Points: work", time=False, work=True),
    ]


def _fit_cells(fit: GrowthFit) -> list[str]:
    interval = f"[{fit.ci_low:.2f}, {fit.ci_high:.2f}]" if fit.ci_low is not None and fit.ci_high is not None else "n/a"
    r2 = f"{fit.r_squared:.4f}" if fit.r_squared is not None else "n/a"
    return [f"{fit.exponent:.2f}", interval, r2, f"{fit.points} ({fit.x_from:,.0f}–{fit.x_to:,.0f})"]


def growth_table(result: SweepResult) -> Table:
    table = narrow_table("Growth (log-log fit: figure ~ value^exponent)")
    table.add_column("series", no_wrap=True)
    table.add_column("metric", no_wrap=True)
    number_columns(table, "exponent", "95% interval", "R²", "points")
    table.add_column("trend", no_wrap=True)
    for series in result.series:
        first = True
        for metric, name in METRICS.items():
            fit = result.fit(series, metric)
            if fit is None:
                continue
            table.add_row(series if first else "", name, *_fit_cells(fit), sparkline(result.column(series, metric)))
            first = False
    return table


def render_sweep(results: Results, console: Console) -> None:
    result = results.sweep
    assert result is not None
    label = parameter_label(result)
    console.print(
        f"sweep of {result.scenario} over {label}: {len(result.values)} points "
        f"({', '.join(f'{v:,}' for v in result.values)}), {result.repeat} measured round(s) per point"
    )
    if result.failed_at is not None:
        console.print(
            f"STOPPED at {label} {result.failed_at:,}: {len(result.points)} of {len(result.values)} points measured "
            "and kept (the error is the last line)",
            style="bold",
        )
    if result.model_description:
        console.print(f"largest point: {result.model_description}", style="dim")
    for table in points_tables(result, console.width):
        console.print(table)
    if any(entry.projected for point in result.points for entry in point.series.values()):
        console.print(PROJECTED_NOTE, style="dim")
    console.print(growth_table(result))
    console.print(
        f"points: how many values the fit used (their range); trend: each value's figure on a log scale, "
        f"{label} {result.values[0]:,}→{result.values[-1]:,}; R² n/a: two points",
        style="dim",
    )
    console.print(fit_note(result), style="dim")
