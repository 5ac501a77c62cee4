"""The significance rule on synthetic samples: a factor AND a one-sided Mann-Whitney U test."""

from __future__ import annotations

import math

import pytest

from dummyprof.gate.stats import compare_timings, smallest_p_value
from dummyprof.results.gate import IMPROVED, NOT_SIGNIFICANT, PASS, REGRESSED

BASE = [1.000, 1.011, 0.992, 1.023, 0.984, 1.005, 1.017]  # no ties, so scipy uses the exact test


def test_clear_regression_is_significant() -> None:
    slow = [1.50, 1.52, 1.48, 1.51, 1.49, 1.505, 1.53]
    out = compare_timings(slow, BASE, factor=1.10, alpha=0.05)
    assert out.verdict == REGRESSED
    assert out.change == pytest.approx(1.505 / 1.005)
    # Every current sample above every baseline sample: the exact one-sided p is 1 / C(14, 7).
    assert out.p_value == pytest.approx(1 / math.comb(14, 7))
    assert "slower" in out.detail


def test_clear_improvement_is_significant() -> None:
    fast = [0.50, 0.52, 0.48, 0.51, 0.49, 0.505, 0.53]
    out = compare_timings(fast, BASE, factor=1.10, alpha=0.05)
    assert out.verdict == IMPROVED
    assert out.p_value == pytest.approx(1 / math.comb(14, 7))


def test_noise_beyond_the_factor_is_not_significant() -> None:
    # The median moved by 20%, but the samples overlap: one outlier-heavy run, not a shift.
    noisy = [0.90, 1.30, 0.95, 1.25, 1.20, 0.97, 1.35]
    out = compare_timings(noisy, BASE, factor=1.10, alpha=0.05)
    assert out.change is not None and out.change > 1.10
    assert out.verdict == NOT_SIGNIFICANT
    assert out.p_value is not None and out.p_value >= 0.05
    assert "within noise" in out.detail


def test_change_within_the_factor_passes_without_a_test() -> None:
    out = compare_timings([1.05, 1.06, 1.04], BASE, factor=1.10, alpha=0.05)
    assert out.verdict == PASS
    assert out.p_value is None


def test_too_few_samples_can_never_be_significant() -> None:
    # Two against two: even a total separation gives p = 1/6, so a 3x slowdown stays "not significant".
    out = compare_timings([3.0, 3.1], [1.0, 1.01], factor=1.10, alpha=0.05)
    assert out.verdict == NOT_SIGNIFICANT
    assert out.p_value is None
    assert "too few samples (2 now, 2 in the baseline)" in out.detail
    assert "p=0.167" in out.detail


def test_smallest_p_value_is_one_over_the_number_of_orderings() -> None:
    assert smallest_p_value(2, 2) == pytest.approx(1 / 6)
    assert smallest_p_value(3, 3) == pytest.approx(1 / 20)
    assert smallest_p_value(5, 5) == pytest.approx(1 / 252)


def test_empty_samples_are_not_significant() -> None:
    assert compare_timings([], BASE, factor=1.1, alpha=0.05).verdict == NOT_SIGNIFICANT
