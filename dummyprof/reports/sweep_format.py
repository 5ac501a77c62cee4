"""Words and small pictures for sweep results, shared by the terminal and Markdown reporters."""

from __future__ import annotations

import math

from dummyprof.results.sweep import GrowthFit, SeriesPoint, SweepResult
from dummyprof.units import format_bytes, format_seconds

SPARK = "▁▂▃▄▅▆▇█"
METRIC_LABELS = {"visits": "visits", "time": "time (median)", "bytes": "bytes written"}


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


def fit_cells(fit: GrowthFit) -> list[str]:
    interval = f"[{fit.ci_low:.2f}, {fit.ci_high:.2f}]" if fit.ci_low is not None and fit.ci_high is not None else "n/a"
    r2 = f"{fit.r_squared:.4f}" if fit.r_squared is not None else "n/a (2 points)"
    return [f"{fit.exponent:.2f}", interval, r2, f"{fit.points} ({fit.x_from:g}–{fit.x_to:g})"]


def time_cell(entry: SeriesPoint) -> str:
    if entry.seconds is None:
        return "n/a"
    text = format_seconds(entry.seconds)
    if entry.projected:
        return f"{text} (projected)"
    if len(entry.samples_s) > 1:
        text += f" [{format_seconds(min(entry.samples_s))}–{format_seconds(max(entry.samples_s))}]"
    return text


def point_cells(entry: SeriesPoint) -> list[str]:
    return [
        time_cell(entry),
        "n/a" if entry.visits is None else f"{entry.visits:,}",
        format_bytes(entry.bytes_written),
        format_bytes(entry.peak_rss_bytes) if entry.peak_rss_bytes is not None else "unavailable",
    ]


POINT_HEADER = ["time median [min–max]", "visits", "bytes written", "peak RSS"]
FIT_HEADER = ["exponent", "95% interval", "R²", "points (range)"]


def fit_note(result: SweepResult) -> str:
    return (
        f"log-log least squares over {parameter_label(result)} {result.fit_from:,}–{result.values[-1]:,} "
        "(smaller values carry lower-order terms that bend the curve; --fit-from changes the start). "
        "Exponent 2: doubling the parameter quadruples the figure; 1: doubles it."
    )
