"""Sampling sizes, line fits and projections on made-up measurements."""

from __future__ import annotations

import pytest

from dummyprof.measure.engine import SamplingError, sample_sizes
from dummyprof.measure.projection import fit_line, fit_proportional
from dummyprof.results.common import Estimate
from dummyprof.results.engram import FALLBACK_FLAT, FALLBACK_POOR_FIT, SamplePoint, TimeProjection
from dummyprof.scenarios.engram.runner import _fastest, _projected


def _points(xs: list[float], readings: list[list[float]]) -> list[SamplePoint]:
    return [SamplePoint(bytes_written=int(x), time=Estimate.measured(r)) for x, r in zip(xs, readings, strict=True)]


def _project(
    xs: list[float], readings: list[list[float]], full: float, ceiling: float | None = None, *, fixed: bool = False
) -> TimeProjection:
    return _projected(_points(xs, readings), int(full), (ceiling, "memset"), "cpu", fixed=fixed)[1]


def test_fit_line_recovers_an_exact_line() -> None:
    fit = fit_line([1.0, 2.0, 3.0, 4.0], [5.0, 8.0, 11.0, 14.0])
    assert fit.intercept == pytest.approx(2.0)
    assert fit.slope == pytest.approx(3.0)
    assert fit.r_squared == pytest.approx(1.0)
    assert (fit.points, fit.x_max) == (4, 4.0)
    assert fit.predict(1000.0) == pytest.approx(3002.0)


def test_fit_line_reports_a_poor_fit() -> None:
    fit = fit_line([1.0, 2.0, 3.0, 4.0], [1.0, 4.0, 1.0, 4.0])
    assert fit.r_squared < 0.5


def test_fit_proportional_goes_through_the_origin() -> None:
    fit = fit_proportional([100.0, 200.0, 300.0], [101.0, 202.0, 303.0])
    assert fit.intercept == 0.0
    assert fit.slope == pytest.approx(1.01)
    assert fit.r_squared == pytest.approx(1.0)


def test_a_flat_or_falling_line_falls_back_to_the_largest_samples_rate() -> None:
    """Writing more bytes never takes less time: a falling line would price the full size as free."""
    fit, projection = _projected(
        _points([1.0, 2.0, 3.0, 4.0], [[2.0], [1.0], [1.5], [0.9, 0.8, 1.2]]), 1000, (None, ""), ""
    )
    assert projection.fallback == FALLBACK_FLAT and projection.line is not None and projection.line.slope < 0
    assert fit.model == "b x" and fit.intercept == 0.0 and fit.slope == pytest.approx(0.9 / 4.0)  # its median
    assert projection.time.value == pytest.approx(1000.0 * 0.9 / 4.0) and projection.rate_bytes == 4
    assert projection.time.low is not None and projection.time.high is not None
    assert 0 < projection.time.low <= projection.time.value <= projection.time.high


def test_a_clean_line_is_used_with_the_slopes_of_its_rounds_as_the_interval() -> None:
    xs = [1e8, 2e8, 3e8, 4e8]
    rounds = [[0.05 + x / 1e9, 0.05 + x / 1e9 * 1.1, 0.05 + x / 1e9 * 0.95] for x in xs]
    projection = _project(xs, rounds, 1e11)
    assert projection.fallback == "" and projection.interval == "slopes" and not projection.bounded
    assert projection.line is not None and projection.line.slope == pytest.approx(1e-9)  # the medians' line
    assert projection.time.value == pytest.approx(100.0)  # the slope times the full bytes, no intercept
    assert (projection.time.low, projection.time.high) == pytest.approx((95.0, 110.0))  # the rounds' own slopes
    assert projection.extrapolation == pytest.approx(250.0)


def test_one_reading_per_size_takes_the_lines_that_leave_out_one_size_each() -> None:
    xs = [1.0, 2.0, 3.0, 4.0]
    projection = _project(xs, [[1.0], [2.0], [3.5], [4.0]], 100.0)
    # leaving out 4: slope 1.25 (the steepest); leaving out 3: slope 1.0; all four: slope 1.05
    assert projection.time.low is not None and projection.time.high is not None
    assert projection.time.low < projection.time.value < projection.time.high
    assert projection.time.high == pytest.approx(125.0)


def test_the_issue_12_case_stays_physical() -> None:
    """2e9 rows, four samples of 7-23 ms (R² about 0.01): a line once put `constant` at 343% of memset."""
    mib = 1024 * 1024
    sizes = [31.6 * mib, 63.3 * mib, 94.9 * mib, 126.5 * mib]
    memset = _points(sizes, [[t, t * 1.1, t * 0.95] for t in (0.0101, 0.0195, 0.0286, 0.0371)])
    full = int(2e9 * 264)
    fastest = _fastest(memset)
    _, floor = _projected(memset, full, (fastest, "memset"), "cpu")
    assert floor.time.value is not None
    floor_rate = full / floor.time.value
    assert floor_rate <= (fastest or 0) * (1 + 1e-12)
    projection = _project(sizes, [[t] for t in (0.0071, 0.0228, 0.0098, 0.0214)], full, floor_rate)
    assert projection.time.value is not None and projection.time.low is not None
    assert full / projection.time.value <= floor_rate * (1 + 1e-12)  # never faster than the floor
    assert full / projection.time.low <= floor_rate * (1 + 1e-12)  # nor is the interval's fast end
    assert projection.time.low <= projection.time.value <= (projection.time.high or 0)


def test_the_bound_raises_a_projection_faster_than_the_ceiling() -> None:
    xs = [1e8, 2e8, 3e8, 4e8]
    exact = [[x / 20e9] for x in xs]  # an exact 20 GB/s line
    free = _project(xs, exact, 1e11)
    assert not free.bounded and free.time.value == pytest.approx(5.0)
    bounded = _project(xs, exact, 1e11, 10e9)
    assert bounded.bounded and bounded.time.value == pytest.approx(10.0)  # 1e11 bytes at the 10 GB/s floor
    assert bounded.time.low == pytest.approx(10.0) and (bounded.time.high or 0) >= bounded.time.value
    assert (bounded.ceiling_bytes_per_s, bounded.ceiling_name, bounded.time.floor) == (10e9, "memset", 10.0)
    slower = _project(xs, exact, 1e11, 40e9)
    assert not slower.bounded and slower.time.value == pytest.approx(5.0)  # a ceiling above the fit changes nothing


def test_a_size_independent_step_falls_back_to_its_median_reading() -> None:
    """Allocating pageable memory maps address space: a flat line means a fixed cost, not a free rate."""
    xs = [1e6, 2e6, 3e6, 4e6]
    projection = _project(xs, [[2e-4], [1e-4], [3e-4], [1.5e-4]], 1e12, fixed=True)
    assert projection.time.value == pytest.approx(1.75e-4)  # median of the four readings
    assert (projection.time.low, projection.time.high) == pytest.approx((1e-4, 3e-4))
    assert projection.fallback == FALLBACK_POOR_FIT and projection.interval == "readings"  # R² about 0.03
    # a rising, clean line is still a line
    assert _project(xs, [[x * 1e-9] for x in xs], 1e9, fixed=True).fallback == ""


def test_fastest_rate_is_the_best_reading() -> None:
    assert _fastest(_points([100.0, 400.0], [[2.0, 1.0], [2.0]])) == pytest.approx(200.0)
    assert _fastest([]) is None


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


def test_the_report_says_how_each_projection_was_made_and_bounded() -> None:
    from dummyprof.reports.kinds.engram import projection_detail

    xs = [1e8, 2e8, 3e8, 4e8]
    bounded = _project(xs, [[x / 20e9] for x in xs], 1e11, 10e9)
    assert projection_detail(bounded, "constant") == (
        "line, R² 1.000, 4 sizes, x250, raised to the memset floor (10.00 GB/s)"
    )
    assert projection_detail(bounded, "memset").endswith("raised to its own fastest sample (10.00 GB/s)")


def test_each_samples_fresh_temporaries_come_off_its_readings_and_the_full_sizes_are_counted() -> None:
    from dummyprof.loaders.fp8_methods import METHODS
    from dummyprof.results.engram import EngramLayout
    from dummyprof.scenarios.engram.runner import fresh_scratch_bytes, on_touched

    layout = EngramLayout(part_rows=1_000_000, dim=512, tables=2)
    chunk = 64 << 20
    convert, scratch, chunked = (METHODS[f"random-{m}"] for m in ("convert", "scratch", "chunked"))
    # at full size every temporary is past glibc's 32 MiB threshold, mapped afresh: two tables' worth
    assert fresh_scratch_bytes(convert, 512_000_000, chunk, 2) == 2 * 3 * 512_000_000
    assert fresh_scratch_bytes(chunked, 512_000_000, chunk, 2) == 2 * 2 * chunk  # one chunk per table
    assert fresh_scratch_bytes(METHODS["memset"], 512_000_000, chunk, 2) == 0
    # 20,000 rows: every temporary under the threshold (the kept heap's); 40,000: the 40.96 MB fp16 ones past it,
    # not random-convert's 20.48 MB fp8 conversion
    assert fresh_scratch_bytes(scratch, 20_000 * 512, chunk) == 0
    assert fresh_scratch_bytes(scratch, 40_000 * 512, chunk) == fresh_scratch_bytes(convert, 40_000 * 512, chunk)
    points = [SamplePoint(part_rows=r, time=Estimate.measured([1.0, 2.0])) for r in (20_000, 40_000)]
    adjusted = on_touched(points, convert, layout, chunk, lambda n: n / 1e9)  # 1 s per GB of fresh pages
    assert adjusted[0] is points[0]  # nothing mapped afresh: the readings as measured
    fresh_s = 2 * 2 * 40_000 * 512 / 1e9
    assert adjusted[1].time.samples == pytest.approx([1.0 - fresh_s, 2.0 - fresh_s])
    assert points[1].time.samples == [1.0, 2.0]  # the sample itself keeps its readings


def test_a_projection_adds_the_first_touch_of_the_fresh_scratch_at_the_probes_price() -> None:
    from dummyprof.reports.kinds.engram import projection_detail
    from dummyprof.results.common import FirstTouch

    mib, xs = 1 << 20, [1e6, 2e6, 3e6, 4e6]
    pages = FirstTouch(chunk_bytes=mib, fresh_s=[0.3, 0.5], touched_s=[0.1, 0.1], needed_bytes=4 * mib)
    points = _points(xs, [[x / 1e8] for x in xs])
    plain = _projected(points, int(1e8), (None, ""), "cpu")[1]
    priced = _projected(points, int(1e8), (None, ""), "cpu", touched=4 * mib, pages=pages)[1]
    halved = _projected(points, int(1e8), (None, ""), "cpu", touched=4 * mib, touch_threads=2, pages=pages)[1]
    assert plain.time.value == pytest.approx(1.0) and plain.fresh_bytes == 0 and plain.first_touch_s == 0.0
    # 0.2 + 0.4 for the probed chunks, two more at the last quarter's 0.4: 1.4 s; over two threads, 0.7 s
    assert (priced.first_touch_s, priced.time.value) == pytest.approx((1.4, 2.4))
    assert (halved.first_touch_s, halved.time.value) == pytest.approx((0.7, 1.7))
    assert projection_detail(priced).endswith(", plus 1.40 s first touch of 4.00 MiB fresh scratch")
    # without a probe (a GPU fill, or no fresh scratch) nothing is added and nothing is said
    unpriced = _projected(points, int(1e8), (None, ""), "cpu", touched=4 * mib)[1]
    assert unpriced.time.value == pytest.approx(1.0) and "first touch" not in projection_detail(unpriced)


def test_a_sample_size_predicted_past_the_deadline_is_left_out_once_its_group_has_three() -> None:
    from types import SimpleNamespace

    from dummyprof.measure import engine
    from dummyprof.scenarios.engram.plan import SampleGroup
    from dummyprof.scenarios.engram.runner import MIN_SAMPLE_SIZES, NO_SYNC, _late

    slow = SampleGroup([], [10, 20, 30, 40], {}, False)
    runner = SimpleNamespace(clock=lambda: 50.0, sync=NO_SYNC)
    took = {10: 1.0, 20: 2.0, 30: 3.0}
    assert _late(runner, slow, 40, took, deadline=53.0)  # type: ignore[arg-type]  # 3 s x 40/30: ends at 54
    assert not _late(runner, slow, 40, took, deadline=55.0)  # type: ignore[arg-type]
    assert not _late(runner, slow, 40, took, deadline=None)  # type: ignore[arg-type]
    # however late, a group's sizes are measured until it has the three a line needs
    readings = engine.timed_trials(slow.rows, lambda rows: rows, late=lambda _: True, rounds=1, least=MIN_SAMPLE_SIZES)
    assert readings == [[10], [20], [30], []]


def test_the_least_sampling_is_predicted_from_each_groups_last_size() -> None:
    from dummyprof.scenarios.engram.plan import Plan, SampleGroup
    from dummyprof.scenarios.engram.runner import _minimum_overrun

    slow, fast = SampleGroup([], [10, 20, 30, 40], {}, False), SampleGroup([], [100, 200, 300, 400], {}, True)
    plan = Plan([], [], {}, sample_groups=[slow, fast])
    # after 10 rows in 1 s: 20 and 30 rows still needed, 2 s + 3 s; the fast group has none measured yet
    assert _minimum_overrun(plan, {10: 1.0}, now=50.0, deadline=54.0) == 1.0
    assert _minimum_overrun(plan, {10: 1.0}, now=50.0, deadline=55.0) is None
    assert _minimum_overrun(plan, {10: 1.0}, now=50.0, deadline=None) is None
    # the slow group has its three; the fast group's 200 and 300 rows from its 100 rows in 0.5 s: 2.5 s
    took = {10: 1.0, 20: 2.0, 30: 3.0, 100: 0.5}
    assert _minimum_overrun(plan, took, now=50.0, deadline=52.0) == 0.5
    assert _minimum_overrun(plan, took | {200: 1.0, 300: 1.5}, now=60.0, deadline=52.0) is None  # nothing left


def test_a_time_bound_sampling_refusal_carries_the_seconds_that_hold_the_smallest_samples() -> None:
    from dummyprof.measure.budget import OFFER_MARGIN, offered_seconds
    from dummyprof.measure.engine import SamplingError, sample_sizes

    kwargs = {"seconds_per_row": 1.0, "bytes_per_row": 0.0, "fixed_bytes": 0, "memory_budget": 1 << 40}
    with pytest.raises(SamplingError) as caught:
        sample_sizes(10**9, time_budget=1.0, **kwargs)  # type: ignore[arg-type]
    assert caught.value.binding == "time" and caught.value.needed_s == pytest.approx(10 * 1.0)  # 1+2+3+4 rows
    offered = offered_seconds(caught.value.needed_s or 0.0)
    assert offered >= 10.0 * OFFER_MARGIN
    assert sample_sizes(10**9, time_budget=offered, **kwargs)[0] >= 1  # type: ignore[arg-type]
