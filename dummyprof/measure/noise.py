"""How much to believe a median and a speedup (as hyperfine warns): outliers, a cold start, a bootstrap interval;
codes and numbers for the Results, words for the reporters."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from dummyprof.results.common import NoiseWarning
from dummyprof.results.engram import FASTER_THAN_FLOOR as FASTER_THAN_FLOOR  # a speedup over the floor: the same code

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0  # a fixed seed: the same samples always give the same interval
IQR_FENCE = 1.5  # Tukey's fences: outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] is an outlier
MIN_FOR_OUTLIERS = 4  # quartiles of fewer samples say nothing
# Resampling two readings gives three medians in all: a "95% interval" of them is no interval at all.
MIN_FOR_INTERVAL = 3

# Codes (reporters own the words)
FIRST_ROUND_SLOW = "first-round-slow"  # the first measured round is an outlier above the rest: a cold start
OUTLIERS = "statistical-outliers"  # samples outside the IQR fences move the median
SPEEDUP_UNCERTAIN = "speedup-uncertain"  # the speedup's interval includes 1.0


def quartile_fences(samples: Sequence[float]) -> tuple[float, float] | None:
    if len(samples) < MIN_FOR_OUTLIERS:
        return None
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    iqr = q3 - q1
    return q1 - IQR_FENCE * iqr, q3 + IQR_FENCE * iqr


def outliers(samples: Sequence[float]) -> list[int]:
    fences = quartile_fences(samples)
    if fences is None:
        return []
    low, high = fences
    return [i for i, s in enumerate(samples) if s < low or s > high]


def first_round_slow(samples: Sequence[float]) -> bool:
    """The first sample lies above the upper fence of the others: a cold start that warm-up did not absorb."""
    fences = quartile_fences(samples[1:])
    return fences is not None and samples[0] > fences[1] and samples[0] > max(samples[1:])


def ratio_interval(base: Sequence[float], mine: Sequence[float]) -> tuple[float, float] | None:
    """A 95% percentile-bootstrap interval for median(base) / median(mine)."""
    if len(base) < MIN_FOR_INTERVAL or len(mine) < MIN_FOR_INTERVAL or min(mine) <= 0:
        return None
    import numpy as np  # scipy.stats.bootstrap did the same at the cost of importing scipy.stats (~1 s)

    rng = np.random.default_rng(SEED)
    a, b = np.asarray(base, dtype=float), np.asarray(mine, dtype=float)
    ratios = np.median(a[rng.integers(0, a.size, (RESAMPLES, a.size))], axis=1) / np.median(
        b[rng.integers(0, b.size, (RESAMPLES, b.size))], axis=1
    )
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def sample_warnings(name: str, samples: Sequence[float]) -> list[NoiseWarning]:
    """Cold start first, else outliers (the cold round is one of them; say the likelier cause once)."""
    if not samples:
        return []
    median = statistics.median(samples)
    if first_round_slow(samples):
        return [NoiseWarning(FIRST_ROUND_SLOW, name, count=1, value=samples[0] / median if median else None)]
    found = outliers(samples)
    if found:
        kept = [s for i, s in enumerate(samples) if i not in found]
        shift = median / statistics.median(kept) if kept and statistics.median(kept) else None
        return [NoiseWarning(OUTLIERS, name, count=len(found), value=shift)]
    return []
