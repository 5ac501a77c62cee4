"""The arithmetic under :mod:`measure.engine`: least-squares lines (``a + b * bytes``, or through the origin)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from dummyprof.results.engram import LinearFit

CONFIDENCE = 0.95  # two-sided: the sweep's exponents and the rate of one-reading samples


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} x values but {len(ys)} y values")
    if len(xs) < 2:
        raise ValueError("a line needs at least two points")
    return _least_squares(xs, ys, through_origin=False)


def fit_proportional(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Least squares through the origin, ``y = slope * x``: for memory (nothing to fill needs none)."""
    if len(xs) != len(ys) or not xs:
        raise ValueError("need the same number (one or more) of x and y values")
    return _least_squares(xs, ys, through_origin=True)


def _least_squares(xs: Sequence[float], ys: Sequence[float], *, through_origin: bool) -> LinearFit:
    n = len(xs)
    mean_y = sum(ys) / n
    cx, cy = (0.0, 0.0) if through_origin else (sum(xs) / n, mean_y)
    sxx = sum((x - cx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError(
            "all x values are zero" if through_origin else "all sample sizes are equal; a line needs two distinct sizes"
        )
    slope = sum((x - cx) * (y - cy) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = cy - slope * cx
    ss_tot = sum((y - mean_y) ** 2 for y in ys)
    ss_res = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    fitted = 1 if through_origin else 2  # parameters, for the residuals' degrees of freedom
    return LinearFit(
        intercept=intercept,
        slope=slope,
        r_squared=1.0 if ss_tot == 0 else max(0.0, 1.0 - ss_res / ss_tot),
        points=n,
        x_max=max(xs),
        model="b x" if through_origin else "a + b x",
        residual_s=math.sqrt(ss_res / (n - fitted)) if n > fitted else 0.0,
        mean_x=cx,
        sxx=sxx,
    )


def t_quantile(degrees_of_freedom: int) -> float:
    """Student t's quantile whose two-sided interval holds CONFIDENCE."""
    from scipy.special import stdtrit  # without importing scipy.stats (~1 s)

    return float(stdtrit(degrees_of_freedom, (1 + CONFIDENCE) / 2))


def rate_interval(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """The CONFIDENCE interval (Student's t) of the mean of the rates ``y / x``, one reading each: what a fill
    much longer than any reading averages them to. Three readings can lie nearly on one line while each is
    several percent off the rate; the lines through them then pin the slope far tighter than the readings do."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("an interval of the rate needs two readings or more, one x each")
    rates = [y / x for x, y in zip(xs, ys, strict=True)]
    mean = statistics.fmean(rates)
    half = t_quantile(len(rates) - 1) * statistics.stdev(rates) / math.sqrt(len(rates))
    return mean - half, mean + half
