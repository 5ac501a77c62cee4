"""Sampling sizes, line fits and projections on made-up measurements."""

from __future__ import annotations

import pytest

from dummyprof.measure.projection import (
    SamplingError,
    fit_line,
    fit_proportional,
    fit_time,
    project,
    sample_sizes,
)
from dummyprof.results.engram import LinearFit


def test_fit_line_recovers_an_exact_line() -> None:
    fit = fit_line([1.0, 2.0, 3.0, 4.0], [5.0, 8.0, 11.0, 14.0])
    assert fit.intercept == pytest.approx(2.0)
    assert fit.slope == pytest.approx(3.0)
    assert fit.r_squared == pytest.approx(1.0)
    assert (fit.points, fit.x_max) == (4, 4.0)
    assert project(fit, 1000.0) == pytest.approx(3002.0)


def test_fit_line_reports_a_poor_fit() -> None:
    fit = fit_line([1.0, 2.0, 3.0, 4.0], [1.0, 4.0, 1.0, 4.0])
    assert fit.r_squared < 0.5


def test_projection_never_goes_negative() -> None:
    assert project(LinearFit(intercept=-5.0, slope=1.0), 2.0) == 0.0


def test_fit_proportional_goes_through_the_origin() -> None:
    fit = fit_proportional([100.0, 200.0, 300.0], [101.0, 202.0, 303.0])
    assert fit.intercept == 0.0
    assert fit.slope == pytest.approx(1.01)
    assert fit.r_squared == pytest.approx(1.0)


def test_fit_time_falls_back_to_the_origin_when_the_line_is_flat_or_falling() -> None:
    assert fit_time([1.0, 2.0, 3.0], [1.0, 2.0, 3.5]).model == "a + b x"
    fallback = fit_time([1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 1.5, 0.9])
    assert fallback.model == "b x" and fallback.intercept == 0.0 and fallback.slope > 0
    assert project(fallback, 1000.0) > 0


@pytest.mark.parametrize(("xs", "ys"), [([1.0], [1.0]), ([2.0, 2.0], [1.0, 3.0]), ([1.0, 2.0], [1.0])])
def test_fit_line_refuses_what_cannot_make_a_line(xs: list[float], ys: list[float]) -> None:
    with pytest.raises(ValueError):
        fit_line(xs, ys)


def test_sample_sizes_bound_by_time() -> None:
    # 1e-6 s per row, 10 s: s * (1+2+3+4) * 1e-6 <= 10  ->  s = 1_000_000
    sizes = sample_sizes(
        10**9, seconds_per_row=1e-6, bytes_per_row=100, fixed_bytes=0, memory_budget=10**12, time_budget=10.0
    )
    assert sizes == [1_000_000, 2_000_000, 3_000_000, 4_000_000]


def test_sample_sizes_bound_by_memory() -> None:
    # the largest sample, 4 s rows of 1000 B, must fit 4 MB (less 1000 B of fixed rounding)
    sizes = sample_sizes(
        10**9, seconds_per_row=1e-9, bytes_per_row=1000, fixed_bytes=1000, memory_budget=4_000_000, time_budget=100.0
    )
    assert sizes == [999, 1998, 2997, 3996]
    assert sizes[-1] * 1000 + 1000 <= 4_000_000


def test_sample_sizes_stay_below_the_full_table() -> None:
    sizes = sample_sizes(
        100, seconds_per_row=1e-9, bytes_per_row=1, fixed_bytes=0, memory_budget=10**9, time_budget=100.0
    )
    assert sizes == [24, 48, 72, 96]


def test_sample_sizes_refuse_when_no_budget_allows_a_row() -> None:
    with pytest.raises(SamplingError, match="memory"):
        sample_sizes(10**9, seconds_per_row=1e-9, bytes_per_row=1000, fixed_bytes=0, memory_budget=100, time_budget=1)
    with pytest.raises(SamplingError, match="time"):
        sample_sizes(10**9, seconds_per_row=1.0, bytes_per_row=1, fixed_bytes=0, memory_budget=10**9, time_budget=1)
    with pytest.raises(ValueError):
        sample_sizes(10, seconds_per_row=1, bytes_per_row=1, fixed_bytes=0, memory_budget=1, time_budget=1, points=2)


def test_projecting_fake_measurements_end_to_end() -> None:
    """A fill at 0.1 GB/s plus 50 ms of fixed cost, sampled at four sizes, projected to 100 GB."""
    xs = [1e8, 2e8, 3e8, 4e8]
    ys = [0.05 + x / 0.1e9 for x in xs]
    fit = fit_line(xs, ys)
    assert project(fit, 100e9) == pytest.approx(1000.05)
