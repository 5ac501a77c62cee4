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

    def floor(model: nn.Module, device: torch.device, clock_: object) -> tuple[int, int, float]:
        return 1000, 0, next(readings)

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


# ---- the floor on the fills' kind of pages: fresh past glibc's mmap threshold, touched below it --------------------

MIB = 1 << 20


@pytest.fixture(autouse=True)
def _dynamic_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """glibc's threshold as a process starts (a measured run earlier in this process may have fixed it)."""
    from dummyprof.measure import memory

    monkeypatch.setattr(memory, "_mapped_afresh", False)


def test_fresh_pages_are_those_glibc_maps_afresh_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from dummyprof.measure import memory
    from dummyprof.measure.memory import FRESH_MAP_BYTES, MMAP_THRESHOLD, fresh_pages

    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    assert MMAP_THRESHOLD == 32 * MIB
    assert fresh_pages(32 * MIB, cpu) and fresh_pages(1 << 30, cpu)
    assert not fresh_pages(32 * MIB - 1, cpu) and not fresh_pages(MIB, cpu)
    assert not fresh_pages(1 << 30, gpu)  # a GPU's memory has no glibc pages
    monkeypatch.setattr(memory, "_mapped_afresh", True)  # the threshold fixed where glibc starts it: 128 KiB
    assert FRESH_MAP_BYTES == 128 << 10 and fresh_pages(FRESH_MAP_BYTES, cpu) and fresh_pages(MIB, cpu)
    assert not fresh_pages(FRESH_MAP_BYTES - 1, cpu)


def test_measured_rounds_fix_glibcs_threshold_so_each_model_is_mapped_afresh() -> None:
    from dummyprof.measure import memory

    run_compare(lambda: build_tree(TreeSpec(depth=1, hidden=8)), ModelSummary(), [], torch.device("cpu"), repeat=1)
    assert memory._mapped_afresh is True  # glibc here: mallopt took it


class _Snapshot:
    """A clock that, at its first reading (the start of the timed memset), notes each storage's first byte."""

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        self.tensors, self.seen, self.now = tensors, dict[str, int](), 0.0

    def __call__(self) -> float:
        if not self.seen:
            self.seen = {name: int(t.view(-1)[0]) for name, t in self.tensors.items()}
        self.now += 0.25
        return self.now


def test_the_floor_touches_storages_under_the_threshold_first_and_times_larger_ones_fresh() -> None:
    """A 32 MiB storage is zeroed inside the clock (its first write on a fresh model, faults and all, as a fill's);
    a 1 MiB one is written before the clock starts, so the timed memset finds it touched whatever glibc gave."""
    model = nn.Module()
    model.big = nn.Parameter(torch.full((32 * MIB,), 7, dtype=torch.uint8), requires_grad=False)
    model.small = nn.Parameter(torch.full((MIB,), 7, dtype=torch.uint8), requires_grad=False)
    clock = _Snapshot({"big": model.big, "small": model.small})
    written, touched, seconds = runner._time_floor(model, torch.device("cpu"), clock)
    assert clock.seen == {"big": 7, "small": 0}  # at the clock's start: small already written, big not yet
    assert (written, touched, seconds) == (33 * MIB, MIB, 0.25)
    assert int(model.big.sum()) == int(model.small.sum()) == 0


def test_a_model_all_past_the_threshold_is_timed_on_fresh_pages_alone() -> None:
    model = nn.Module()
    model.big = nn.Parameter(torch.full((32 * MIB,), 7, dtype=torch.uint8), requires_grad=False)
    clock = _Snapshot({"big": model.big})
    assert runner._time_floor(model, torch.device("cpu"), clock) == (32 * MIB, 0, 0.25)
    assert clock.seen == {"big": 7}


def test_a_memset_rate_is_timed_on_touched_memory_of_the_size_asked() -> None:
    """On a clock where every memset takes 1 s, the rate is the bytes written once (at least 1 MiB)."""
    from dummyprof.measure.engine import memset_rate

    clock = FakeClock()

    def ticking() -> float:  # each reading a second after the last: every memset takes 1 s
        clock.tick(1.0)
        return clock()

    assert memset_rate(2 * MIB, torch.device("cpu"), ticking) == 2 * MIB
    assert memset_rate(1024, torch.device("cpu"), ticking) == MIB


def test_the_floor_note_says_which_pages_it_was_timed_on() -> None:
    result = CompareResult(
        strategies=[StrategyResult(name="legacy", bytes_written=40 * MIB, time=Estimate.measured([1.0]))],
        floor=FloorResult(bytes_written=40 * MIB, touched_bytes=8 * MIB, time=Estimate.measured([0.01])),
    )
    out = " ".join(render(Results(command="compare", compare=result), "markdown", RenderOptions()).split())
    assert (
        "memset floor (4.19 GB/s: 40.00 MiB of a fresh model's storages zeroed once, the 8.00 MiB under glibc's "
        "mmap threshold touched first (glibc reuses memory there), fastest of 1 readings"
    ) in out
    assert result.floor is not None
    result.floor.touched_bytes = 40 * MIB
    out = " ".join(render(Results(command="compare", compare=result), "markdown", RenderOptions()).split())
    assert "zeroed once, each under glibc's mmap threshold touched first (glibc reuses memory there), fastest" in out
