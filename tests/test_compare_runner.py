"""The compare runner: interleaving, warm-up, medians and ratios, on a fake clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn

from dummyprof.anatomy import allocated_bytes
from dummyprof.loaders.strategies import Strategy, legacy_traversal, per_layer_traversal
from dummyprof.models.synthetic import TreeSpec, build_tree
from dummyprof.results.compare import ModelSummary
from dummyprof.scenarios.compare.runner import run_compare
from tests.fakes import FakeClock

MS = 1e-3


def ticking(traversal, clock: FakeClock, seconds_per_visit: float):  # type: ignore[no-untyped-def]
    def traverse(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
        for item in traversal(model):
            clock.tick(seconds_per_visit)
            yield item

    return traverse


def test_times_are_ratios_of_medians_over_interleaved_rounds() -> None:
    clock = FakeClock()
    spec = TreeSpec(depth=4, hidden=32)
    a = Strategy("a", "legacy, 1 ms a visit", ticking(legacy_traversal, clock, MS), initializer="v0.29")
    b = Strategy("b", "per-layer, 1 ms a visit", ticking(per_layer_traversal, clock, MS))
    order: list[str] = []
    result = run_compare(
        lambda: build_tree(spec),
        ModelSummary(),
        [a, b],
        torch.device("cpu"),
        repeat=3,
        warmup=1,
        clock=clock,
        progress=lambda done, total, label: order.append(label.split(": ")[1]),
        measure_overhead=False,
    )
    assert order == ["a", "b"] * 4  # A, B, A, B, ... including the warm-up round
    sa, sb = result.strategies
    assert len(sa.time.samples) == 3  # warm-up discarded
    assert sa.time.samples == pytest.approx([sa.visits * MS] * 3)
    assert sb.time.samples == pytest.approx([sb.visits * MS] * 3)
    assert result.baseline_strategy == "a"
    assert result.speedup("b") == pytest.approx(sa.visits / sb.visits)
    assert sa.visits == 9 * (2 + 3 + 4 + 5) + 4
    assert sb.visits == 9 * 4 + 2


def test_counts_and_per_tensor_table() -> None:
    spec = TreeSpec(depth=3, hidden=32)
    strategies = [
        Strategy("legacy", "", legacy_traversal, initializer="v0.29"),
        Strategy("per-layer", "", per_layer_traversal),
    ]
    result = run_compare(
        lambda: build_tree(spec), ModelSummary(), strategies, torch.device("cpu"), repeat=1, clock=FakeClock()
    )
    legacy, per_layer = result.strategies
    assert legacy.max_visits == 4 and per_layer.max_visits == 2
    assert legacy.redundant_visits == legacy.visits - legacy.distinct_tensors
    assert per_layer.redundant_visits == 1  # the tied weight's second owner
    deep = result.tensors["child0.child0.child0.weight"]
    assert deep.visits == {"legacy": 4, "per-layer": 1}
    assert deep.bytes_written == {"legacy": 4 * 32 * 32 * 4, "per-layer": 32 * 32 * 4}
    assert deep.names == ["child0.child0.child0.weight", "child0.child0.child0.weight_alias"]
    assert result.tensors["child0.rope_cache"].visits == {"legacy": 0, "per-layer": 0}
    # v0.29 writes no integers or scales; v0.33 writes int8 and scale bytes once each.
    assert result.tensors["child0.int8_weight"].bytes_written == {"legacy": 0, "per-layer": 32 * 32}
    assert per_layer.peak_scratch_bytes == 2 * 32 * 32  # fp16 scratch for the fp8 weight
    assert legacy.peak_scratch_bytes == 3 * 32 * 32  # fp16 widening + fp8 narrowing
    assert legacy.recording_overhead_s == 0.0  # the fake clock never moves
    assert legacy.memory.rss_peak_bytes is not None and legacy.memory.rss_before_bytes is not None
    assert legacy.memory.pinned_bytes.value is None and legacy.memory.pinned_bytes.reason


def test_each_round_measures_the_memset_floor_on_a_fresh_model() -> None:
    """The floor zeroes every distinct real storage once per round, warm-up discarded: exact bytes."""
    spec = TreeSpec(depth=3, hidden=32)
    built: list[nn.Module] = []

    def build() -> nn.Module:
        built.append(build_tree(spec))
        return built[-1]

    strategies = [Strategy("per-layer", "", per_layer_traversal)]
    result = run_compare(build, ModelSummary(), strategies, torch.device("cpu"), repeat=2, warmup=1)
    floor = result.floor
    assert floor is not None
    assert floor.bytes_written == allocated_bytes(build_tree(spec))
    assert len(floor.time.samples) == 2  # one per measured round
    assert len(built) == 3 * 2 + 1  # per round: the strategy's model and the floor's, plus the overhead probe
    floored = built[-2]  # the last round's floor model (the overhead probe was built after it)
    assert all(not t.any() for t in floored.state_dict().values() if t.dtype != torch.bool)
