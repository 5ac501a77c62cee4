"""The budgeted-measurement engine (measure/engine.py) on fake fills and a fake clock: sizes, interleaving, the
deadline, the projection's interval and floors."""

from __future__ import annotations

import pytest

from dummyprof.measure import engine
from dummyprof.results.common import FirstTouch

MIB = 1 << 20


def test_a_fill_is_sampled_at_four_even_sizes_trial_by_trial_with_the_median_line() -> None:
    calls: list[int] = []

    def fill(nbytes: int) -> float:  # 1 GB/s plus 1 ms a call
        calls.append(nbytes)
        return 1e-3 + nbytes * 1e-9

    run = engine.sample(fill, 1 << 30, seconds=1e9, small_bytes=4096, clock=lambda: 0.0)
    step = run.sizes[0]
    assert run.sizes == [step, 2 * step, 3 * step, 4 * step] and step == engine.MAX_STEP
    timed = calls[engine.SMALL_CALLS + 1 :]  # after the tiny fills and the probe: size by size within each trial
    assert timed == run.sizes * engine.TRIALS
    assert [len(t) for t in run.trials] == [engine.TRIALS] * 4
    assert run.small_call_s == pytest.approx(1e-3 + 4096e-9)
    assert run.fit.slope == pytest.approx(1e-9) and run.fit_low.slope == pytest.approx(1e-9)
    assert engine.cost(run, 1e9, calls=2) == pytest.approx((2 * run.small_call_s + 1.0,) * 3)


def test_past_the_deadline_a_trial_stops_after_two_sizes_and_the_line_keeps_what_was_timed() -> None:
    now = [0.0]

    def fill(nbytes: int) -> float:
        now[0] += 1.0  # each fill a second on the clock
        return nbytes * 1e-9

    run = engine.sample(fill, 1 << 30, seconds=4.5, clock=lambda: now[0])
    # the deadline falls during the first trial: trials go on with the two smallest sizes only
    assert [len(t) for t in run.trials] == [5, 5, 1, 1]
    assert len(run.sizes) == 4 and run.fit.points == 4


def test_a_projection_is_never_under_the_memset_floor_plus_the_cheapest_first_touch() -> None:
    pages = FirstTouch(chunk_bytes=MIB, fresh_s=[0.3, 0.5], touched_s=[0.1, 0.1], needed_bytes=4 * MIB)
    floors = engine.Floors(memset_bytes_per_s=MIB / 1.0, pages=pages)
    free = engine.project((0.0, 0.0, 0.0), 2 * MIB, floors, touched=4 * MIB)
    # first touch: 0.2 + 0.4 for the sampled chunks, then two at the last quarter's (0.4) / cheapest (0.2) / dearest
    assert free.first_touch_s == pytest.approx(1.4)
    assert free.time.floor == pytest.approx(2.0 + 1.0) and free.floor_bound
    assert free.time.value == free.time.low == pytest.approx(3.0) and free.time.high == pytest.approx(3.0)
    slow = engine.project((5.0, 4.0, 7.0), 2 * MIB, floors, touched=4 * MIB, fixed_s=1.0)
    assert not slow.floor_bound
    # the high end pays the chunks' whole fresh memsets (0.3, 0.5, then twice the dearest 0.5): 1 + 7 + 1.8
    assert (slow.time.low, slow.time.value, slow.time.high) == pytest.approx((6.0, 7.4, 9.8))
    # faults taken by two threads at once: the probe's one-thread price halved, at the point and both ends
    shared = engine.project((5.0, 4.0, 7.0), 2 * MIB, floors, touched=4 * MIB, touch_threads=2, fixed_s=1.0)
    assert shared.first_touch_s == pytest.approx(0.7)
    assert (shared.time.low, shared.time.value, shared.time.high) == pytest.approx((5.5, 6.7, 8.9))


def test_the_offered_budget_is_the_seconds_over_their_share_with_the_margin_in_whole_seconds() -> None:
    from dummyprof.measure.budget import OFFER_MARGIN, offered_seconds

    assert offered_seconds(10.0, share=0.25, margin=1.0) == 40 and offered_seconds(10.1, margin=1.0) == 11
    assert offered_seconds(10.0, noise=2.0) == 20 * OFFER_MARGIN


def test_trials_ask_late_about_each_size_past_the_least_and_end_the_round_there() -> None:
    asked: list[int] = []

    def late(n: int) -> bool:
        asked.append(n)
        return n >= 40  # the largest size would end past the deadline

    readings = engine.timed_trials([10, 20, 30, 40], lambda n: n / 10, late=late, rounds=2, least=3)
    assert readings == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], []]
    assert asked == [40, 40]  # never about the three smallest: a line needs them however late


def test_a_tight_room_shrinks_the_probes_chunks_so_two_fit_never_under_a_fresh_mapping() -> None:
    from dummyprof.measure.first_touch import chunk_within
    from dummyprof.measure.memory import FRESH_MAP_BYTES

    assert chunk_within(64 * MIB, 256 * MIB) == 64 * MIB  # room for two: unchanged
    assert chunk_within(64 * MIB, 32 * MIB) == 16 * MIB  # --max-memory 64MiB: half of it is the probe's room
    assert chunk_within(64 * MIB, 48 * MIB) == 16 * MIB  # a power of two, two of them within the room
    assert chunk_within(64 * MIB, 0) == chunk_within(64 * MIB, FRESH_MAP_BYTES) == FRESH_MAP_BYTES
