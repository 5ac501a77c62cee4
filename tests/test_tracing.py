"""The write tracer: every initializer rule, out= and view writes, and agreement with the visit recorder."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dummyprof.anatomy import storage_key
from dummyprof.loaders.initializers import V029Initializer, V033Initializer
from dummyprof.loaders.strategies import STRATEGIES, get_strategy, run_strategy
from dummyprof.measure.recorder import VisitRecorder
from dummyprof.measure.write_tracer import WriteTracer, trace_writes
from dummyprof.models.presets import preset_source
from dummyprof.models.synthetic import TreeSpec, build_tree
from tests.fixtures import loaders

HAS_E8M0 = hasattr(torch, "float8_e8m0fnu")
HAS_FP4 = hasattr(torch, "float4_e2m1fn_x2")


def traced(fn: object, tensor: torch.Tensor) -> tuple[int, int, list[str]]:
    tracer = WriteTracer()
    with tracer, torch.no_grad():
        fn()  # type: ignore[operator]
    seen = tracer.writes_to(tensor)
    return seen.writes, seen.bytes_written, seen.ops


def declared(tensor: torch.Tensor, value: float) -> torch.Tensor:
    tensor.dummy_weight_value = value  # type: ignore[attr-defined]
    return tensor


RULES = [
    # (case, tensor, local name, writes expected from v0.33, op)
    ("declared value", lambda: declared(torch.empty(4, 8), 1.0), "norm.weight", 1, "fill_"),
    ("uint8 scale", lambda: torch.empty(4, 8, dtype=torch.uint8), "weight_scale_inv", 1, "fill_"),
    ("int8 random", lambda: torch.empty(4, 8, dtype=torch.int8), "qweight", 1, "random_"),
    ("uint8 random", lambda: torch.empty(4, 8, dtype=torch.uint8), "qweight", 1, "random_"),
    ("fp8 via fp16 scratch", lambda: torch.empty(4, 8, dtype=torch.float8_e4m3fn), "weight", 1, "copy_"),
    ("float uniform", lambda: torch.empty(4, 8, dtype=torch.bfloat16), "weight", 1, "uniform_"),
    ("int64 untouched", lambda: torch.empty(8, dtype=torch.int64), "index", 0, None),
    ("meta untouched", lambda: torch.empty(4, 8, device="meta"), "weight", 0, None),
]
if HAS_E8M0:
    RULES.append(("e8m0 scale", lambda: torch.empty(4, 8, dtype=torch.float8_e8m0fnu), "weight_scale", 1, "fill_"))
if HAS_FP4:
    RULES.append(("packed fp4", lambda: torch.empty(4, 8, dtype=torch.float4_e2m1fn_x2), "weight", 1, "random_"))


@pytest.mark.parametrize(("case", "make", "name", "writes", "op"), RULES, ids=[r[0] for r in RULES])
def test_every_v033_rule_is_seen(case: str, make: object, name: str, writes: int, op: str | None) -> None:
    tensor = make()  # type: ignore[operator]
    init = V033Initializer()
    outcome = None

    def fill() -> None:
        nonlocal outcome
        outcome = init(tensor, name)

    count, nbytes, ops = traced(fill, tensor)
    assert outcome is not None
    assert count == writes
    assert nbytes == outcome.bytes_written == (tensor.nbytes if writes else 0)
    if op is not None:
        assert ops == [op]  # the fp16 scratch's uniform_ lands on the scratch, not here


def test_v029_fp8_path_writes_once_through_two_temporaries() -> None:
    tensor = torch.empty(16, 32, dtype=torch.float8_e4m3fn)
    tracer = WriteTracer()
    with tracer, torch.no_grad():
        outcome = V029Initializer()(tensor, "weight")
    assert tracer.writes_to(tensor).writes == 1 and tracer.writes_to(tensor).ops == ["copy_"]
    assert tracer.writes_to(tensor).bytes_written == outcome.bytes_written == 16 * 32
    others = [s for k, s in tracer.storages.items() if k != storage_key(tensor)]
    assert sum(s.writes for s in others) == 1  # uniform_ into the widened fp16 copy


def test_out_variants_views_and_foreach_land_on_the_base_storage() -> None:
    base = torch.empty(8, 4)
    other = torch.empty(3)
    tracer = WriteTracer()
    with tracer, torch.no_grad():
        torch.add(torch.ones(8, 4), 1.0, out=base)  # out=
        base.t()[0].zero_()  # a view of a view: 8 elements
        base.view(torch.uint8)[:2].fill_(7)  # dtype view, 2 rows of 16 bytes
        torch._foreach_zero_([base[0], other])  # a list argument
        base.add(1.0)  # not in place: no write
    seen = tracer.writes_to(base)
    assert seen.writes == 4
    assert seen.bytes_written == 8 * 4 * 4 + 8 * 4 + 2 * 16 + 4 * 4
    assert seen.ops == ["add", "zero_", "fill_", "_foreach_zero_"]
    assert tracer.writes_to(other).writes == 1


def test_tracing_leaves_values_bitwise_identical() -> None:
    spec = TreeSpec(depth=2, hidden=32, engram_rows=32)
    plain, observed = build_tree(spec), build_tree(spec)
    run_strategy(plain, get_strategy("unique"))
    trace_writes(observed, lambda m: run_strategy(m, get_strategy("unique")))
    for (name, a), (_, b) in zip(plain.state_dict().items(), observed.state_dict().items(), strict=True):
        if a.dtype != torch.int64:  # untouched indices hold uninitialized memory
            assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), name


SPECS = [
    TreeSpec(depth=3, width=2, hidden=32, meta=True, engram_rows=64),
    TreeSpec(depth=4, hidden=64, dtype="bfloat16"),
]


@pytest.mark.parametrize("strategy", ["legacy", "per-layer", "unique"])
@pytest.mark.parametrize("spec", SPECS, ids=["fp32-width2-meta-engram", "bf16-depth4"])
def test_tracer_counts_equal_recorder_counts(strategy: str, spec: TreeSpec) -> None:
    model = build_tree(spec)
    recorder = VisitRecorder(model)
    trace = trace_writes(model, lambda m: run_strategy(m, get_strategy(strategy), recorder=recorder))
    assert set(trace.records) == set(recorder.records)
    written = 0
    for key, recorded in recorder.records.items():
        seen = trace.records[key]
        assert seen.bytes_written == recorded.bytes_written, recorded.name
        # every visit that writes is one traced write; visits that write nothing are invisible to tracing
        assert seen.visits == (recorded.visits if recorded.bytes_written else 0), recorded.name
        written += seen.visits
    assert written > 0 and trace.replaced == []


@pytest.mark.parametrize("preset", ["torch-transformer", "deepseek-v4-like"])
def test_tracer_matches_recorder_on_presets(preset: str) -> None:
    # 2 experts, not the preset's 16: each expert is the same fp8 weight and scale (the same paths), and legacy
    # revisits every one of them per level under the tracer (10 s for 16 on a shared machine, 1.9 s for 2).
    source = preset_source(preset, {"engram_rows": 32, "experts": 2} if preset == "deepseek-v4-like" else {})
    for name in STRATEGIES:
        model = source.build(torch.device("cpu"))
        recorder = VisitRecorder(model)
        trace = trace_writes(model, lambda m, n=name, r=recorder: run_strategy(m, get_strategy(n), recorder=r))
        assert {k: r.bytes_written for k, r in trace.records.items()} == {
            k: r.bytes_written for k, r in recorder.records.items()
        }, name


def test_replacing_tensors_is_reported_not_counted() -> None:
    model = nn.Linear(4, 4)
    trace = trace_writes(model, loaders.replaces)
    assert sorted(trace.replaced) == ["bias", "weight"]
    assert all(r.visits == 0 for r in trace.records.values())


def test_writes_outside_the_dispatcher_are_found_by_hashing() -> None:
    model = nn.Linear(4, 4)
    trace = trace_writes(model, loaders.through_numpy)
    names = {trace.records[k].name for k in trace.untraced}
    assert names == {"weight", "bias"}
    weight = next(r for r in trace.records.values() if r.name == "weight")
    assert (weight.visits, weight.bytes_written) == (1, 4 * 4 * 4)
    assert trace.ops[trace.untraced[0]] == ["<outside the dispatcher>"]
    blind = trace_writes(nn.Linear(4, 4), loaders.through_numpy, check_untraced=False)
    assert blind.untraced == [] and all(r.visits == 0 for r in blind.records.values())


def test_untouched_storages_are_not_reported_as_untraced_writes() -> None:
    model = build_tree(TreeSpec(depth=2, hidden=32))
    trace = trace_writes(model, lambda m: run_strategy(m, get_strategy("per-layer")))
    assert trace.untraced == []  # int64 indices and non-persistent buffers keep their bytes
