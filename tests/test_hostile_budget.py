"""#17.3 (wave 2): the time budget bounds the whole compare run, write tracing and --trace fills included."""

from __future__ import annotations

from itertools import cycle
from typing import Any

import pytest
import torch

from dummyprof.errors import UsageError
from dummyprof.loaders.strategies import Strategy
from dummyprof.models.synthetic import TreeSpec, build_tree
from dummyprof.results.compare import ModelSummary
from dummyprof.scenarios.compare import measure as compare_measure
from dummyprof.scenarios.compare import run as compare_run
from dummyprof.scenarios.compare import runner
from dummyprof.scenarios.compare.options import CompareOptions
from dummyprof.scenarios.compare.runner import run_compare
from tests.fakes import FakeClock
from tests.test_compare_budget import _scripted


@pytest.fixture(autouse=True)
def no_full_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)


def test_trace_fills_come_out_of_the_budget_not_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """compare --trace ran its instrumented fills after the deadline; now they run first and the rounds stop sooner."""
    clock = FakeClock()
    real_run_strategy = runner.run_strategy

    def one_second_fill(*args: Any, **kwargs: Any) -> None:
        clock.tick(1.0)
        real_run_strategy(*args, **kwargs)

    def four_second_trace(*args: Any, **kwargs: Any) -> list[Any]:
        clock.tick(4.0)
        return []

    monkeypatch.setattr(runner, "run_strategy", one_second_fill)
    monkeypatch.setattr(compare_measure, "trace_fills", four_second_trace)
    options = CompareOptions(depth=1, hidden=32, repeat=1000, warmup=1, device="cpu", time_budget=10.0, trace=True)
    start = clock()
    result = compare_run.run(options, clock=clock).compare
    assert result is not None
    # trace 4 s, then rounds of 3 fills (1 s each): the warm-up ends at 7 s, one measured round at 10 s
    assert clock() - start == 10.0
    assert (result.warmup, result.repeat, result.auto_stop) == (1, 1, "budget")


def test_a_projected_compare_refuses_trace_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A projected run fills nothing, so there is no trace: the --trace writer raised a ValueError traceback."""
    from dummyprof.scenarios.compare import sizing

    real = sizing.decide

    def over_budget(*args: Any, **kwargs: Any) -> Any:
        decision, projections = real(*args, **kwargs)
        decision.predicted_s, decision.mode, decision.reason = 1e9, "projected", "time"
        return decision, projections

    monkeypatch.setattr(sizing, "QUICK_BYTES", 0)
    monkeypatch.setattr(compare_measure, "decide", over_budget)
    options = CompareOptions(depth=1, hidden=32, repeat=5, device="cpu", time_budget=5.0, trace=True)
    with pytest.raises(UsageError) as caught:
        compare_run.run(options, clock=FakeClock())
    assert caught.value.flag == "--trace"
    assert "is projected, not filled, here (its measured rounds are predicted at " in str(caught.value)
    assert "over the time budget); a trace is recorded from a real fill: give --time-budget " in str(caught.value)


@pytest.mark.parametrize(
    ("budget", "warmed", "spent"),
    [
        (8.0, 0, 5.0),  # warm-up (5 s) + one measured round (5 s) would end at 10 s > 8 s: no warm-up
        (14.0, 1, 10.0),  # the first warm-up ends at 5 s; a second would leave 4 s < one 5 s round
    ],
)
def test_a_warm_up_that_leaves_no_room_for_a_measured_round_is_dropped(
    budget: float, warmed: int, spent: float
) -> None:
    clock = FakeClock()
    strategies = [Strategy("a", "a", _scripted(clock, cycle([5.0])))]
    result = run_compare(
        lambda: build_tree(TreeSpec(depth=1, hidden=32)), ModelSummary(), strategies, torch.device("cpu"),
        repeat=5, warmup=2, clock=clock, deadline=clock() + budget, round_estimate_s=5.0, measure_overhead=False,
    )  # fmt: skip
    assert (result.warmup, result.repeat, result.auto_stop) == (warmed, 1, "budget")
    assert result.strategies[0].time.samples == [5.0]
    assert clock() - 1000.0 == spent
