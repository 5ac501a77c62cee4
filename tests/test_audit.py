"""dummyprof audit: each finding on a purpose-built model, and the exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from dummyprof.anatomy import buffer_persistence
from dummyprof.loaders.initializers import INITIALIZERS, FillOutcome
from dummyprof.loaders.strategies import (
    STRATEGIES,
    Strategy,
    own_tensors,
    per_layer_traversal,
    register_strategy,
)
from dummyprof.reports.kinds.audit import finding_subject, finding_text
from dummyprof.results.audit import AuditResult
from dummyprof.scenarios.audit.run import AuditOptions, run
from tests.conftest import CliResult
from tests.fixtures import models

Cli = Callable[..., CliResult]
M = "tests/fixtures/models.py"
L = "tests/fixtures/loaders.py"


def audit(**kwargs: object) -> AuditResult:
    results = run(AuditOptions(**kwargs))  # type: ignore[arg-type]
    assert results.audit is not None
    return results.audit


def kinds(result: AuditResult) -> list[tuple[str, str]]:
    return sorted((f.kind, finding_subject(f)) for f in result.findings)  # as the report names them


def test_clean_model_passes(cli: Cli) -> None:
    result = audit(model=f"{M}:build")
    assert result.clean
    assert kinds(result) == [("untouched", "block.position_ids, block.inner.position_ids")]
    assert [f.tensors_written for f in result.fillers] == [11, 11]
    assert result.value_groups == [["per-layer", "unique"]]
    outcome = cli("audit", "--model", f"{M}:build")
    assert outcome.exit_code == 0, outcome.stderr
    assert "audit clean: 2 filler(s), 13 tensors, no findings" in outcome.stdout


def test_tied_weight_repeated_under_per_layer(cli: Cli) -> None:
    result = audit(model=f"{M}:tied")
    failing = [(f.kind, f.tensor, f.fillers) for f in result.failing]
    assert failing == [("repeated", "embed.weight", ["per-layer"])]
    shared = [finding_text(f) for f in result.findings if f.kind == "shared-storage"]
    assert shared == ["embed.weight, lm_head.weight: tied (one tensor, several owners)"]
    assert result.tensors["embed.weight"].writes == {"per-layer": 2, "unique": 1}
    outcome = cli("audit", "--model", f"{M}:tied")
    assert outcome.exit_code == 1
    assert "audit found 1 problem(s): 1 repeated" in outcome.stdout
    ignored = cli("audit", "--model", f"{M}:tied", "--ignore", "repeated")
    assert ignored.exit_code == 0 and "(1 ignored)" in ignored.stdout


def test_aliased_views_are_noted() -> None:
    result = audit(model=f"{M}:aliased")
    # per-layer fills the persistent alias and the weight: the same bytes twice
    assert [(f.kind, f.tensor, f.fillers) for f in result.failing] == [("repeated", "proj.weight", ["per-layer"])]
    notes = [finding_text(f) for f in result.findings if f.kind == "shared-storage"]
    assert notes == ["weight_t, proj.weight: aliased (views of one storage)"]
    assert result.tensors["proj.weight"].names == ["proj.weight", "weight_t"]


def test_overwritten_non_persistent_buffer_and_repeats_by_a_loader() -> None:
    result = audit(model=f"{M}:rope", strategies=["per-layer"], loaders=[f"{L}:fill_everything", f"{L}:fill_once"])
    failing = sorted((f.kind, f.tensor, tuple(f.fillers)) for f in result.failing)
    assert failing == [
        ("non-persistent-written", "inv_freq", ("fill_everything",)),
        ("repeated", "proj.bias", ("fill_everything",)),
        ("repeated", "proj.weight", ("fill_everything",)),
    ]
    assert result.tensors["proj.weight"].ops["fill_everything"] == ["uniform_"]
    assert result.tensors["proj.weight"].ops["fill_once"] == ["fill_"]
    loader = next(f for f in result.fillers if f.name == "fill_once")
    assert (loader.kind, loader.initializer, loader.writes) == ("loader", None, 2)


def test_a_non_persistent_buffer_written_back_to_its_construction_values_is_a_restore(cli: Cli) -> None:
    result = audit(
        model=f"{M}:rope", strategies=[], loaders=[f"{L}:fill_once_and_recompute_rope", f"{L}:fill_everything"]
    )
    buffer_writes = sorted((f.kind, f.tensor, tuple(f.fillers)) for f in result.findings if f.tensor == "inv_freq")
    assert buffer_writes == [
        ("non-persistent-restored", "inv_freq", ("fill_once_and_recompute_rope",)),
        ("non-persistent-written", "inv_freq", ("fill_everything",)),  # zeroed: a clobber
    ]
    assert [f.informational for f in sorted(result.findings, key=lambda f: f.kind) if f.tensor == "inv_freq"] == [
        True,
        False,
    ]
    alone = cli("audit", "--model", f"{M}:rope", "--loader", f"{L}:fill_once_and_recompute_rope")
    assert alone.exit_code == 0, alone.stdout
    assert alone.stdout.strip().splitlines()[-1] == (
        "audit clean: 1 filler(s), 3 tensors, no findings; 1 non-persistent buffer write(s) restore construction values"
    )
    assert (
        "writes non-persistent buffer inv_freq back to the values its module computes at construction" in alone.stdout
    )


def test_missed_tensor() -> None:
    result = audit(model=f"{M}:build", strategies=["unique"], loaders=[f"{L}:fill_params_only"])
    missed = sorted((f.tensor, tuple(f.fillers)) for f in result.failing)
    assert missed == [
        ("block.inner.running_mean", ("fill_params_only",)),
        ("block.running_mean", ("fill_params_only",)),
    ]
    assert {f.kind for f in result.failing} == {"missed"}


def test_unregistered_tensors_are_found() -> None:
    result = audit(model=f"{M}:unregistered")
    stray = sorted((u.name, u.dtype, u.nbytes) for u in result.unregistered)
    assert stray == [
        ("cache", "float32", 32 * 32 * 4),
        ("lookup['scale']", "float16", 32 * 2),
        ("tables[0]", "float32", 32 * 4),
        ("tables[1]", "float32", 64 * 4),
    ]  # self.shared holds a registered parameter: reachable, not reported
    assert {f.kind for f in result.failing} == {"unregistered"}


def test_state_dict_hook_decides_persistence() -> None:
    model = models.hooked()
    assert buffer_persistence(model).non_persistent == {"scratch"}
    result = audit(model=f"{M}:hooked")
    assert ("persistence", "scratch") in kinds(result)
    # per-layer trusts the private set and fills the buffer state_dict() leaves out
    assert [(f.kind, f.tensor, f.fillers) for f in result.failing] == [
        ("non-persistent-written", "scratch", ["per-layer"]),
        ("non-persistent-written", "scratch", ["unique"]),
    ]


def test_fallback_without_the_private_set() -> None:
    model = models.no_private_set()
    assert not hasattr(model.layer, "_non_persistent_buffers_set")
    persistence = buffer_persistence(model)
    assert persistence.non_persistent == {"layer.cache"}
    assert persistence.notes == [
        "layer (NoPrivateSet) has no _non_persistent_buffers_set; persistence of its buffers taken from state_dict()"
    ]
    result = audit(model=f"{M}:no_private_set", strategies=["legacy", "per-layer"])
    written = sorted((f.kind, f.tensor, tuple(f.fillers)) for f in result.failing)
    assert written == [
        ("non-persistent-written", "layer.cache", ("per-layer",)),  # legacy goes by state_dict() and skips it
        ("repeated", "layer.weight", ("legacy",)),
    ]


def test_state_dict_failure_falls_back_on_the_private_set() -> None:
    class Broken(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("rope", torch.zeros(4), persistent=False)
            self.register_buffer("stat", torch.zeros(4))

        def state_dict(self, *args: object, **kwargs: object) -> dict:  # type: ignore[override]
            raise RuntimeError("no state dict here")

    persistence = buffer_persistence(Broken())
    assert persistence.non_persistent == {"rope"}
    assert persistence.notes[0].startswith("state_dict() raised RuntimeError: no state dict here")


def test_replacing_loader() -> None:
    result = audit(model=f"{M}:build", strategies=[], loaders=[f"{L}:replaces"])
    replaced = sorted(f.tensor for f in result.failing if f.kind == "replaced")
    assert replaced == sorted(
        [
            "embed.weight",
            "block.proj.weight",
            "block.proj.bias",
            "block.norm.weight",
            "block.norm.bias",
            "block.inner.proj.weight",
            "block.inner.proj.bias",
            "block.inner.norm.weight",
            "block.inner.norm.bias",
        ]
    )


@pytest.fixture
def transposed_strategy() -> Iterator[str]:
    def as_bytes(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
        for layer in model.modules():
            for name, tensor in own_tensors(layer):
                yield name, (tensor.view(torch.uint8) if tensor.dim() == 2 else tensor)

    # Same writes, same bytes written, but the uint8 rule (random bytes) instead of uniform floats.
    register_strategy(Strategy("as-bytes", "fills 2-D weights through a uint8 view", as_bytes))
    yield "as-bytes"
    STRATEGIES.pop("as-bytes")


def test_values_differ_with_the_same_initializer(transposed_strategy: str) -> None:
    result = audit(model=f"{M}:build", strategies=["unique", transposed_strategy])
    differ = sorted(f.tensor for f in result.failing if f.kind == "values-differ")
    assert differ == ["block.inner.proj.weight", "block.proj.weight", "embed.weight"]
    assert {f.kind for f in result.failing} == {"values-differ"}


def test_legacy_values_equal_per_layer_with_one_initializer() -> None:
    mixed = audit(model=f"{M}:build", strategies=["legacy", "per-layer"])
    assert mixed.value_groups == []  # v0.29 and v0.33: not compared
    same = audit(model=f"{M}:build", strategies=["legacy", "per-layer"], initializer="v0.33", ignore=["repeated"])
    assert same.value_groups == [["legacy", "per-layer"]]
    assert same.clean and not [f for f in same.findings if f.kind == "values-differ"]
    assert sum(1 for f in same.findings if f.kind == "repeated") == 11  # every written tensor is below the root


@pytest.fixture
def lying_strategy(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    def liar(tensor: torch.Tensor, local_name: str) -> FillOutcome:
        return FillOutcome(tensor.nbytes, 0)  # claims a write it never makes

    monkeypatch.setitem(INITIALIZERS, "liar", liar)
    register_strategy(Strategy("liar", "records writes that do not happen", per_layer_traversal, initializer="liar"))
    yield "liar"
    STRATEGIES.pop("liar")


def test_recorder_mismatch_is_a_finding(lying_strategy: str) -> None:
    result = audit(model=f"{M}:build", strategies=[lying_strategy])
    mismatched = [f for f in result.failing if f.kind == "recorder-mismatch"]
    assert len(mismatched) == 13  # every storage, the int64 indices included
    assert "recorder counts 16,384 bytes written to embed.weight, tracing saw 0" in finding_text(mismatched[0])


def test_cli_errors_and_json(cli: Cli, tmp_path: Path) -> None:
    bad = cli("audit", "--ignore", "everything")
    assert bad.exit_code == 2 and "--ignore: unknown finding kind 'everything'; choose from: missed" in bad.stderr
    twice = cli("audit", "-s", "unique", "-s", "unique")
    assert twice.exit_code == 2 and "--strategy: 'unique' is listed twice" in twice.stderr
    raising = cli("audit", "--loader", f"{L}:raises")
    assert raising.exit_code == 2
    assert raising.stderr == f"dummyprof: error: --loader: {L}:raises raised RuntimeError: cannot fill this model\n"
    path = tmp_path / "audit.json"
    outcome = cli("audit", "--model", f"{M}:tied", "--json", str(path), "-q")
    assert outcome.exit_code == 1
    data = json.loads(path.read_text())
    assert data["command"] == "audit"
    assert data["audit"]["findings"][0]["kind"] in {"repeated", "shared-storage", "untouched"}
    rendered = cli("report", str(path), "--format", "markdown")
    assert rendered.exit_code == 0 and "| **repeated** | per-layer writes embed.weight 2 times |" in rendered.stdout


def test_meta_tensors_are_never_counted_as_written() -> None:
    from dummyprof.models.synthetic import TreeSpec, synthetic_source

    source = synthetic_source(TreeSpec(depth=2, hidden=32, meta=True))
    options = AuditOptions(strategies=["unique"], loaders=[f"{L}:fill_all_floats"])
    results = run(options, source=source)
    assert results.audit is not None
    row = results.audit.tensors["meta_placeholder"]
    assert row.device == "meta" and row.writes == {}  # the loader's uniform_ on it wrote no byte
    assert not [f for f in results.audit.findings if "meta_placeholder" in f.tensor and f.kind != "untouched"]


def test_loader_values_compared_when_it_declares_an_initializer(cli: Cli) -> None:
    loaders_ = [f"{L}:fill_like_vllm_033", f"{L}:fill_once"]
    undeclared = audit(model=f"{M}:build", strategies=["per-layer"], loaders=loaders_)
    assert undeclared.value_groups == [] and undeclared.clean
    declared = audit(model=f"{M}:build", strategies=["per-layer"], loaders=loaders_, loader_initializer="v0.33")
    assert declared.value_groups == [["per-layer", "fill_like_vllm_033", "fill_once"]]
    differ = {f.tensor: finding_text(f) for f in declared.failing if f.kind == "values-differ"}
    # fill_once writes 0.5 everywhere: every float differs; the LayerNorm ones only by their values
    assert len(differ) == 11
    assert "(per-layer = fill_like_vllm_033 vs fill_once)" in differ["embed.weight"]
    bad = cli("audit", "--loader", f"{L}:fill_once", "--loader-initializer", "v9")
    assert bad.exit_code == 2 and "--loader-initializer: unknown initializer 'v9'; choose one of:" in bad.stderr


def test_untraced_writes_count_and_are_noted() -> None:
    result = audit(model=f"{M}:build", strategies=["unique"], loaders=[f"{L}:through_numpy"])
    notes = sorted(f.tensor for f in result.findings if f.kind == "untraced-write")
    assert len(notes) == 9 and "embed.weight" in notes  # every parameter, through numpy
    assert result.tensors["embed.weight"].writes["through_numpy"] == 1
    # numpy writes count, so the only failures are the persistent buffers it does not touch
    failing = sorted((f.kind, f.tensor) for f in result.failing)
    assert failing == [("missed", "block.inner.running_mean"), ("missed", "block.running_mean")]


@pytest.mark.parametrize("loader", ["skip_biases", "fill_nothing"])
def test_a_loader_alone_is_checked_against_vllms_fill(cli: Cli, loader: str) -> None:
    """With only --loader there is no other filler: vLLM's per-layer fill is the reference."""
    from dummyprof.testing import assert_each_tensor_filled_once
    from tests.fixtures import loaders as fixture_loaders

    with pytest.raises(AssertionError):
        assert_each_tensor_filled_once(models.build, getattr(fixture_loaders, loader))
    result = audit(model=f"{M}:build", strategies=[], loaders=[f"{L}:{loader}"])
    missed = sorted(f.tensor for f in result.failing if f.kind == "missed")
    biases = ["block.inner.norm.bias", "block.inner.proj.bias", "block.norm.bias", "block.proj.bias"]
    if loader == "skip_biases":
        assert missed == biases
    else:
        assert len(missed) == 11 and set(biases) < set(missed)  # every float tensor; position_ids are int64
    assert all(f.fillers == [loader] for f in result.failing)
    assert not any(f.kind == "untouched" and "bias" in f.tensor for f in result.findings)
    outcome = cli("audit", "--model", f"{M}:build", "--loader", f"{L}:{loader}")
    assert outcome.exit_code == 1, outcome.stdout
    assert "written by vLLM's per-layer fill but not by" in outcome.stdout.replace("\n", " ")
    ignored = cli("audit", "--model", f"{M}:build", "--loader", f"{L}:{loader}", "--ignore", "missed")
    assert ignored.exit_code == 0, ignored.stdout
