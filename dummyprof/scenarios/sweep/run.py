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

from dummyprof.errors import DummyprofError
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
from dummyprof.scenarios.sweep.plan import check_compare_plan

Progress = Callable[[int, int, str], None]

__all__ = ["SweepOptions", "SweepStopped", "run", "validate"]

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


class SweepStopped(DummyprofError):
    """A point failed after others were measured: ``results`` holds those (the CLI shows and saves them),
    ``error`` the failure, whose exit code the run ends with."""

    def __init__(self, results: Results, error: DummyprofError) -> None:
        super().__init__(str(error))
        self.results = results
        self.error = error
        self.exit_code = error.exit_code


def run(options: SweepOptions, *, progress: Progress | None = None) -> Results:
    """Validate, check the plan, run the scenario at every value (smallest first), fit each series' growth.

    A point that fails after others were measured raises :class:`SweepStopped` carrying those points.
    """
    validate(options)
    if options.scenario == "compare":
        check_compare_plan(options)
    values = list(options.values)
    total = len(values)
    result = SweepResult(
        scenario=options.scenario,
        parameter=options.parameter,
        values=values,
        fit_from=options.fit_from if options.fit_from is not None else default_fit_from(values),
    )
    notices: list[str] = []
    environment: Any = None
    for i, value in enumerate(values):
        point_progress = _point_progress(progress, i, total, f"{options.parameter}={value}")
        try:
            point_results, point = _run_point(options, value, point_progress, result)
        except DummyprofError as error:
            if not result.points:
                raise
            result.failed_at, result.failure = value, str(error)
            raise SweepStopped(_finish(options, result, notices, environment), error) from error
        for name in point.series:
            if name not in result.series:
                result.series.append(name)
        for notice in point_results.notices:
            if notice not in notices:
                notices.append(notice)
        environment = point_results.environment
        result.points.append(point)
    return _finish(options, result, notices, environment)


def _run_point(
    options: SweepOptions, value: int, progress: Progress | None, result: SweepResult
) -> tuple[Results, SweepPoint]:
    if options.scenario == "engram":
        from dummyprof.scenarios.engram import run as engram

        point_results = engram.run(engram_options(options, value), progress=progress)
        result.repeat = point_results.engram.repeat if point_results.engram else 0
        result.model_description = f"Engram tables, {value:,} rows"
        return point_results, _engram_point(value, point_results)
    from dummyprof.scenarios.compare import run as compare

    point_results = compare.run(compare_options(options, value), progress=progress)
    result.repeat = options.compare.repeat
    assert point_results.compare is not None
    result.model_description = point_results.compare.model.description
    return point_results, _compare_point(value, point_results)


def _finish(options: SweepOptions, result: SweepResult, notices: list[str], environment: Any) -> Results:
    """The fits over the points measured, and the Results."""
    values = [p.value for p in result.points]
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
