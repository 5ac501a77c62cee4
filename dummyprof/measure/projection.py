"""Projecting full-size figures from smaller samples (pure arithmetic): sample sizes, a line ``a + b * bytes``,
extrapolated. Kept physical (tiny noisy samples once put a memset-like fill at 343% of the memset floor): a poor
line gives way to the largest sample's rate, an interval comes with the point, and nothing is projected faster
than the fastest rate this run measured for what bounds it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from dummyprof.results.common import Estimate
from dummyprof.results.engram import FALLBACK_FLAT, FALLBACK_POOR_FIT, LinearFit, TimeProjection

SAMPLE_POINTS = 4  # sizes s, 2s, 3s, 4s: evenly spread points pin a line better than a geometric run
# Below this R² the samples are mostly noise around the line (the 2e9-row run of issue #12 fitted 0.013);
# the largest sample's own rate is then the better estimate: it has the least fixed cost per byte.
MIN_R_SQUARED = 0.9
LEVEL = 0.95  # of the prediction interval


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


def project(fit: LinearFit, x: float) -> float:
    """The fit at ``x``, never below zero (a negative intercept must not give negative seconds)."""
    return max(0.0, fit.predict(x))


def prediction_interval(fit: LinearFit, x: float, level: float = LEVEL) -> tuple[float, float]:
    """Student-t prediction interval of one new reading at ``x``, from the fit's residuals (never below 0)."""
    from scipy.special import stdtrit  # Student t's quantile, without importing scipy.stats (~1 s)

    if fit.model == "b x":
        dof = fit.points - 1
        spread = 1.0 + (x * x / fit.sxx if fit.sxx > 0 else 0.0)
    else:
        dof = fit.points - 2
        spread = 1.0 + 1.0 / fit.points + ((x - fit.mean_x) ** 2 / fit.sxx if fit.sxx > 0 else 0.0)
    point = fit.predict(x)
    if dof < 1:
        return max(0.0, point), max(0.0, point)
    half = float(stdtrit(dof, 0.5 + level / 2)) * fit.residual_s * math.sqrt(spread)
    return max(0.0, point - half), max(0.0, point + half)


def capability(readings: Sequence[float]) -> float:
    """The fastest quartile of ``readings`` (the fastest of up to four, the 2nd fastest of five to eight):
    what the machine can do. Other programs only ever slow a fill down, so the slow readings say how busy
    the machine was, not how fast it fills; one quartile up is robust to a single lucky reading."""
    ordered = sorted(readings)
    return ordered[(len(ordered) - 1) // 4]


@dataclass(frozen=True)
class Sample:
    bytes: float
    readings_s: Sequence[float]

    @property
    def capability_s(self) -> float:
        return capability(self.readings_s)


def project_time(
    samples: Sequence[Sample],
    full_bytes: float,
    *,
    ceiling_bytes_per_s: float | None = None,
    ceiling_slow_bytes_per_s: float | None = None,
    ceiling_name: str = "",
    min_r_squared: float = MIN_R_SQUARED,
    size_independent: bool = False,
    device: str = "",
) -> tuple[LinearFit, TimeProjection]:
    """Full-size seconds from samples: the model used, and the projection with its interval and bound.

    The line of each size's capability against bytes, when its slope is positive and its R² reaches
    ``min_r_squared``; else the largest sample's rate through the origin (the least fixed cost per byte),
    between the fastest and slowest per-byte rate of any reading, or with ``size_independent`` (a step whose
    cost does not grow with bytes, such as mapping pageable memory) the median reading. A point raised to
    ``ceiling_bytes_per_s`` keeps that bound's slow end (``ceiling_slow_bytes_per_s``) as its own.
    """
    if not samples:
        raise ValueError("a projection needs samples")
    xs = [s.bytes for s in samples]
    ys = [s.capability_s for s in samples]
    line = fit_line(xs, ys)
    largest = max(samples, key=lambda s: s.bytes)
    fallback = FALLBACK_FLAT if line.slope <= 0 else FALLBACK_POOR_FIT if line.r_squared < min_r_squared else ""
    if fallback and size_independent:
        readings = sorted(r for s in samples for r in s.readings_s)
        point = statistics.median(readings)
        fit = LinearFit(intercept=point, r_squared=line.r_squared, points=len(readings), x_max=largest.bytes, model="a")
        low, high = readings[0], readings[-1]
        interval = "readings"
    elif fallback:
        rate = largest.capability_s / largest.bytes
        fit = LinearFit(slope=rate, r_squared=line.r_squared, points=1, x_max=largest.bytes, model="b x")
        per_byte = [r / s.bytes for s in samples for r in s.readings_s]
        point = rate * full_bytes
        low, high = min(per_byte) * full_bytes, max(per_byte) * full_bytes
        interval = "readings"
    else:
        fit = line
        point = project(line, full_bytes)
        low, high = prediction_interval(line, full_bytes)
        interval = "residuals"
    bounded, fastest = False, None
    if ceiling_bytes_per_s is not None and ceiling_bytes_per_s > 0:
        fastest = full_bytes / ceiling_bytes_per_s
        if point < fastest:
            point, bounded = fastest, True
            if ceiling_slow_bytes_per_s:
                high = max(high, full_bytes / ceiling_slow_bytes_per_s)
        low = max(low, fastest)
    low, high = min(low, point), max(high, point)
    return fit, TimeProjection(
        time=Estimate.projected(point, low, high, floor=fastest, device=device),
        interval=interval,
        line=line,
        fallback=fallback,
        min_r_squared=min_r_squared,
        rate_bytes=int(largest.bytes) if fallback and not size_independent else 0,
        ceiling_bytes_per_s=ceiling_bytes_per_s,
        ceiling_name=ceiling_name if ceiling_bytes_per_s else "",
        bounded=bounded,
        extrapolation=full_bytes / largest.bytes,
    )


def fastest_rate(samples: Sequence[Sample]) -> float | None:
    """Bytes per second of the fastest reading of any sample: what this run measured the operation doing."""
    rates = [s.bytes / r for s in samples for r in s.readings_s if r > 0]
    return max(rates) if rates else None


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
