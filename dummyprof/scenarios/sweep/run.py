"""The ``sweep`` scenario: run ``compare`` (or ``engram``) at every value of one parameter, then fit growth.

Each point is a whole run of the other scenario through its own library entry
point (interleaved rounds, medians, visit counts, memory), so a sweep measures
exactly what ``compare`` or ``engram`` would at that size. What the sweep adds:
the points side by side and, per series and metric, a growth exponent fitted on
a log-log scale (``fit``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dummyprof.results.codec import to_jsonable
from dummyprof.results.session import Results
from dummyprof.results.sweep import SeriesPoint, SweepPoint, SweepResult
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.sweep.fit import fit_growth
from dummyprof.scenarios.sweep.options import (
    SweepOptions,
    compare_options,
    engram_options,
    validate,
)

Progress = Callable[[int, int, str], None]

__all__ = ["SweepOptions", "run", "validate"]

COMPARE_METRICS = ("visits", "time", "bytes")
ENGRAM_METRICS = ("time", "bytes")


def _compare_point(value: int, results: Results) -> SweepPoint:
    section = results.compare
    assert section is not None
    point = SweepPoint(value=value, model_bytes=section.model.bytes)
    for s in section.strategies:
        point.series[s.name] = SeriesPoint(
            seconds=s.timing.median,
            samples_s=list(s.timing.samples_s),
            visits=s.visits,
            bytes_written=s.bytes_written,
            peak_rss_bytes=s.memory.rss_peak_bytes,
        )
    return point


def _engram_point(value: int, results: Results) -> SweepPoint:
    section = results.engram
    assert section is not None
    point = SweepPoint(value=value, model_bytes=section.layout.table_bytes_per_rank)
    for m in section.methods:
        peak = m.peak_rss_bytes.value
        point.series[m.name] = SeriesPoint(
            seconds=m.seconds.value,
            samples_s=list(m.timing.samples_s),
            projected=m.seconds.projected,
            bytes_written=m.bytes_written,
            peak_rss_bytes=None if peak is None else int(peak),
        )
    return point


def default_fit_from(values: list[int]) -> int:
    """The middle value: small sizes carry lower-order terms (constant set-up, linear work) that bend the curve."""
    return values[(len(values) - 1) // 2]


def run(options: SweepOptions, *, progress: Progress | None = None) -> Results:
    """Validate, run the scenario at every value (smallest first), fit each series' growth."""
    validate(options)
    values = list(options.values)
    total = len(values)
    result = SweepResult(
        scenario=options.scenario,
        parameter=options.parameter,
        values=values,
        fit_from=options.fit_from if options.fit_from is not None else default_fit_from(values),
    )
    notices: list[str] = []
    environment = None
    for i, value in enumerate(values):
        point_progress = _point_progress(progress, i, total, f"{options.parameter}={value}")
        if options.scenario == "engram":
            from dummyprof.scenarios.engram import run as engram

            point_results = engram.run(engram_options(options, value), progress=point_progress)
            point = _engram_point(value, point_results)
            result.repeat = point_results.engram.repeat if point_results.engram else 0
            result.model_description = f"Engram tables, {value:,} rows"
        else:
            from dummyprof.scenarios.compare import run as compare

            point_results = compare.run(compare_options(options, value), progress=point_progress)
            point = _compare_point(value, point_results)
            result.repeat = options.compare.repeat
            assert point_results.compare is not None
            result.model_description = point_results.compare.model.description
        for name in point.series:
            if name not in result.series:
                result.series.append(name)
        for notice in point_results.notices:
            if notice not in notices:
                notices.append(notice)
        environment = point_results.environment
        result.points.append(point)
    base: Any = (options.engram or EngramOptions()) if options.scenario == "engram" else options.compare
    result.base_options = {k: v for k, v in to_jsonable(base).items() if k != options.parameter}
    metrics = ENGRAM_METRICS if options.scenario == "engram" else COMPARE_METRICS
    for series in result.series:
        for metric in metrics:
            fit = fit_growth(series, metric, values, result.column(series, metric), x_from=result.fit_from)
            if fit is not None:
                result.fits.append(fit)
    results = Results(command="sweep", sweep=result, notices=notices)
    if environment is not None:
        results.environment = environment
    return results


def _point_progress(progress: Progress | None, index: int, total: int, label: str) -> Progress | None:
    if progress is None:
        return None

    def update(done: int, steps: int, step_label: str) -> None:
        fraction = done / steps if steps else 0.0
        progress(int((index + fraction) * 1000), total * 1000, f"{label} ({index + 1}/{total}): {step_label}")

    return update
