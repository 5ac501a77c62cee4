"""Issue #17.7: the memset floor is read after every fill, and a fill faster than it is flagged, never a number."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import cycle

import pytest
import torch
from torch import nn

from dummyprof.loaders.strategies import Strategy, per_layer_traversal
from dummyprof.models.synthetic import TreeSpec, build_tree
from dummyprof.reports.registry import render
from dummyprof.reports.reporter import RenderOptions
from dummyprof.results.common import Estimate
from dummyprof.results.compare import CompareResult, FloorResult, ModelSummary, StrategyResult
from dummyprof.results.session import Results
from dummyprof.scenarios.compare import runner
from dummyprof.scenarios.compare.runner import assess_noise, run_compare
from tests.fakes import FakeClock


def _scripted(clock: FakeClock, seconds: Iterator[float]):  # type: ignore[no-untyped-def]
    def traverse(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
        clock.tick(next(seconds))
        yield from per_layer_traversal(model)

    return traverse


def test_the_floor_is_read_after_every_fill(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    readings = cycle([0.5, 0.25, 0.75])

    def floor(model: nn.Module, device: torch.device, clock_: object) -> tuple[int, float]:
        return 1000, next(readings)

    monkeypatch.setattr(runner, "_time_floor", floor)
    strategies = [
        Strategy("a", "a", _scripted(clock, cycle([2.0]))),
        Strategy("b", "b", _scripted(clock, cycle([1.0]))),
    ]
    result = run_compare(
        lambda: build_tree(TreeSpec(depth=2, hidden=32)), ModelSummary(), strategies, torch.device("cpu"),
        repeat=3, warmup=1, clock=clock, measure_overhead=False,
    )  # fmt: skip
    assert result.floor is not None
    # 2 strategies x 3 measured rounds: six readings (the two of the warm-up round discarded), the fastest used
    assert len(result.floor.time.samples) == 6
    assert result.floor.bytes_per_s == 1000 / 0.25


def _faster_than_floor() -> CompareResult:
    result = CompareResult(model=ModelSummary(bytes=1000), repeat=2)
    result.floor = FloorResult(bytes_written=1000, time=Estimate.measured([1.0, 2.0]))  # 1000 B/s at best
    result.strategies = [
        StrategyResult(name="legacy", time=Estimate.measured([4.0, 4.0]), bytes_written=1000),  # 25% of the floor
        StrategyResult(name="per-layer", time=Estimate.measured([0.25, 0.25]), bytes_written=1000),  # 400%: cannot be
    ]
    assess_noise(result)
    return result


def test_a_fill_faster_than_the_floor_carries_a_code() -> None:
    result = _faster_than_floor()
    flagged = [(w.code, w.subject, w.value) for w in result.noise if w.code == "faster-than-floor"]
    assert flagged == [("faster-than-floor", "per-layer", 4.0)]


@pytest.mark.parametrize("reporter", ["terminal", "markdown"])
def test_a_fill_faster_than_the_floor_is_shown_flagged_never_as_a_number(reporter: str) -> None:
    text = render(Results(command="compare", compare=_faster_than_floor()), reporter, RenderOptions(width=200))
    assert "400%" not in text.replace("(400% of it)", "")
    assert "over!" in text and "25%" in text
    assert "per-layer: filled faster than the memset floor measured in this run (400% of it)" in text
