"""Growth exponents: least squares on a log-log scale, with R² and a 95% interval of the slope.

``y = a * x**b`` is a straight line ``log y = log a + b log x``; ``b`` is the
exponent. Lower-order terms (a chain's per-level linear work under legacy's
quadratic refill) bend the curve at small sizes, so the fit uses the points from
``x_from`` up; the report says which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dummyprof.results.sweep import GrowthFit


def fit_growth(
    series: str, metric: str, xs: Sequence[float], ys: Sequence[float | None], *, x_from: float = 0.0
) -> GrowthFit | None:
    """The fit over points with x >= x_from and a positive y; None with fewer than two such points."""
    from scipy import stats

    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and y > 0 and x > 0 and x >= x_from]
    if len(pairs) < 2 or len({x for x, _ in pairs}) < 2:
        return None
    lx = [math.log(x) for x, _ in pairs]
    ly = [math.log(y) for _, y in pairs]
    fit = stats.linregress(lx, ly)
    result = GrowthFit(
        series=series,
        metric=metric,
        exponent=float(fit.slope),
        intercept=float(fit.intercept),
        points=len(pairs),
        x_from=min(x for x, _ in pairs),
        x_to=max(x for x, _ in pairs),
    )
    if len(pairs) > 2:
        result.r_squared = float(fit.rvalue**2) if math.isfinite(fit.rvalue) else 1.0
        half = float(stats.t.ppf(0.975, len(pairs) - 2) * fit.stderr)
        result.ci_low, result.ci_high = result.exponent - half, result.exponent + half
    return result
