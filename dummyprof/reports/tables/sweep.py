"""``sweep``'s blocks: the points, the growth fits and a log-scale sparkline each."""

from __future__ import annotations

import math

from dummyprof.reports.format import estimate_cell, estimate_range, projected_note
from dummyprof.reports.tables.model import DIM, NAME, NUMBER, STRONG, WORD, Block, Column, Line, Table
from dummyprof.results.sweep import GrowthFit, SweepResult
from dummyprof.units import format_bytes

SPARK = "▁▂▃▄▅▆▇█"
METRICS = {"visits": "visits", "time": "time", "bytes": "written"}


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
    series_header = "method" if result.scenario == "engram" else "strategy"
    table = Table(
        "Points (time: median of the rounds)",
        [Column(parameter_label(result), NUMBER), Column(series_header, WORD), Column("filled", NUMBER)]
        + [Column(h, NUMBER) for h in ("median", "min–max", "visits", "written", "peak RSS")],
        keys=2,
    )
    for point in result.points:
        for i, name in enumerate(s for s in result.series if s in point.series):
            entry = point.series[name]
            table.add(
                f"{point.value:,}" if i == 0 else "",
                name,
                format_bytes(point.model_bytes) if i == 0 else "",
                estimate_cell(entry.time),
                estimate_range(entry.time),
                "n/a" if entry.visits is None else f"{entry.visits:,}",
                format_bytes(entry.bytes_written),
                format_bytes(entry.peak_rss_bytes) if entry.peak_rss_bytes is not None else "n/a",
            )
    table.notes += projected_note(entry.time for point in result.points for entry in point.series.values())
    return table


def _fit_cells(fit: GrowthFit) -> list[str]:
    interval = f"[{fit.ci_low:.2f}, {fit.ci_high:.2f}]" if fit.ci_low is not None and fit.ci_high is not None else "n/a"
    r2 = f"{fit.r_squared:.4f}" if fit.r_squared is not None else "n/a"
    return [f"{fit.exponent:.2f}", interval, r2, f"{fit.points} ({fit.x_from:,.0f}–{fit.x_to:,.0f})"]


def growth_table(result: SweepResult) -> Table:
    table = Table(
        "Growth (log-log fit: figure ~ value^exponent)",
        [Column("series", NAME), Column("metric", WORD)]
        + [Column(h, NUMBER) for h in ("exponent", "95% interval", "R²", "points")]
        + [Column("trend", WORD)],
        keys=2,
    )
    for series in result.series:
        first = True
        for metric, name in METRICS.items():
            fit = result.fit(series, metric)
            if fit is None:
                continue
            table.add(series if first else "", name, *_fit_cells(fit), sparkline(result.column(series, metric)))
            first = False
    table.notes.append(
        f"points: how many values the fit used (their range); trend: each value's figure on a log scale, "
        f"{parameter_label(result)} {result.values[0]:,}→{result.values[-1]:,}; R² n/a: two points"
    )
    return table


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
