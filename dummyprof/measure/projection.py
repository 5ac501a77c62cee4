"""The arithmetic under :mod:`measure.engine`: least-squares lines (``a + b * bytes``, or through the origin) and
the sample sizes that fit a time and a memory budget."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dummyprof.results.engram import LinearFit

SAMPLE_POINTS = 4  # sizes s, 2s, 3s, 4s: evenly spread points pin a line better than a geometric run


class SamplingError(ValueError):
    """No sample size fits both the memory and the time budget; ``binding``: memory, time or table size."""

    def __init__(self, message: str, binding: str = "", *, needed_s: float | None = None) -> None:
        super().__init__(message)
        self.binding = binding
        self.needed_s = needed_s  # time binding: the seconds the smallest samples need


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
    """Rows per rank for ``points`` samples k*s (k = 1..points), each under the full table, that fit both budgets:
    together ``s * (1 + ... + points) * seconds_per_row`` seconds, the largest ``fixed_bytes + points * s *
    bytes_per_row`` bytes (``seconds_per_row``: every method, allocation and first touch over one row)."""
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
        raise SamplingError(
            f"no sample of {points} sizes fits the {binding} budget (largest step {step} rows)",
            binding,
            needed_s=units * seconds_per_row * min_rows if binding == "time" else None,
        )
    return [k * step for k in range(1, points + 1)]
