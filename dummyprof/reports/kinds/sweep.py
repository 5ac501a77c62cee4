"""``sweep``'s kind: the points, the growth fits and a log-scale sparkline each; its summary; its log-log charts."""

from __future__ import annotations

import math
from typing import Any

from dummyprof.reports import html_figures as charts
from dummyprof.reports.format import estimate_cell, estimate_range, projected_note
from dummyprof.reports.kind import Kind
from dummyprof.reports.tables.escape import html_text as text
from dummyprof.reports.tables.model import DIM, NAME, NUMBER, STRONG, WORD, Block, Field, Line, Table
from dummyprof.results.sweep import GrowthFit, SweepResult
from dummyprof.units import format_bytes

SPARK = "▁▂▃▄▅▆▇█"
# Each metric a sweep fits: its name in the growth table, its chart's axis and unit (bytes: the binary unit that fits
# the largest).
METRICS = {
    "visits": ("visits", "visits", ""),
    "time": ("time", "median time", "s"),
    "bytes": ("written", "bytes written", ""),
}


def sparkline(values: list[float | None]) -> str:
    """One character per point, heights on a log scale (a power law rises evenly); a gap where unmeasured."""
    logs = [math.log(v) if v is not None and v > 0 else None for v in values]
    known = [v for v in logs if v is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    span = high - low or 1.0
    return "".join(" " if v is None else SPARK[round((v - low) / span * (len(SPARK) - 1))] for v in logs)


def parameter_label(result: SweepResult) -> str:
    return result.parameter.replace("model-arg:", "model argument ")


def fit_note(result: SweepResult) -> str:
    return (
        f"log-log least squares over {parameter_label(result)} {result.fit_from:,}–{result.values[-1]:,} "
        "(smaller values carry lower-order terms that bend the curve; --fit-from changes the start). "
        "Exponent 2: doubling the parameter quadruples the figure; 1: doubles it."
    )


def points_table(result: SweepResult) -> Table:
    """A row per point and series; the value and the model's bytes on a point's first row."""
    fields: list[Field] = [
        ((parameter_label(result), NUMBER), lambda r: f"{r[0].value:,}" if r[1] == 0 else ""),
        (("method" if result.scenario == "engram" else "strategy", WORD), lambda r: r[2]),
        (("filled", NUMBER), lambda r: format_bytes(r[0].model_bytes) if r[1] == 0 else ""),
        (("median", NUMBER), lambda r: estimate_cell(r[3].time)),
        (("min–max", NUMBER), lambda r: estimate_range(r[3].time)),
        (("visits", NUMBER), lambda r: "n/a" if r[3].visits is None else f"{r[3].visits:,}"),
        (("written", NUMBER), lambda r: format_bytes(r[3].bytes_written)),
        (("peak RSS", NUMBER), lambda r: format_bytes(r[3].peak_rss_bytes)),
    ]
    rows = [
        (point, i, name, point.series[name])
        for point in result.points
        for i, name in enumerate(s for s in result.series if s in point.series)
    ]
    notes = projected_note(entry.time for point in result.points for entry in point.series.values())
    return Table.over("Points (time: median of the rounds)", fields, rows, keys=2, notes=notes)


def growth_table(result: SweepResult) -> Table:
    """A row per series and metric it has a fit for, the series named on its first row."""
    rows = []  # (the series on its first row, the series, the metric, its fit)
    for s in result.series:
        fits = [(metric, fit) for metric in METRICS if (fit := result.fit(s, metric)) is not None]
        rows += [("" if i else s, s, metric, fit) for i, (metric, fit) in enumerate(fits)]
    fields: list[Field] = [
        (("series", NAME), lambda f: f[0]),
        (("metric", WORD), lambda f: METRICS[f[2]][0]),
        (("exponent", NUMBER), lambda f: f"{f[3].exponent:.2f}"),
        (("95% interval", NUMBER), lambda f: _interval(f[3])),
        (("R²", NUMBER), lambda f: f"{f[3].r_squared:.4f}" if f[3].r_squared is not None else "n/a"),
        (("points", NUMBER), lambda f: f"{f[3].points} ({f[3].x_from:,.0f}–{f[3].x_to:,.0f})"),
        (("trend", WORD), lambda f: sparkline(result.column(f[1], f[2]))),
    ]
    note = (
        f"points: how many values the fit used (their range); trend: each value's figure on a log scale, "
        f"{parameter_label(result)} {result.values[0]:,}→{result.values[-1]:,}; R² n/a: two points"
    )
    return Table.over("Growth (log-log fit: figure ~ value^exponent)", fields, rows, keys=2, notes=[note])


def _interval(fit: GrowthFit) -> str:
    return f"[{fit.ci_low:.2f}, {fit.ci_high:.2f}]" if fit.ci_low is not None and fit.ci_high is not None else "n/a"


def sweep_blocks(result: SweepResult) -> list[Block]:
    blocks: list[Block] = [
        Line(
            f"sweep of {result.scenario} over {parameter_label(result)}: {len(result.values)} points "
            f"({', '.join(f'{v:,}' for v in result.values)}), {result.repeat} measured round(s) per point"
        )
    ]
    if result.failed_at is not None:
        blocks.append(
            Line(
                f"STOPPED at {parameter_label(result)} {result.failed_at:,}: {len(result.points)} of "
                f"{len(result.values)} points measured and kept (the error is the last line)",
                STRONG,
            )
        )
    if result.model_description:
        blocks.append(Line(f"largest point: {result.model_description}", DIM))
    return [*blocks, points_table(result), growth_table(result), Line(fit_note(result), DIM)]


def sweep_summary(result: SweepResult) -> str:
    """Exponents of the headline metric per series: exact visits for compare, time for engram (about 80 columns)."""
    metric = "visits" if result.scenario == "compare" else "time"
    fits = [result.fit(s, metric) for s in result.series]
    shown = [f"{f.series} {f.exponent:.2f}" for f in fits if f is not None]
    if not shown:
        return f"sweep over {result.parameter}: too few points to fit"
    word = "visit" if metric == "visits" else metric
    return f"{word} exponents over {result.parameter} {result.fit_from:,}–{result.values[-1]:,}: " + ", ".join(shown)


MAX_TICKS = 20  # up to this many swept values, each is a tick of the log x axis


def sweep_sections(result: SweepResult) -> list[charts.Section]:
    go = charts.plotly()
    label = parameter_label(result)
    section = charts.Section(
        f"Growth over {label}",
        [
            f"{result.scenario} at {', '.join(f'{v:,}' for v in result.values)}; log-log axes, so a power law is a "
            f"straight line whose slope is its exponent. Dashed: least-squares fit over {label} "
            f"{result.fit_from:,}–{result.values[-1] if result.values else 0:,}, with its 95% interval and R² "
            "in the legend."
        ],
    )
    xaxis: dict[str, Any] = {"type": "log", "title": text(label)}
    if 0 < len(result.values) <= MAX_TICKS:
        xaxis.update(tickvals=result.values, ticktext=[f"{v:,}" for v in result.values])
    for metric, (_, axis, unit) in METRICS.items():
        traces = []
        every = [y for series in result.series for y in result.column(series, metric) if y]
        scale, unit = charts.byte_unit(max(every, default=1.0)) if metric == "bytes" else (1.0, unit)
        for series in result.series:
            traces.extend(_sweep_series_traces(result, series, metric, axis, scale, unit))
        if not traces:
            continue
        fig = go.Figure(traces)
        low, high = min(every) / scale / 1.3, max(every) / scale * 1.3
        yaxis = {
            "type": "log",
            "title": f"{axis} ({unit})" if metric == "bytes" else axis,
            **charts.log_ticks(low, high, unit),
        }
        charts.layout(fig, f"{axis} vs {label}", 480, xaxis=xaxis, yaxis=yaxis, font={"size": 13})
        section.figures.append(charts.chart(fig))
    return [section]


def _sweep_series_traces(
    result: SweepResult, series: str, metric: str, axis: str, scale: float, unit: str
) -> list[Any]:
    """One series' line on a sweep's metric chart, with its fitted power law when it has one; none when the series
    has no value for the metric."""
    go = charts.plotly()
    label = parameter_label(result)
    ys = [y / scale if y is not None else None for y in result.column(series, metric)]
    if all(y is None for y in ys):
        return []
    name = text(series)
    times = [p.series[series].time if series in p.series else None for p in result.points]
    hover = [
        f"{name}<br>{text(label)} {x:,}<br>{axis} " + ("n/a" if y is None else charts.tick_text(y, unit))
        for x, y in zip(result.values, ys, strict=True)
    ]
    traces = [
        go.Scatter(
            x=result.values,
            y=ys,
            mode="lines+markers",
            name=name,
            line={"color": charts.colour(series)},
            error_y=charts.whiskers(times, thickness=1) if metric == "time" else None,
            **charts.hover(hover),
        )
    ]
    fit = result.fit(series, metric)
    if fit is not None:
        xs = [x for x in result.values if fit.x_from <= x <= fit.x_to]
        interval = f" [{fit.ci_low:.2f}, {fit.ci_high:.2f}]" if fit.ci_low is not None else ""
        r2 = f", R² {fit.r_squared:.4f}" if fit.r_squared is not None else ""
        fit_ys = [fit.predict(x) / scale for x in xs]
        fitted = f"{name} fit: exponent {fit.exponent:.2f}{interval}{r2}"
        dashed = {"color": charts.colour(series), "dash": "dash"}  # in the colour of the points it was fitted to
        traces.append(go.Scatter(x=xs, y=fit_ys, mode="lines", name=fitted, line=dashed, hoverinfo="name"))
    return traces


KIND = Kind("sweep", lambda result, detail: sweep_blocks(result), sweep_summary, pictures=sweep_sections)
