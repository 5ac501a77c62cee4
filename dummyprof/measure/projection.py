"""Projecting full-size figures from smaller samples: choose sample sizes, fit a line, extrapolate.

Pure arithmetic (no torch, no clock), so it is tested on made-up measurements.
A fill streams over its bytes, so time and memory are modelled as
``a + b * bytes``; the fit's R² and how far it is stretched are reported with
every projection.
"""

from __future__ import annotations

from collections.abc import Sequence

from dummyprof.results.engram import LinearFit

SAMPLE_POINTS = 4  # sizes s, 2s, 3s, 4s: evenly spread points pin a line better than a geometric run


class SamplingError(ValueError):
    """No sample size fits both the memory and the time budget."""


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Ordinary least squares; needs two or more distinct x values."""
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} x values but {len(ys)} y values")
    n = len(xs)
    if n < 2:
        raise ValueError("a line needs at least two points")
    mean_x = sum(xs) / n
    mean_y = sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("all sample sizes are equal; a line needs two distinct sizes")
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    ss_tot = sum((y - mean_y) ** 2 for y in ys)
    ss_res = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    r_squared = 1.0 if ss_tot == 0 else max(0.0, 1.0 - ss_res / ss_tot)
    return LinearFit(intercept=intercept, slope=slope, r_squared=r_squared, points=n, x_max=max(xs))


def fit_proportional(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Least squares through the origin, ``y = slope * x``: nothing to fill needs no memory.

    Used for memory, where the ratio of measured growth to computed need is the point.
    """
    if len(xs) != len(ys) or not xs:
        raise ValueError("need the same number (one or more) of x and y values")
    sxx = sum(x * x for x in xs)
    if sxx == 0:
        raise ValueError("all x values are zero")
    slope = sum(x * y for x, y in zip(xs, ys, strict=True)) / sxx
    mean_y = sum(ys) / len(ys)
    ss_tot = sum((y - mean_y) ** 2 for y in ys)
    ss_res = sum((y - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    r_squared = 1.0 if ss_tot == 0 else max(0.0, 1.0 - ss_res / ss_tot)
    return LinearFit(intercept=0.0, slope=slope, r_squared=r_squared, points=len(xs), x_max=max(xs), model="b x")


def fit_time(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Seconds against bytes: a line, or through the origin when noise leaves the line no positive slope.

    Writing more bytes never takes less time; a flat or falling line (tiny, noisy samples) would project a
    full-size fill as free, so the proportional fit (the samples' own rate) is used instead.
    """
    fit = fit_line(xs, ys)
    return fit if fit.slope > 0 else fit_proportional(xs, ys)


def project(fit: LinearFit, x: float) -> float:
    """The fit at ``x``, never below zero (a negative intercept must not produce negative seconds)."""
    return max(0.0, fit.predict(x))


def sample_sizes(
    full_rows: int,
    *,
    seconds_per_row: float,
    bytes_per_row: float,
    fixed_bytes: int,
    memory_budget: int,
    time_budget: float,
    points: int = SAMPLE_POINTS,
    min_rows: int = 1,
) -> list[int]:
    """Rows per rank for ``points`` samples k*s (k = 1..points) that fit both budgets.

    ``seconds_per_row``: estimated time of one pass of every method (and the
    allocation and first touch) over one row; the samples together cost
    ``s * (1 + 2 + ... + points) * seconds_per_row``. ``bytes_per_row`` and
    ``fixed_bytes``: the memory the biggest sample needs is
    ``fixed_bytes + points * s * bytes_per_row``. Every sample stays smaller
    than the full table.
    """
    if points < 3:
        raise ValueError("a projection needs three or more sample sizes")
    units = points * (points + 1) // 2
    limits = [(full_rows - 1) // points]
    if seconds_per_row > 0:
        limits.append(int(time_budget / (units * seconds_per_row)))
    if bytes_per_row > 0:
        limits.append(int((memory_budget - fixed_bytes) / (points * bytes_per_row)))
    step = min(limits)
    if step < min_rows:
        binding = "memory" if bytes_per_row > 0 and limits[-1] == step else "time"
        if step == limits[0]:
            binding = "table size"
        raise SamplingError(f"no sample of {points} sizes fits the {binding} budget (largest step {step} rows)")
    return [k * step for k in range(1, points + 1)]
