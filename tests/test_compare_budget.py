"""compare's time budget and --repeat auto (issue #13), on fake clocks and a fixed prediction."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import cycle

import pytest
import torch
from torch import nn

from dummyprof.errors import UsageError
from dummyprof.loaders.strategies import Strategy, per_layer_traversal
from dummyprof.models.synthetic import TreeSpec, build_tree
from dummyprof.reports.registry import render
from dummyprof.reports.reporter import RenderOptions
from dummyprof.results.compare import CompareResult, ModelSummary
from dummyprof.results.session import Results
from dummyprof.scenarios.compare import measure as compare_measure
from dummyprof.scenarios.compare import run as compare_run
from dummyprof.scenarios.compare import sizing
from dummyprof.scenarios.compare.options import CompareOptions
from dummyprof.scenarios.compare.runner import AutoRepeat, run_compare
from tests.conftest import CliResult
from tests.fakes import FakeClock

Cli = Callable[..., CliResult]
SECONDS_PER_ROUND = 10.0  # the prediction every test here starts from: 10 s a round (warm-up included)


@pytest.fixture(autouse=True)
def no_full_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)


@pytest.fixture
def ten_seconds_a_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """The calibration really runs; its prediction is replaced by a fixed one so the decision is exact."""
    real = sizing.decide

    def decide(*args, rounds: int, time_budget_s: float, **kwargs):  # type: ignore[no-untyped-def]
        decision, projections = real(*args, rounds=rounds, time_budget_s=time_budget_s, **kwargs)
        decision.predicted_s = SECONDS_PER_ROUND * rounds
        over = decision.predicted_s > time_budget_s
        decision.mode, decision.reason = ("projected", "time") if over else ("measured", "fits")
        return decision, projections

    monkeypatch.setattr(sizing, "QUICK_BYTES", 0)  # calibrate even this small tree
    monkeypatch.setattr(compare_measure, "decide", decide)


def _run(budget: float, repeat: int = 5) -> CompareResult:
    options = CompareOptions(depth=2, hidden=32, repeat=repeat, warmup=1, device="cpu", time_budget=budget)
    result = compare_run.run(options, clock=FakeClock()).compare
    assert result is not None
    return result


def _text(result: CompareResult) -> str:
    return " ".join(render(Results(command="compare", compare=result), "terminal", RenderOptions(width=200)).split())


@pytest.mark.usefixtures("ten_seconds_a_round")
def test_budget_enough_measures_every_round() -> None:
    result = _run(budget=61.0)  # 6 rounds x 10 s
    assert (result.size.mode, result.size.reason, result.repeat, result.repeats_requested) == ("measured", "fits", 5, 0)
    assert all(len(s.time.samples) == 5 for s in result.strategies)
    assert "PROJECTED" not in _text(result) and "REDUCED" not in _text(result)


@pytest.mark.usefixtures("ten_seconds_a_round")
def test_budget_short_of_all_rounds_measures_fewer_and_says_so() -> None:
    result = _run(budget=45.0)  # 4 rounds fit: 1 warm-up + 3 measured
    assert (result.size.mode, result.size.reason, result.repeat, result.repeats_requested) == (
        "measured", "reduced", 3, 5,
    )  # fmt: skip
    assert all(len(s.time.samples) == 3 for s in result.strategies)
    assert "repeats REDUCED from 5 to 3 to fit the time budget" in _text(result)


@pytest.mark.usefixtures("ten_seconds_a_round")
def test_budget_exceeded_projects_with_a_label() -> None:
    result = _run(budget=25.0)  # not even 3 measured rounds fit
    assert (result.size.mode, result.size.reason, result.repeat) == ("projected", "time", 0)
    assert all(s.time.samples == [] and s.projection is not None for s in result.strategies)
    for s in result.strategies:
        assert s.projection is not None and s.projection.time.span is not None
        assert s.projection.time.span[0] <= (s.projection.time.value or 0) <= s.projection.time.span[1]
    assert "fill times and memory: PROJECTED, not measured" in _text(result)


def _scripted(clock: FakeClock, seconds: Iterator[float]):  # type: ignore[no-untyped-def]
    def traverse(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
        clock.tick(next(seconds))
        yield from per_layer_traversal(model)

    return traverse


def _auto(a: Iterator[float], b: Iterator[float], rule: AutoRepeat) -> CompareResult:
    clock = FakeClock()
    strategies = [Strategy("a", "a", _scripted(clock, a)), Strategy("b", "b", _scripted(clock, b))]
    spec = TreeSpec(depth=2, hidden=32)
    return run_compare(
        lambda: build_tree(spec), ModelSummary(), strategies, torch.device("cpu"),
        warmup=1, clock=clock, measure_overhead=False, auto=rule,
    )  # fmt: skip


def test_repeat_auto_stops_once_the_speedup_is_tight() -> None:
    result = _auto(cycle([2.0, 2.01, 1.99]), cycle([1.0, 1.005, 0.995]), AutoRepeat(budget_s=1000))
    assert (result.auto_stop, result.repeat) == ("tight", 3)  # the minimum: the interval is within 5% at once
    low, high = result.strategy("b").speedup_interval
    assert 0.95 * 2.0 <= low <= high <= 1.05 * 2.0


def test_repeat_auto_goes_on_while_noisy_and_stops_at_the_budget() -> None:
    result = _auto(cycle([1.0, 3.0]), cycle([3.0, 1.0, 1.0]), AutoRepeat(budget_s=60))
    assert result.auto_stop == "budget"
    # each round takes 4-6 s on the fake clock: it stopped when one more would pass 60 s
    spent = sum(sum(s.time.samples) for s in result.strategies)
    assert result.repeat > 3 and spent <= 60
    assert all(len(s.time.samples) == result.repeat for s in result.strategies)


def test_repeat_auto_stops_at_its_maximum() -> None:
    result = _auto(cycle([1.0, 3.0]), cycle([3.0, 1.0, 1.0]), AutoRepeat(budget_s=1e9, max_rounds=7))
    assert (result.auto_stop, result.repeat) == ("max", 7)


def test_cli_repeat_auto_and_the_gate_keeps_fixed_repeats(cli: Cli) -> None:
    out = cli("compare", "--depth", "2", "--hidden", "32", "--repeat", "auto", "--device", "cpu", "--warmup", "0")
    assert out.exit_code == 0, out.stderr
    assert "--repeat auto:" in out.stdout and "measured rounds;" in out.stdout
    bad = cli("compare", "--repeat", "often")
    assert bad.exit_code == 2 and "--repeat" in bad.stderr
    from dummyprof.errors import UsageError
    from dummyprof.scenarios.compare.options import validate

    with pytest.raises(UsageError, match="fixed repeats"):
        validate(CompareOptions(repeat_auto=True, project=False))


def test_a_fixed_repeat_stops_at_the_deadline_with_the_rounds_it_measured() -> None:
    """#17.3: --repeat 1e9 --time-budget 5 ran for minutes; the deadline bounds the whole run_compare call."""
    clock = FakeClock()
    strategies = [
        Strategy("a", "a", _scripted(clock, cycle([2.0]))),
        Strategy("b", "b", _scripted(clock, cycle([1.0]))),
    ]
    spec = TreeSpec(depth=2, hidden=32)
    result = run_compare(
        lambda: build_tree(spec), ModelSummary(), strategies, torch.device("cpu"),
        repeat=10**9, warmup=1, clock=clock, deadline=clock() + 20.0,
    )  # fmt: skip
    # 3 s a round: warm-up ends at 3 s, measured rounds at 6, 9, ..., 18; a seventh would end at 21 > 20
    assert (result.repeat, result.auto_stop) == (5, "budget")
    assert all(len(s.time.samples) == 5 for s in result.strategies)
    assert all(s.recording_overhead_s is None for s in result.strategies)  # no time was left for it
    assert clock() - 1000.0 <= 20.0
    result.repeats_requested = 10**9
    assert "--repeat 1000000000: 5 measured rounds; stopped because one more round would overrun" in _text(result)


def test_the_deadline_keeps_one_measured_round_however_late() -> None:
    clock = FakeClock()
    strategies = [Strategy("a", "a", _scripted(clock, cycle([50.0])))]
    result = run_compare(
        lambda: build_tree(TreeSpec(depth=1, hidden=32)), ModelSummary(), strategies, torch.device("cpu"),
        repeat=5, warmup=1, clock=clock, deadline=clock() + 1.0, measure_overhead=False,
    )  # fmt: skip
    assert (result.repeat, result.auto_stop, len(result.strategies[0].time.samples)) == (1, "budget", 1)
    result.repeats_requested = 5
    said = " ".join(_text(result).split())
    assert "FEWER ROUNDS THAN PROMISED: --time-budget promises 3 measured rounds, and 1 fit" in said


@pytest.mark.usefixtures("ten_seconds_a_round")
def test_a_refused_loader_names_the_time_budget_that_fills_it_and_that_budget_works() -> None:
    """The refusal's number, followed on the same (fake-clocked) machine, measures the model and runs the loader."""
    loader = ["tests/fixtures/loaders.py:fill_once"]
    options = CompareOptions(depth=2, hidden=32, repeat=5, warmup=1, device="cpu", time_budget=25.0, loaders=loader)
    with pytest.raises(UsageError) as caught:
        compare_run.run(options, clock=FakeClock())
    message = str(caught.value)
    assert caught.value.flag == "--loader" and "predicted at 60.00 s, over the time budget" in message
    found = re.search(r"give --time-budget (\d+)s, or shrink the model", message)
    assert found is not None, message
    offered = int(found[1])
    assert offered >= 60 * 1.25  # the 60 s predicted (6 rounds of 10 s), with the margin a rerun needs
    options.time_budget = float(offered)
    result = compare_run.run(options, clock=FakeClock()).compare
    assert result is not None and result.size.mode == "measured"
    assert "fill_once" in {s.name for s in result.strategies}
