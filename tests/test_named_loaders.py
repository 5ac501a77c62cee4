"""--loader hf-init (transformers' own init, traced), --loader vllm / sglang (when importable)."""

from __future__ import annotations

import importlib.machinery
import json
import sys
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.conftest import CliResult

pytest.importorskip("transformers")

Cli = Callable[..., CliResult]
REINIT = "tests/fixtures/hf_models.py:reinit"
LLAMA = "hf:tests/data/Llama-3.1-8B.json"
TINY_LLAMA = (
    "--model-arg", "num_hidden_layers=2", "--model-arg", "hidden_size=64", "--model-arg", "intermediate_size=128",
    "--model-arg", "num_attention_heads=4", "--model-arg", "num_key_value_heads=2", "--model-arg", "head_dim=16",
    "--model-arg", "vocab_size=256",
)  # fmt: skip
FC_WEIGHTS = {f"blocks.{b}.{fc}.weight" for b in (0, 1) for fc in ("fc1", "fc2")}


def _findings(path: Path, kind: str) -> dict[str, list[str]]:
    audit = json.loads(path.read_text())["audit"]
    return {f["tensor"]: f["fillers"] for f in audit["findings"] if f["kind"] == kind}


def test_audit_finds_the_repeated_init_and_the_tied_weight(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    result = cli("audit", "--model", REINIT, "--loader", "hf-init", "--json", str(path))
    assert result.exit_code == 1, result.stderr
    repeated = _findings(path, "repeated")
    # the parent re-drew its children's weights (#21431); the tied embedding is drawn once, as from_config draws it
    assert set(repeated) == FC_WEIGHTS
    assert all(fillers == ["hf-init"] for fillers in repeated.values())
    assert "embed.weight" in _findings(path, "shared-storage")


def test_without_the_bug_nothing_repeats_tied_or_not(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    result = cli(
        "audit", "--model", REINIT, "--model-arg", "reinit_children=False", "--loader", "hf-init", "--json", str(path)
    )
    assert result.exit_code == 0, result.stdout
    assert _findings(path, "repeated") == {}
    assert "embed.weight" in _findings(path, "shared-storage")
    clean = cli(
        "audit",
        "--model",
        REINIT,
        "--model-arg",
        "reinit_children=False",
        "--model-arg",
        "tie=False",
        "--loader",
        "hf-init",
    )
    assert clean.exit_code == 0, clean.stdout


def test_hf_init_on_a_real_architecture_with_a_tied_embedding(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    args = ("--model", LLAMA, *TINY_LLAMA, "--model-arg", "tie_word_embeddings=True")
    result = cli("audit", *args, "-s", "unique", "--loader", "hf-init", "--json", str(path))
    assert result.exit_code == 0, result.stdout + result.stderr
    assert _findings(path, "repeated") == {}
    audit = json.loads(path.read_text())["audit"]
    hf = next(f for f in audit["fillers"] if f["name"] == "hf-init")
    unique = next(f for f in audit["fillers"] if f["name"] == "unique")
    # transformers also recomputes the rotary buffers, which to_empty left uninitialized (vLLM's fill leaves them):
    # bitwise the values the rotary module computes at construction, so a restore, not a problem
    rotary = {"model.rotary_emb.inv_freq", "model.rotary_emb.original_inv_freq"}
    assert _findings(path, "non-persistent-restored") == {name: ["hf-init"] for name in rotary}
    assert _findings(path, "non-persistent-written") == {}
    clean = "audit clean: 2 filler(s), 22 tensors, no findings; 2 non-persistent buffer write(s) restore construction"
    assert f"{clean} values\n" in result.stdout
    assert hf["writes"] == unique["writes"] + len(rotary)  # every tensor unique fills, the tied one once


def test_compare_times_hf_init_next_to_the_strategies(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    result = cli(
        "compare", "--model", REINIT, "-s", "unique", "--loader", "hf-init", "--repeat", "1", "--warmup", "0",
        "--device", "cpu", "--json", str(path),
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    strategies = {s["name"]: s for s in json.loads(path.read_text())["compare"]["strategies"]}
    assert strategies["hf-init"]["visits"] == 15 and strategies["hf-init"]["redundant_visits"] == 4
    assert strategies["unique"]["visits"] == 11 and strategies["unique"]["redundant_visits"] == 0
    assert len(strategies["hf-init"]["time"]["samples"]) == 1


def _writes(model: nn.Module, init: Callable[[], object]) -> Counter[str]:
    """Writes per storage of ``model`` (named by its first name for it) that ``init()`` makes."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[int] = []

    class Writes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            if func._schema.is_mutable and args and isinstance(args[0], torch.Tensor):
                seen.append(args[0].untyped_storage().data_ptr())
            return func(*args, **(kwargs or {}))

    with Writes():
        init()
    names = {t.untyped_storage().data_ptr(): n for n, t in reversed(list(model.state_dict(keep_vars=True).items()))}
    return Counter(names[ptr] for ptr in seen if ptr in names)


def test_hf_init_writes_what_from_config_writes_in_its_order_init_then_tie() -> None:
    """transformers inits lm_head as its own tensor, then ties it: the shared storage is drawn once."""
    from transformers import PreTrainedModel

    from dummyprof.loaders.named import hf_init
    from tests.fixtures import hf_models

    config = hf_models.ReinitConfig()
    config.reinit_children = False
    from_config: list[Counter[str]] = []
    real_post_init = PreTrainedModel.post_init

    def traced_post_init(self: PreTrainedModel) -> None:
        from_config.append(_writes(self, lambda: real_post_init(self)))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PreTrainedModel, "post_init", traced_post_init)
        built = hf_models.ReinitLM(config)  # on cpu: its __init__ ends with post_init, as from_config's does
    assert built.lm_head.weight is built.embed.weight
    assert real_post_init is PreTrainedModel.post_init

    materialized = hf_models.reinit(reinit_children=False).to_empty(device="cpu")
    materialized.lm_head.weight = materialized.embed.weight  # tied before init, as dummyprof materializes it
    assert _writes(materialized, lambda: hf_init(materialized)) == from_config[0]
    assert from_config[0]["embed.weight"] == 1
    assert materialized.lm_head.weight is materialized.embed.weight


def test_hf_init_refuses_a_model_transformers_did_not_build(cli: Cli) -> None:
    result = cli("audit", "--model", "tests/fixtures/hf_models.py:plain", "--loader", "hf-init")
    assert result.exit_code == 2
    assert result.stderr.startswith("dummyprof: error: --loader: hf-init runs transformers' own weight init")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("name", ["vllm", "sglang"])
def test_engine_loaders_say_what_is_missing(cli: Cli, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == name else real(n, *a))
    result = cli("audit", "--model", REINIT, "--loader", name)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dummyprof: error: --loader: {name} is not installed in this Python")
    assert f"pip install {name}" in result.stderr and result.stderr.count("\n") == 1


def _fake_package(monkeypatch: pytest.MonkeyPatch, modules: dict[str, dict[str, object]]) -> None:
    for dotted, attrs in modules.items():
        module = types.ModuleType(dotted)
        module.__spec__ = importlib.machinery.ModuleSpec(dotted, None)
        for key, value in attrs.items():
            setattr(module, key, value)
        monkeypatch.setitem(sys.modules, dotted, module)


def _fill_all(model: nn.Module) -> None:
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(0.5)


def test_vllm_and_sglang_loaders_call_the_engines(cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    class DummyModelLoader:
        def __init__(self, config: object) -> None:
            self.config = config

        def load_weights(self, model: nn.Module, model_config: object = None) -> None:
            _fill_all(model)

    _fake_package(
        monkeypatch,
        {
            "vllm": {},
            "vllm.config": {},
            "vllm.config.load": {"LoadConfig": lambda load_format: load_format},
            "vllm.model_executor": {},
            "vllm.model_executor.model_loader": {},
            "vllm.model_executor.model_loader.dummy_loader": {"DummyModelLoader": DummyModelLoader},
            "sglang": {},
            "sglang.srt": {},
            "sglang.srt.model_loader": {},
            "sglang.srt.model_loader.weight_utils": {"initialize_dummy_weights": _fill_all},
        },
    )
    sys.modules["vllm.model_executor.model_loader"].dummy_loader = sys.modules[  # type: ignore[attr-defined]
        "vllm.model_executor.model_loader.dummy_loader"
    ]
    path = tmp_path / "a.json"
    result = cli("audit", "--model", REINIT, "--loader", "vllm", "--loader", "sglang", "--json", str(path))
    assert result.exit_code == 0, result.stdout + result.stderr
    fillers = {f["name"]: f for f in json.loads(path.read_text())["audit"]["fillers"]}
    assert fillers["vllm"]["writes"] == fillers["sglang"]["writes"] == 11  # each storage once (the tie is one storage)
