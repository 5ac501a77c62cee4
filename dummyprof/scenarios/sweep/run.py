"""The ``sweep`` scenario: a whole ``compare`` (or ``engram``) run at every value of one parameter, and per
series and metric a growth exponent fitted on a log-log scale (``fit``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from dummyprof.errors import DoesNotFitError, DummyprofError
from dummyprof.results.common import Estimate
from dummyprof.results.session import Results
from dummyprof.results.sweep import SeriesPoint, SweepPoint, SweepResult
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.sweep.fit import fit_growth
from dummyprof.scenarios.sweep.options import SweepOptions, compare_options, engram_options, validate
from dummyprof.units import format_seconds

Progress = Callable[[int, int, str], None]

__all__ = ["SweepOptions", "SweepStopped", "run", "validate"]

COMPARE_METRICS = ("visits", "time", "bytes")
ENGRAM_METRICS = ("time", "bytes")


class SweepStopped(DummyprofError):
    """A point failed after others were measured: ``results`` holds those (the CLI shows and saves them),
    ``error`` the failure, whose exit code the run ends with."""

    def __init__(self, results: Results, error: DummyprofError) -> None:
        super().__init__(str(error))
        self.results = results
        self.error = error
        self.exit_code = error.exit_code


def run(options: SweepOptions, *, progress: Progress | None = None) -> Results:
    """Run the scenario at every value, smallest first (:class:`SweepStopped` carries the points before a failure)."""
    validate(options)
    if options.scenario == "compare":
        _check_compare_plan(options)
    values = list(options.values)
    total = len(values)
    result = SweepResult(
        scenario=options.scenario,
        parameter=options.parameter,
        values=values,
        # default: the middle value, as small sizes carry lower-order terms (set-up, linear work) that bend the curve
        fit_from=options.fit_from if options.fit_from is not None else values[(len(values) - 1) // 2],
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
        result.series = list(dict.fromkeys([*result.series, *point.series]))  # in the order first seen
        notices = list(dict.fromkeys([*notices, *point_results.notices]))
        environment = point_results.environment
        result.points.append(point)
    return _finish(options, result, notices, environment)


def _check_compare_plan(options: SweepOptions) -> None:
    """Refuse, before the smaller points spend minutes, when the largest point's rounds are predicted (as compare
    predicts them) past --time-budget: a sweep never projects."""
    from dummyprof.measure.device import resolve_device
    from dummyprof.scenarios.compare.measure import budget_that_measures, size_up

    largest_value = options.values[-1]
    largest = compare_options(options, largest_value)
    if largest.repeat_auto:
        return  # --repeat auto stops at the budget by itself
    _, _, _, decision, projections = size_up(largest, resolve_device(largest.device))
    if decision.mode == "projected" and decision.reason == "time":
        point = f"{options.model_arg or options.parameter}={largest_value}"
        raise DoesNotFitError.for_field(
            "time_budget",
            f"the sweep's largest point ({point}) is predicted at {format_seconds(decision.predicted_s)} for "
            f"its {largest.warmup + largest.repeat} rounds, over the {format_seconds(largest.time_budget)} each "
            f"point may take (a sweep never projects); give --time-budget "
            f"{budget_that_measures(decision, projections)}s, end the range before {largest_value}, or lower --repeat",
        )


def _run_point(
    options: SweepOptions, value: int, progress: Progress | None, result: SweepResult
) -> tuple[Results, SweepPoint]:
    if options.scenario == "engram":
        from dummyprof.scenarios.engram import run as engram

        point_results = engram.run(engram_options(options, value), progress=progress)
        tables = point_results.engram
        assert tables is not None
        result.repeat = tables.repeat
        result.model_description = f"Engram tables, {value:,} rows"
        point = SweepPoint(value=value, model_bytes=tables.layout.table_bytes_per_rank)
        for m in tables.methods:
            peak = m.peak_rss_bytes.value
            point.series[m.name] = SeriesPoint(
                time=m.time,
                bytes_written=m.bytes_written,
                peak_rss_bytes=None if peak is None else int(peak),
            )
        return point_results, point
    from dummyprof.scenarios.compare import run as compare

    point_results = compare.run(compare_options(options, value), progress=progress)
    compared = point_results.compare
    assert compared is not None
    result.repeat = options.compare.repeat
    result.model_description = compared.model.description
    point = SweepPoint(value=value, model_bytes=compared.model.bytes)
    for s in compared.strategies:
        point.series[s.name] = SeriesPoint(
            time=s.time if s.time.samples else Estimate(),  # a point's projection is not a measurement
            visits=s.visits,
            bytes_written=s.bytes_written,
            peak_rss_bytes=s.memory.rss_peak_bytes,
        )
    return point_results, point


def _finish(options: SweepOptions, result: SweepResult, notices: list[str], environment: Any) -> Results:
    values = [p.value for p in result.points]
    base: Any = (options.engram or EngramOptions()) if options.scenario == "engram" else options.compare
    result.base_options = {k: v for k, v in msgspec.to_builtins(base).items() if k != options.parameter}
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
