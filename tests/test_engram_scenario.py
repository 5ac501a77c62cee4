"""The engram scenario's planning and derived figures, on fake clocks and fake calibrations."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import random
from collections.abc import Callable

import pytest
import torch

import dummyprof
from dummyprof.allocation import backings as host_memory
from dummyprof.allocation.backings import Backing
from dummyprof.errors import DoesNotFitError
from dummyprof.loaders.fp8_methods import METHODS
from dummyprof.models.engram import EngramSpec
from dummyprof.reports.kinds import summary_line
from dummyprof.reports.kinds.engram import plan_notes, reason_text
from dummyprof.results.engram import EngramResult, MethodResult, RoundsCut
from dummyprof.results.session import Results
from dummyprof.scenarios.engram.plan import ALLOCATE, FIRST_TOUCH, Rates, plan_samples, time_plan
from dummyprof.scenarios.engram.run import EngramOptions, run
from dummyprof.units import format_seconds
from tests.conftest import pin_kernel_workers

ALL = list(METHODS.values())
PAGEABLE = Backing("pageable", "pageable")


def counter_clock() -> Callable[[], float]:
    """Every reading is one second after the previous one: each timed step lasts exactly 1 s."""
    ticks = itertools.count()
    return lambda: float(next(ticks))


def test_fake_clock_drives_every_measured_figure() -> None:
    options = EngramOptions(rows=2048, dim=64, repeat=2, deadline_s=2.5, time_budget_s=10**6)
    results = run(options, clock=counter_clock())
    engram = results.engram
    assert engram is not None
    assert [p.time.value for p in engram.phases] == [1.0, 1.0]
    floor = engram.method("memset")
    for m in engram.methods:
        assert m.mode == "measured"
        assert m.time.samples == [1.0, 1.0]
        assert m.time.value == 1.0 and not m.time.is_projected
        assert m.gb_per_s.value == pytest.approx(m.bytes_written / 1e9)
        assert m.percent_of_floor.value == pytest.approx(100 * m.bytes_written / floor.bytes_written)
        assert m.startup.value == 3.0  # allocation + first touch + fill
        assert m.over_deadline is True
    assert engram.method("random-convert").bytes_written == 2048 * 64  # scales untouched
    assert engram.method("constant").bytes_written == 2048 * 66
    # every method alike: the first of the fastest is recommended, and how far it misses the deadline
    assert summary_line(results) == "recommended random-convert: 3.00 s on cpu; 2.50 s deadline missed by 500.0 ms"


def _calibration(part_rows: int, **per_row: float) -> Rates:
    rates = {ALLOCATE: 1e-9, FIRST_TOUCH: 1e-7, "memset": 1e-8, "constant": 1e-8, "random-fast": 3e-8}
    rates.update({k.replace("_", "-"): v for k, v in per_row.items()})
    return rates


def test_slow_methods_that_fit_memory_are_projected_slowest_first() -> None:
    spec = EngramSpec(rows=1_000_000, dim=64)
    cal = _calibration(1_000_000, random_convert=1e-4, random_scratch=5e-5, random_chunked=5e-5)
    fits = {m.name: True for m in ALL}
    plan = time_plan(spec, ALL, fits, cal, EngramOptions(rows=1_000_000, dim=64), 40.0)
    assert [m.name for m in plan.full] == ["random-fast", "constant", "memset"]
    assert [m.name for m in plan.projected] == ["random-convert", "random-scratch", "random-chunked"]
    assert plan.reasons == {"random-convert": "time", "random-scratch": "time", "random-chunked": "time"}
    assert plan.one_fill_s["random-convert"] == pytest.approx(100.0)  # 1e-4 s a row, 1e6 rows
    method = MethodResult("random-convert", mode="projected", reason="time", one_fill_s=100.0)
    assert reason_text(method) == "one full-size fill would take about 100 s, over the time budget"
    assert plan.full_rounds == {"random-fast": 3, "constant": 3, "memset": 3}


def test_rounds_are_cut_to_the_time_budget_and_say_so() -> None:
    spec = EngramSpec(rows=1_000_000, dim=64)
    # one costly round: 3 x 1e-6 x 1e6 = 3 s per method... 10 s for scratch alone below
    cal = _calibration(1_000_000, random_convert=4e-6, random_scratch=3e-6, random_chunked=3e-6)
    fits = {m.name: True for m in ALL}
    plan = time_plan(spec, ALL, fits, cal, EngramOptions(rows=1_000_000, dim=64, repeat=3), 25.0)
    assert plan.projected == []
    assert plan.rounds == 2  # 10 s a round, 25 s budget
    assert plan.full_rounds["random-convert"] == 2 and plan.full_rounds["memset"] == 3
    costly = ["random-convert", "random-scratch", "random-chunked"]
    assert plan.rounds_cut == RoundsCut(2, 3, costly, pytest.approx(10.0), 40.0)
    assert plan_notes(EngramResult(rounds_cut=plan.rounds_cut)) == [
        "measured 2 of 3 rounds at full size for random-convert, random-scratch, random-chunked: "
        "one round takes about 10.00 s and the time budget is 40.00 s"
    ]


def test_methods_that_do_not_fit_memory_are_projected_for_that_reason() -> None:
    spec = EngramSpec(rows=1_000_000, dim=64)
    cal = _calibration(1_000_000, random_convert=1e-8, random_scratch=1e-8, random_chunked=1e-8)
    fits = {m.name: m.name in ("constant", "memset", "random-chunked", "random-fast") for m in ALL}
    plan = time_plan(spec, ALL, fits, cal, EngramOptions(rows=1_000_000, dim=64), 40.0)
    assert [m.name for m in plan.projected] == ["random-convert", "random-scratch"]
    assert plan.reasons == {"random-convert": "memory", "random-scratch": "memory"} and plan.one_fill_s == {}
    assert reason_text(MethodResult("random-convert", mode="projected", reason="memory")) == "does not fit in memory"


def test_refuses_when_not_even_one_row_fits() -> None:
    with pytest.raises(DoesNotFitError) as info:
        run(EngramOptions(rows=1000, dim=64, max_memory=100))
    assert info.value.flag == "--max-memory"


def test_refuses_when_no_sample_fits_the_time_budget() -> None:
    options = EngramOptions(rows=2_000_000_000, dim=64, offload=True, time_budget_s=1e-9, max_memory=16 * 2**20)
    with pytest.raises(DoesNotFitError) as info:
        run(options, clock=counter_clock())
    assert info.value.flag == "--time-budget"
    assert "raise --time-budget" in info.value.message


_ROOMY: list[Results] = []


def roomy_projected_run() -> Results:
    """400,000 rows projected from samples under 8 MiB, on the fake clock, with all the time it wants, the worker
    count and engine pinned as ``two_kernel_workers`` pins them: run once for the tests that read it (a few seconds
    of real sample fills), a copy each."""
    if not _ROOMY:
        with pytest.MonkeyPatch.context() as patch:
            pin_kernel_workers(patch)
            options = EngramOptions(rows=400_000, dim=64, max_memory=8 * 1024 * 1024, time_budget_s=10**6)
            _ROOMY.append(run(options, clock=counter_clock()))
    return copy.deepcopy(_ROOMY[0])


@pytest.mark.usefixtures("two_kernel_workers")
def test_projected_figures_are_labelled_and_summarised() -> None:
    results = roomy_projected_run()
    engram = results.engram
    assert engram is not None
    for m in engram.methods:
        assert m.mode == "projected"
        assert [p.time.value for p in m.samples] == [1.0] * len(m.samples)  # the median of fake 1 s readings
        # equal fake times give a flat line, which would project a free fill: the largest sample's rate is used
        assert m.time_fit is not None and m.time_fit.model == "b x"
        assert m.projection is not None and m.projection.fallback == "flat"
        largest = m.samples[-1]
        assert m.time.value == pytest.approx(m.bytes_written / largest.bytes_written) and m.time.is_projected
        assert m.startup.is_projected
        assert m.peak_rss_bytes.is_projected and (m.peak_rss_bytes.value or 0) >= m.needed_bytes
    # ~: projected; the floor is not counted among the methods
    assert (
        summary_line(results)
        == "recommended random-convert: start-up ~26.43 s per rank on cpu; no --deadline"  # "none fit": 82 columns
    )
    assert dummyprof.render(results, quiet=True, width=1000) == summary_line(results) + "\n"


def noisy_clock(low: float, high: float, seed: int = 12) -> Callable[[], float]:
    """Every reading moves the clock on by a random step in [low, high): tiny, noisy timings."""
    rng = random.Random(seed)
    now = [0.0]

    def read() -> float:
        now[0] += rng.uniform(low, high)
        return now[0]

    return read


def test_tiny_noisy_samples_project_nothing_faster_than_this_runs_floor() -> None:
    """Issue #12: four samples of 7-23 ms once projected `constant` at 343% of memset. Every bound must hold."""
    options = EngramOptions(rows=2_000_000_000, dim=64, offload=True, max_memory=8 * 2**20, time_budget_s=10**6)
    engram = run(options, clock=noisy_clock(0.007, 0.023)).engram
    assert engram is not None
    floor = engram.method("memset")
    assert floor.projection is not None
    floor_rate = floor.bytes_written / (floor.time.value or 0)
    best_floor = max(p.bytes_written / r for p in floor.samples for r in p.time.samples)
    assert floor_rate <= best_floor * (1 + 1e-9)
    for m in engram.methods:
        assert m.mode == "projected" and m.projection is not None and m.time.value is not None, m.name
        assert m.bytes_written / m.time.value <= floor_rate * (1 + 1e-9), m.name
        assert (m.percent_of_floor.value or 0) <= 100 + 1e-6, m.name
        assert m.projection.time.low <= m.time.value <= m.projection.time.high
        # the interval's fast end too: the floor's own is its fastest reading, every other fill's the floor
        ceiling = best_floor if m.name == "memset" else floor_rate
        assert m.bytes_written / m.projection.time.low <= ceiling * (1 + 1e-9), m.name
        assert m.startup.span is not None
        assert m.startup.low <= (m.startup.value or 0) <= m.startup.high
        assert m.startup_dominant in ("allocate", "first touch", "fill")
    # one group here: on a noisy fake clock every method calibrates within 4x of the floor (memory-bound)
    assert [(g.memory_bound, len(g.rows), g.rounds) for g in engram.sample_groups] == [(True, 4, 3)]
    assert engram.sample_groups[0].methods == [m.name for m in engram.methods]
    touch = next(p for p in engram.phases if p.name == FIRST_TOUCH)
    assert touch.projection is not None and touch.time.value
    best_touch = max(p.bytes_written / r for p in touch.samples for r in p.time.samples)
    assert touch.bytes / touch.time.value <= min(best_touch, floor_rate) * (1 + 1e-9)


def test_pinned_reserved_bytes_reads_host_memory_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "host_memory_stats", lambda: {"allocated_bytes.current": 64 * 2**30})
    assert host_memory.pinned_reserved_bytes() == 64 * 2**30
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert host_memory.pinned_reserved_bytes() is None


def test_engram_fills_the_models_declared_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a model declares is what is measured: `constant` reads dummy_weight_value from EngramTable."""
    monkeypatch.setattr("dummyprof.models.engram.FP8_WEIGHT_VALUE", 0.5)
    monkeypatch.setattr("dummyprof.models.engram.SCALE_BYTE_ONE", 126)
    options = EngramOptions(rows=2048, dim=64, methods=["constant", "random-scratch"], repeat=1, time_budget_s=10**6)
    engram = run(options, clock=counter_clock()).engram
    assert engram is not None
    constant = engram.method("constant").values
    assert constant is not None
    assert (constant.weight_min, constant.weight_max, constant.scale_values) == (0.5, 0.5, [126])
    scratch = engram.method("random-scratch").values  # the same tables, filled undeclared
    assert scratch is not None and scratch.weight_distinct > 10 and scratch.scale_values == [120]


def test_memory_bound_methods_get_large_repeated_samples_and_random_ones_small() -> None:
    """From the calibration: memset/constant up to 1 GiB of tables, 3 rounds; random methods what time allows."""
    spec = EngramSpec(rows=2_000_000_000, dim=256)
    # per row: memset and constant 30 ns (~9 GB/s), first touch 200 ns, random 8 µs (~0.03 GB/s)
    cal = _calibration(1, memset=3e-8, constant=3e-8, random_convert=8e-6, random_scratch=8e-6, random_chunked=8e-6)
    cal[FIRST_TOUCH] = 2e-7
    options = EngramOptions(rows=spec.rows, dim=256, offload=True)
    fits = {m.name: False for m in ALL}
    plan = time_plan(spec, ALL, fits, cal, options, 40.0)
    plan_samples(spec, plan, ALL, cal, options, 40.0, 4 * 2**30, PAGEABLE, "--max-memory")
    fast, slow = plan.sample_groups
    assert fast.memory_bound and {m.name for m in fast.methods} >= {"memset", "constant"}
    assert set(fast.rounds.values()) == {3}
    assert fast.rows[-1] * spec.row_bytes <= 2**30 < fast.rows[-1] * spec.row_bytes * 1.01  # ~1 GiB of tables
    assert not slow.memory_bound
    assert {m.name for m in slow.methods} == {"random-convert", "random-scratch", "random-chunked"}
    assert slow.rows[-1] < fast.rows[0] and set(slow.rounds.values()) == {1}
    assert plan.sample_rows == sorted(set(fast.rows) | set(slow.rows))


def test_sampling_past_the_time_budget_says_so_and_by_how_much() -> None:
    """Every fake step takes 1 s, whatever its size: the three sizes a line needs end past a 120 s budget."""
    clock = counter_clock()
    results = run(EngramOptions(rows=400_000, dim=64, max_memory=8 << 20, time_budget_s=120), clock=clock)
    engram = results.engram
    assert engram is not None and engram.sample_groups
    over = engram.sample_overrun
    assert over is not None and over.time_budget_s == 120
    assert [len(g.rows) for g in engram.sample_groups] == [3]  # the fourth size was left out, the third was not
    assert over.over_s > 0 and over.predicted_after_rows == engram.sample_groups[0].rows[0]
    assert over.predicted_over_s is not None and over.predicted_over_s > 0
    text = dummyprof.render(results, width=1000)
    assert f"OVER THE TIME BUDGET: sampling ended {format_seconds(over.over_s)} after the 120 s budget" in text
    assert f"(predicted after the {over.predicted_after_rows:,}-row sample: ~" in text
    roomy = roomy_projected_run()
    assert roomy.engram is not None and roomy.engram.sample_overrun is None
    assert "OVER THE TIME BUDGET" not in dummyprof.render(roomy, width=1000)


def test_a_time_budget_that_cannot_hold_the_least_run_is_refused_before_the_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#25.3: two small pre-probes predict the calibration probe and the three sample sizes per group a
    projection needs; a budget below that is refused (exit 2, naming --time-budget and the fix) before the probe."""
    from dummyprof.scenarios.engram.runner import Runner

    allocated: list[int] = []
    real = Runner.allocate
    monkeypatch.setattr(Runner, "allocate", lambda self, rows: (allocated.append(rows), real(self, rows))[1])
    options = EngramOptions(rows=2_000_000_000, dim=64, offload=True, max_memory=16 * 2**20, time_budget_s=100)
    with pytest.raises(DoesNotFitError) as info:
        run(options, clock=counter_clock())  # every timed call 1 s: 8 calls a probe, 20 per sample size
    assert info.value.flag == "--time-budget"
    assert info.value.message == (
        "100 s cannot hold the least this run measures: the calibration probe on 32,768 rows (~8.00 s predicted "
        "from smaller probes on this machine now) and three sample sizes per group it projects (~60.00 s), after "
        "33.00 s spent on set-up and those probes; raise --time-budget to 101 s or more"
    )
    assert allocated == [512, 1024]  # the two pre-probes (1/64 of the probe's rows, twice that); not the probe
    allocated.clear()
    results = run(dataclasses.replace(options, time_budget_s=101), clock=counter_clock())
    assert results.engram is not None and allocated[:3] == [512, 1024, 32_768]


def test_call_costs_keep_the_lower_figure_of_two_noisy_pre_probes() -> None:
    from dummyprof.scenarios.engram.plan import CallCost, call_costs, least_seconds

    # memset: 1 s fixed + 1 ms a row (1.1 s at 100 rows, 1.2 s at 200); constant: noise made the larger faster
    small = {ALLOCATE: 0.0, FIRST_TOUCH: 0.0, "memset": 1.1 / 100, "constant": 2.0 / 100}
    large = {ALLOCATE: 0.0, FIRST_TOUCH: 0.0, "memset": 1.2 / 200, "constant": 1.0 / 200}
    costs = call_costs(small, large, 100)
    assert costs["memset"] == CallCost(pytest.approx(1.0), pytest.approx(0.001))
    assert costs["constant"] == CallCost(1.0, 0.0)  # no negative slope; the intercept no dearer than a reading
    methods = [METHODS["memset"], METHODS["constant"]]
    probe_s, sampling_s = least_seconds(costs, methods, {"memset": True, "constant": False}, 1000, repeat=3)
    assert probe_s == pytest.approx(2.0 + 1.0)  # memset 1 s + 1 s, constant 1 s
    assert sampling_s == pytest.approx(3 * 3 * 1.0)  # constant alone projected: 3 sizes x 3 rounds of 1 s


def test_a_refused_budget_with_nothing_to_project_names_only_the_probe() -> None:
    # before: "... and three sample sizes per group it projects (~0 µs)" when every method fits in full
    options = EngramOptions(rows=100_000, dim=64, offload=True, max_memory=2**30, time_budget_s=5)
    with pytest.raises(DoesNotFitError) as info:
        run(options, clock=counter_clock())
    assert "sample sizes" not in info.value.message
    assert "predicted from smaller probes on this machine now), after " in info.value.message
