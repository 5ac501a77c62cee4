"""Growth exponents: least squares on a log-log scale, with R² and a 95% interval of the slope.

``y = a * x**b`` is a straight line ``log y = log a + b log x``; ``b`` is the
exponent. Lower-order terms (a chain's per-level linear work under legacy's
quadratic refill) bend the curve at small sizes, so the fit uses the points from
``x_from`` up; the report says which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dummyprof.measure.projection import fit_line, t_quantile
from dummyprof.results.sweep import GrowthFit


def fit_growth(
    series: str, metric: str, xs: Sequence[float], ys: Sequence[float | None], *, x_from: float = 0.0
) -> GrowthFit | None:
    """The fit over points with x >= x_from and a positive y; None with fewer than two such points."""
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None and y > 0 and x > 0 and x >= x_from]
    if len(pairs) < 2 or len({x for x, _ in pairs}) < 2:
        return None
    line = fit_line([math.log(x) for x, _ in pairs], [math.log(y) for _, y in pairs])
    result = GrowthFit(
        series=series,
        metric=metric,
        exponent=line.slope,
        intercept=line.intercept,
        points=len(pairs),
        x_from=min(x for x, _ in pairs),
        x_to=max(x for x, _ in pairs),
    )
    if len(pairs) > 2:
        # scipy.stats.linregress's r² (a flat line: a perfect fit) and the slope's standard error
        result.r_squared = line.r_squared
        half = t_quantile(len(pairs) - 2) * line.residual_s / math.sqrt(line.sxx)
        result.ci_low, result.ci_high = result.exponent - half, result.exponent + half
    return result
