"""Results of ``dummyprof sweep``: one scenario at many sizes; each series (a strategy, or an engram method)
measured at every point, and its growth exponent fitted through ``log(value), log(figure)``."""

from __future__ import annotations

import math
from typing import Any

from msgspec import field

from dummyprof.results.common import Count, Estimate, Record

# The SeriesPoint field behind each metric a column is read for.
METRIC_FIELDS = {"time": "seconds", "visits": "visits", "bytes": "bytes_written", "peak_rss": "peak_rss_bytes"}


class SeriesPoint(Record):
    """One series at one value of the swept parameter."""

    time: Estimate = field(default_factory=Estimate)  # engram's may be projected; compare's only measured
    visits: Count | None = None  # compare only; engram fills have no traversal
    bytes_written: Count = 0
    peak_rss_bytes: Count | None = None  # worst measured round

    @property
    def seconds(self) -> float | None:
        return self.time.value


class SweepPoint(Record):
    value: Count = 0
    model_bytes: Count = 0  # what was filled at this point (compare: the model's storages; engram: tables per rank)
    series: dict[str, SeriesPoint] = {}


class GrowthFit(Record):
    """``log y = intercept + exponent * log x`` by least squares over ``points`` values of x >= ``x_from``."""

    series: str = ""
    metric: str = ""  # visits, time or bytes
    exponent: float = 0.0
    intercept: float = 0.0
    r_squared: float | None = None  # None with two points (a line through two points says nothing of its fit)
    ci_low: float | None = None  # 95% interval of the exponent (Student's t); None with two points
    ci_high: float | None = None
    points: Count = 0
    x_from: float = 0.0
    x_to: float = 0.0

    def predict(self, x: float) -> float:
        try:
            return math.exp(self.intercept) * x**self.exponent
        except OverflowError:  # a fit read from an edited file can hold any finite exponent
            return math.inf


class SweepResult(Record):
    scenario: str = "compare"  # the command run at each point: compare or engram
    parameter: str = ""  # depth, width, hidden, rows, or model-arg:NAME
    values: list[Count] = []
    series: list[str] = []
    points: list[SweepPoint] = []
    fits: list[GrowthFit] = []
    fit_from: Count = 0  # smallest parameter value the fits use
    repeat: Count = 0
    base_options: dict[str, Any] = {}  # the scenario's options other than the parameter
    model_description: str = ""  # of the largest point
    # A sweep that failed at a point keeps the points before it: the value it failed at, and the error's message.
    failed_at: Count | None = None
    failure: str = ""

    def fit(self, series: str, metric: str) -> GrowthFit | None:
        return next((f for f in self.fits if f.series == series and f.metric == metric), None)

    def column(self, series: str, metric: str) -> list[float | None]:
        out: list[float | None] = []
        for point in self.points:
            entry = point.series.get(series)
            value = None if entry is None else getattr(entry, METRIC_FIELDS[metric])
            out.append(None if value is None else float(value))
        return out
