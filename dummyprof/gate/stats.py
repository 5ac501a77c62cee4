"""Noise-aware comparison of two sets of timing samples (as asv does): a factor AND a rank test."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from dummyprof.results.gate import IMPROVED, NOT_SIGNIFICANT, PASS, REGRESSED


@dataclass(frozen=True)
class TimingComparison:
    verdict: str
    change: float | None  # median(current) / median(baseline)
    p_value: float | None
    detail: str


def smallest_p_value(n_current: int, n_baseline: int) -> float:
    """The lowest one-sided p-value of an exact Mann-Whitney U test: every sample of one set above the other's."""
    return 1.0 / math.comb(n_current + n_baseline, n_current)


def compare_timings(current: list[float], baseline: list[float], *, factor: float, alpha: float) -> TimingComparison:
    """Regressed only if the median grew by more than ``factor`` and the rank test says it is not noise;
    a change beyond the factor that the test cannot confirm (or never could, with few samples): "not significant".
    """
    if not current or not baseline:
        return TimingComparison(NOT_SIGNIFICANT, None, None, "no samples to compare")
    base_median = statistics.median(baseline)
    change = statistics.median(current) / base_median if base_median > 0 else None
    if change is None:
        return TimingComparison(NOT_SIGNIFICANT, None, None, "baseline median is 0 s; cannot form a ratio")
    if 1 / factor <= change <= factor:
        return TimingComparison(PASS, change, None, f"within x{factor:g} of the baseline")
    floor = smallest_p_value(len(current), len(baseline))
    if floor >= alpha:
        few = f"too few samples ({len(current)} now, {len(baseline)} in the baseline)"
        detail = f"{few}: the rank test cannot go below p={floor:.3g}, and p < {alpha:g} is needed; raise repeat"
        return TimingComparison(NOT_SIGNIFICANT, change, None, detail)
    from scipy.stats import mannwhitneyu

    slower = change > factor  # one-sided: is current stochastically greater (or less) than baseline?
    p = float(mannwhitneyu(current, baseline, alternative="greater" if slower else "less").pvalue)
    direction = "slower" if slower else "faster"
    if p < alpha:
        return TimingComparison(REGRESSED if slower else IMPROVED, change, p, f"{direction}, Mann-Whitney U p={p:.3g}")
    return TimingComparison(NOT_SIGNIFICANT, change, p, f"{direction} but p={p:.3g} >= {alpha:g}: within noise")
