"""The Python API: lazy entry points, rendering, the pytest helper, and --loader in compare."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest
import torch

import dummyprof
from dummyprof.testing import assert_each_tensor_filled_once, trace_loader
from tests.conftest import CliResult
from tests.fixtures import loaders, models

Cli = Callable[..., CliResult]
M = "tests/fixtures/models.py"
L = "tests/fixtures/loaders.py"
ONE_CPU_ROUND = ("--repeat", "1", "--warmup", "0", "--device", "cpu")


def test_import_is_light_and_entry_points_resolve() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, dummyprof; assert 'torch' not in sys.modules; print(dummyprof.__all__)"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("load_model", "build_preset", "render", "trace_writes", "audit", "AuditOptions", "inspect"):
        assert name in proc.stdout
        assert callable(getattr(dummyprof, name))


def test_load_build_audit_render() -> None:
    model = dummyprof.load_model(f"{M}:tied", hidden=64)
    assert model.embed.weight.shape == (256, 64) and model.lm_head.weight is model.embed.weight
    preset = dummyprof.build_preset("moe-decoder", experts=2, layers=1)
    assert len(preset.model.layers[0].mlp.experts) == 2
    results = dummyprof.audit(dummyprof.AuditOptions(model=f"{M}:tied"))
    text = dummyprof.render(results)
    assert "per-layer writes embed.weight 2 times" in text and "audit found 1 problem(s)" in text
    assert dummyprof.render(results, markdown=True).startswith("## dummyprof audit")


def test_helper_passes_a_correct_loader() -> None:
    trace = assert_each_tensor_filled_once(models.tied, loaders.fill_once, value=0.125)
    model, _ = trace_loader(models.tied, loaders.fill_once, value=0.125)
    assert torch.all(model.embed.weight == 0.125)
    assert sum(r.visits for r in trace.records.values()) == 6  # 7 storages, the int64 index left alone


def test_helper_accepts_a_strategy_name_and_reports_ties() -> None:
    assert_each_tensor_filled_once(models.build, "unique")
    with pytest.raises(
        AssertionError,
        match=r"1 tensor\(s\) not filled exactly once:\n  embed.weight = lm_head.weight: "
        r"written 2 times",
    ):
        assert_each_tensor_filled_once(models.tied, "per-layer")


def test_helper_failures_name_each_tensor() -> None:
    with pytest.raises(AssertionError) as missed:
        assert_each_tensor_filled_once(models.build, loaders.fill_params_only)
    assert "block.running_mean: never written (float32)" in str(missed.value)
    assert "position_ids" not in str(missed.value)  # int64 indices may stay unwritten
    assert_each_tensor_filled_once(models.build, loaders.fill_params_only, allow_unwritten=["*.running_mean"])
    with pytest.raises(AssertionError) as clobbered:
        assert_each_tensor_filled_once(models.rope, loaders.fill_everything)
    message = str(clobbered.value)
    assert "inv_freq: non-persistent buffer written 1 time(s)" in message
    assert "proj.weight: written 2 times" in message
    with pytest.raises(AssertionError, match="weight: replaced instead of written in place"):
        assert_each_tensor_filled_once(models.build, loaders.replaces)


def test_compare_with_a_loader(cli: Cli) -> None:
    tied_with_loader = ("--model", f"{M}:tied", "-s", "per-layer", "--loader", f"{L}:fill_everything")
    outcome = cli("compare", *tied_with_loader, *ONE_CPU_ROUND, "--json", "-")
    assert outcome.exit_code == 0, outcome.stderr
    import json

    data = json.loads(outcome.stdout)["compare"]
    loader = next(s for s in data["strategies"] if s["name"] == "fill_everything")
    assert loader["initializer"] == "loader's own" and len(loader["time"]["samples"]) == 1
    # embed.weight (tied): root state_dict lists it twice, embed and lm_head once each = 4; block tensors 2 each
    assert data["tensors"]["embed.weight"]["visits"] == {"per-layer": 2, "fill_everything": 4}
    assert data["tensors"]["block.proj.weight"]["visits"] == {"per-layer": 1, "fill_everything": 3}
    # five float tensors in the block, each 3x: root and block state_dict(), then its owner (or zero_ of buffers)
    assert loader["visits"] == 4 + 5 * 3
    assert "its times come from untraced runs" in outcome.stderr
    twice = cli("compare", "--loader", f"{L}:fill_once", "--loader", f"{L}:fill_once", "--repeat", "1")
    assert twice.exit_code == 2 and "--loader: 'fill_once' is listed twice" in twice.stderr


def test_compare_preset_torch_transformer(cli: Cli) -> None:
    one_layer_each = ("--model-arg", "encoder_layers=1", "--model-arg", "decoder_layers=1")
    outcome = cli("compare", "--preset", "torch-transformer", *one_layer_each, *ONE_CPU_ROUND)
    assert outcome.exit_code == 0, outcome.stderr
    assert "preset torch-transformer" in outcome.stdout
    assert "Most revisited tensors" in outcome.stdout
