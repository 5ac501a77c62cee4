"""Closed-form visit counts of each traversal on the synthetic tree, and what is never written."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dummyprof.errors import UsageError
from dummyprof.loaders.initializers import V029Initializer, V033Initializer
from dummyprof.loaders.strategies import (
    STRATEGIES,
    Strategy,
    get_strategy,
    legacy_traversal,
    register_strategy,
    run_strategy,
)
from dummyprof.measure.recorder import VisitRecorder, index_model
from dummyprof.models.synthetic import TreeSpec, build_tree

# Persistent tensors each block owns (the alias and rope_cache buffers are non-persistent).
PERSISTENT_PER_BLOCK = 9
SPECS = [TreeSpec(depth=d, width=w, hidden=32) for d, w in ((1, 1), (3, 1), (6, 1), (2, 2), (3, 3))]


def record(spec: TreeSpec, name: str, initializer: object = None) -> VisitRecorder:
    model = build_tree(spec)
    recorder = VisitRecorder(model)
    run_strategy(model, get_strategy(name), recorder=recorder, initializer=initializer)  # type: ignore[arg-type]
    return recorder


def by_name(recorder: VisitRecorder) -> dict[str, int]:
    return {r.name: r.visits for r in recorder.records.values()}


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"d{s.depth}w{s.width}")
def test_legacy_visits_a_tensor_k_levels_deep_k_plus_1_times(spec: TreeSpec) -> None:
    recorder = record(spec, "legacy")
    for r in recorder.records.values():
        if r.kinds[0] == "non-persistent buffer":
            assert r.visits == 0, r.name
        elif r.name == "embed_tokens.weight":
            assert r.visits == 4  # tied: (1 + 1) through embed_tokens, (1 + 1) through lm_head
        else:
            assert r.visits == r.depth + 1, r.name
    blocks_weighted = sum(spec.width**k * (k + 1) for k in range(1, spec.depth + 1))
    assert recorder.visits == PERSISTENT_PER_BLOCK * blocks_weighted + 4


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"d{s.depth}w{s.width}")
def test_per_layer_visits_once_except_the_tied_weight_twice(spec: TreeSpec) -> None:
    recorder = record(spec, "per-layer")
    counts = by_name(recorder)
    assert counts.pop("embed_tokens.weight") == 2
    for name, visits in counts.items():
        expected = 0 if name.endswith(("rope_cache",)) else 1
        assert visits == expected, name
    assert recorder.visits == PERSISTENT_PER_BLOCK * spec.blocks + 2


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"d{s.depth}w{s.width}")
def test_unique_visits_every_storage_exactly_once(spec: TreeSpec) -> None:
    recorder = record(spec, "unique")
    counts = by_name(recorder)
    assert all(v == (0 if n.endswith("rope_cache") else 1) for n, v in counts.items())
    assert recorder.visits == PERSISTENT_PER_BLOCK * spec.blocks + 1


def test_deepest_tensor_of_depth_12_is_visited_13_times_by_legacy() -> None:
    spec = TreeSpec(depth=12, hidden=32)
    legacy, per_layer = by_name(record(spec, "legacy")), by_name(record(spec, "per-layer"))
    deepest = ".".join(["child0"] * 12) + ".weight"
    assert legacy[deepest] == 13
    assert per_layer[deepest] == 1


def test_alias_buffer_shares_the_weight_record() -> None:
    records = index_model(build_tree(TreeSpec(depth=1, hidden=32)))
    weight = next(r for r in records.values() if r.name == "child0.weight")
    assert weight.names == ["child0.weight", "child0.weight_alias"]
    assert weight.kinds == ["parameter", "non-persistent buffer"]


def test_tied_weight_written_twice_by_per_layer_once_by_unique() -> None:
    spec = TreeSpec(depth=2, hidden=32)
    nbytes = spec.vocab * spec.hidden * 4
    for name, times in (("per-layer", 2), ("unique", 1), ("legacy", 4)):
        tied = next(r for r in record(spec, name).records.values() if r.name == "embed_tokens.weight")
        assert tied.bytes_written == times * nbytes, name


@pytest.mark.parametrize("strategy", ["legacy", "per-layer", "unique"])
def test_never_written_non_persistent_meta_and_integer_indices(strategy: str) -> None:
    spec = TreeSpec(depth=3, width=2, hidden=32, meta=True)
    model = build_tree(spec)
    with torch.no_grad():
        for m in model.modules():
            for name in ("rope_cache", "expert_index"):
                if hasattr(m, name):
                    getattr(m, name).fill_(7)
    recorder = VisitRecorder(model)
    run_strategy(model, get_strategy(strategy), initializer=V033Initializer(), recorder=recorder)
    for m in model.modules():
        for name in ("rope_cache", "expert_index"):
            if hasattr(m, name):
                assert torch.all(getattr(m, name) == 7), name
    for r in recorder.records.values():
        if r.name.endswith(("rope_cache", "expert_index")) or r.name == "meta_placeholder":
            assert r.bytes_written == 0, r.name
    assert model.meta_placeholder.device.type == "meta"


def fill(spec: TreeSpec, strategy: str, initializer: object) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = build_tree(spec)
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.device.type != "meta":
                t.untyped_storage().fill_(0x5A)  # same starting bytes for every strategy
    run_strategy(model, get_strategy(strategy), initializer=initializer)  # type: ignore[arg-type]
    return {
        k: v.view(torch.uint8).clone() for k, v in model.state_dict(keep_vars=True).items() if v.device.type != "meta"
    }


@pytest.mark.parametrize("init", [V029Initializer(), V033Initializer()], ids=["v0.29", "v0.33"])
def test_per_layer_and_unique_leave_identical_bytes(init: object) -> None:
    spec = TreeSpec(depth=4, width=2, hidden=64, engram_rows=8)
    a, b = fill(spec, "per-layer", init), fill(spec, "unique", init)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_legacy_leaves_identical_bytes_with_the_same_initializer() -> None:
    spec = TreeSpec(depth=4, width=2, hidden=64)
    legacy, per_layer = fill(spec, "legacy", V029Initializer()), fill(spec, "per-layer", V029Initializer())
    for key in legacy:
        assert torch.equal(legacy[key], per_layer[key]), key


def test_legacy_traversal_loses_declared_values_through_state_dict_detach() -> None:
    # state_dict() detaches, dropping the dummy_weight_value attribute: with the v0.33 initializer the
    # legacy traversal fills norms with random values where per-layer writes the declared 1.0 / 0.0.
    spec = TreeSpec(depth=2, hidden=64)
    legacy, per_layer = fill(spec, "legacy", V033Initializer()), fill(spec, "per-layer", V033Initializer())
    differing = sorted(k for k in legacy if not torch.equal(legacy[k], per_layer[k]))
    assert differing == sorted(f"{p}.{n}" for p in ("child0", "child0.child0") for n in ("norm_bias", "norm_weight"))


def test_registry_rejects_unknown_and_duplicate_names() -> None:
    with pytest.raises(UsageError, match="unknown strategy 'nope'; choose from: legacy, per-layer, unique"):
        get_strategy("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_strategy(STRATEGIES["legacy"])


def test_registered_strategy_runs_through_the_same_code() -> None:
    def twice(model: nn.Module):  # type: ignore[no-untyped-def]
        yield from legacy_traversal(model)
        yield from legacy_traversal(model)

    register_strategy(Strategy("twice-legacy", "test only", twice, initializer="v0.29"))
    try:
        spec = TreeSpec(depth=2, hidden=32)
        assert record(spec, "twice-legacy").visits == 2 * record(spec, "legacy").visits
    finally:
        STRATEGIES.pop("twice-legacy")
    assert "twice-legacy" not in STRATEGIES


def test_strategies_take_any_module() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.LayerNorm(4), nn.Linear(4, 2)))
    counts = {name: record_module(model, name) for name in ("legacy", "per-layer", "unique")}
    # 2 params at depth 1 (2 visits each), 4 at depth 2 (3 visits each)
    assert counts == {"legacy": 2 * 2 + 4 * 3, "per-layer": 6, "unique": 6}


def record_module(model: nn.Module, name: str) -> int:
    recorder = VisitRecorder(model)
    run_strategy(model, get_strategy(name), recorder=recorder)
    return recorder.visits


def test_strategy_plugins_register_through_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from dummyprof.loaders import strategies

    class FakeEntry:
        def __init__(self, name: str, obj: object) -> None:
            self.name, self.value, self._obj = name, f"plugin_pkg:{name}", obj

        def load(self) -> object:
            if isinstance(self._obj, Exception):
                raise self._obj
            return self._obj

    plugin = Strategy("from-plugin", "test plugin", strategies.per_layer_traversal)
    entries = [FakeEntry("good", plugin), FakeEntry("broken", ImportError("no module named plugin_pkg"))]
    monkeypatch.setattr(
        importlib.metadata, "entry_points", lambda group: entries if group == "dummyprof.strategies" else []
    )
    monkeypatch.setattr(strategies, "_plugins_loaded", False)
    try:
        assert strategies.load_plugins() == ["strategy plugin 'broken' (plugin_pkg:broken): no module named plugin_pkg"]
        assert get_strategy("from-plugin") is plugin
    finally:
        STRATEGIES.pop("from-plugin")
