"""--model hf:...: real published configs built on meta, exact counts, config overrides and their errors."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from dummyprof.errors import UsageError
from dummyprof.loaders.counting import count_on_meta
from dummyprof.loaders.initializers import FastInitializer, V029Initializer, V033Initializer
from dummyprof.loaders.strategies import get_strategy, run_strategy
from dummyprof.measure.recorder import VisitRecorder, storage_key
from dummyprof.models.huggingface import hf_source
from dummyprof.scenarios.model_choice import choose_source
from tests.conftest import CliResult

pytest.importorskip("transformers")

Cli = Callable[..., CliResult]
DATA = Path("tests/data")
LLAMA = f"hf:{DATA}/Llama-3.1-8B.json"
META = torch.device("meta")
# A few MiB of Llama: every field a real config has, shrunk by overrides.
TINY = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 256,
}


def independent_counts(model: nn.Module) -> dict[int, tuple[int, int, int]]:
    """Per tensor object: (legacy visits, per-layer visits, bytes), from names alone.

    legacy: every module's recursive state_dict() holds the tensor once per name under it, so a
    tensor k modules deep is visited k + 1 times per name; per-layer: each owner once.
    """
    counts: dict[int, tuple[int, int, int]] = {}
    for path, module in model.named_modules():
        non_persistent = getattr(module, "_non_persistent_buffers_set", set())
        owned = list(module._parameters.items()) + [
            (n, b) for n, b in module._buffers.items() if n not in non_persistent
        ]
        depth = len(path.split(".")) if path else 0
        for _name, tensor in owned:
            if tensor is None:
                continue
            legacy, per_layer, nbytes = counts.get(id(tensor), (0, 0, tensor.numel() * tensor.element_size()))
            counts[id(tensor)] = (legacy + depth + 1, per_layer + 1, nbytes)
    return counts


@pytest.mark.parametrize(
    ("config", "params"),
    [("Llama-3.1-8B", 8_030_261_248), ("Qwen3-30B-A3B", 30_532_122_624), ("DeepSeek-V3", 671_026_404_352)],
)
def test_published_configs_count_exactly_on_meta(config: str, params: int) -> None:
    source = hf_source(f"hf:{DATA}/{config}.json")
    model = source.build(META)
    assert sum(p.numel() for p in model.parameters()) == params  # the published size, so the config is right
    expected = independent_counts(model)
    by_key = {
        id(t): t for m in model.modules() for t in (*m._parameters.values(), *m._buffers.values()) if t is not None
    }
    for strategy, column in (("legacy", 0), ("per-layer", 1)):
        counted = count_on_meta(model, get_strategy(strategy))
        visits = {key: record.visits for key, record in counted.recorder.records.items() if record.visits}
        want = {storage_key(by_key[obj]): counts[column] for obj, counts in expected.items()}
        assert visits == want
        assert counted.recorder.visits == sum(want.values())
        float_bytes = sum(
            counts[column] * counts[2] for obj, counts in expected.items() if by_key[obj].is_floating_point()
        )
        assert sum(r.bytes_written for r in counted.recorder.records.values()) == float_bytes
    assert all(t.device.type == "meta" for t in by_key.values())  # nothing was allocated


def test_meta_counts_equal_a_real_fill() -> None:
    """The counting pass on meta gives exactly what the recorder sees when the same model is filled for real."""
    source = hf_source(LLAMA, TINY)
    meta = source.build(META)
    for strategy, init in (
        ("legacy", V029Initializer()),
        ("per-layer", V033Initializer()),
        ("unique", V033Initializer()),
        ("unique", FastInitializer()),
    ):
        counted = count_on_meta(meta, get_strategy(strategy), init.name)
        real = source.build(torch.device("cpu"))
        recorder = VisitRecorder(real)
        run_strategy(real, get_strategy(strategy), initializer=init, recorder=recorder)
        on_meta = {r.name: (r.visits, r.bytes_written) for r in counted.recorder.records.values()}
        filled = {r.name: (r.visits, r.bytes_written) for r in recorder.records.values()}
        assert on_meta == filled
        assert counted.recorder.peak_scratch_bytes == recorder.peak_scratch_bytes


def test_overrides_reach_the_model_and_the_results() -> None:
    source = hf_source(LLAMA, {"num_hidden_layers": 2})
    model = source.build(META)
    assert len(model.model.layers) == 2
    assert source.options["num_hidden_layers"] == 2
    assert source.options["overrides"] == {"num_hidden_layers": 2}
    assert "num_hidden_layers=2" in source.description


def test_the_dtype_is_passed_as_this_transformers_expects_it(tmp_path: Path) -> None:
    """No "`torch_dtype` is deprecated" from transformers >= 4.56, for a config without a dtype or an override of it
    (warned once per process, so a fresh one)."""
    config = {k: v for k, v in json.loads((DATA / "Llama-3.1-8B.json").read_text()).items() if k != "torch_dtype"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    args = ["inspect", "--model", f"hf:{path}", "--model-arg", "num_hidden_layers=1", "-q"]
    runs = [[*args], [*args, "--model-arg", "torch_dtype=float16"], [*args, "--model-arg", "dtype=bfloat16"]]
    code = "import sys; from dummyprof.cli import main; [main(a) for a in __import__('json').loads(sys.argv[1])]"
    done = subprocess.run([sys.executable, "-c", code, json.dumps(runs)], capture_output=True, text=True, check=True)
    assert done.stderr == ""
    sizes = [line.split(";")[0].split(", ")[1] for line in done.stdout.splitlines()]
    assert sizes == ["2.36 GiB", "2.36 GiB", "2.36 GiB"]  # bfloat16 when the config names none (vLLM auto)


# TINY's parameters, counted by hand: 2 x (q 4096 + k 2048 + v 2048 + o 4096 + mlp 3 x 8192 + norms 128), embedding
# and head 256 x 64 each, final norm 64.
TINY_PARAMETERS = 2 * (4096 + 2048 + 2048 + 4096 + 3 * 8192 + 128) + 2 * 256 * 64 + 64


@pytest.mark.parametrize(
    ("dtype", "built"), [("auto", torch.bfloat16), ("float32", torch.float32), ("float16", torch.float16)]
)
def test_an_explicit_dtype_is_built_as_given(dtype: str, built: torch.dtype) -> None:
    """vLLM's --dtype: auto is the config's bfloat16; a name given is used, float32 included (no downcast)."""
    source = choose_source(model=LLAMA, preset=None, model_args=TINY, dtype=dtype)
    params = list(source.build(META).parameters())
    assert {p.dtype for p in params} == {built} and source.dtype == built
    assert source.recorded_options()["dtype"] == str(built).removeprefix("torch.")  # what the Results show
    assert sum(p.numel() * p.element_size() for p in params) == TINY_PARAMETERS * built.itemsize


def test_an_explicit_dtype_reaches_the_cli_and_the_engines_refusal_too(tmp_path: Path, cli: Cli) -> None:
    args = ["inspect", "--model", LLAMA, *(a for k, v in TINY.items() for a in ("--model-arg", f"{k}={v}")), "-q"]
    sizes = [cli(*args, *more).stdout.split(";")[0].split(", ")[1] for more in ([], ["--dtype", "float32"])]
    assert sizes == ["208.69 KiB", "417.31 KiB"]  # 213,696 and 427,328 bytes: 2 x the parameters, + rotary's 64
    gemma = tmp_path / "config.json"
    gemma.write_text(json.dumps({"model_type": "gemma2", **TINY}))
    refused = cli("inspect", "--model", f"hf:{gemma}", "--dtype", "float16")
    assert refused.exit_code == 2
    assert refused.stderr == (
        "dummyprof: error: --dtype: vLLM refuses float16 for model type 'gemma2': Numerical instability. "
        "Please use bfloat16 or float32 instead.\n"
    )
    assert cli("inspect", "--model", LLAMA, "--dtype", "int4").stderr.startswith(
        "dummyprof: error: --dtype: unknown dtype 'int4'; choose one of: auto, float32, bfloat16, float16"
    )


def test_folder_and_file_give_the_same_model(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((DATA / "Llama-3.1-8B.json").read_text())
    a = hf_source(f"hf:{tmp_path}", TINY).estimated_bytes
    b = hf_source(LLAMA, TINY).estimated_bytes
    assert a == b and a is not None and a > 0


def test_materialized_copies_keep_a_tied_embedding() -> None:
    source = hf_source(LLAMA, {**TINY, "tie_word_embeddings": True})
    model = source.build(torch.device("cpu"))
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert model.lm_head.weight.device.type == "cpu"


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.json"
    path.write_text(text)
    return f"hf:{path}"


@pytest.mark.parametrize(
    ("spec", "args", "flag", "message"),
    [
        ("hf:tests/data/nowhere.json", {}, "--model", "no such config 'tests/data/nowhere.json'"),
        ("hf:", {}, "--model", "hf: needs a config"),
        (
            LLAMA,
            {"num_hiden_layers": 2},
            "--model-arg",
            "has no field 'num_hiden_layers'; did you mean num_hidden_layers",
        ),
        (LLAMA, {"num_hidden_layers": 2.5}, "--model-arg", "is a float but the config's num_hidden_layers is an int"),
        (LLAMA, {"tie_word_embeddings": 1}, "--model-arg", "is an int but the config's tie_word_embeddings is a bool"),
        (LLAMA, {"hidden_act": 3}, "--model-arg", "is an int but the config's hidden_act is a str"),
    ],
)
def test_bad_input(spec: str, args: dict[str, object], flag: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        hf_source(spec, args)
    assert info.value.flag == flag


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not JSON"):
        hf_source(_write(tmp_path, "{not json"))
    with pytest.raises(UsageError, match="has no model_type"):
        hf_source(_write(tmp_path, json.dumps({"hidden_size": 8})))
    with pytest.raises(UsageError, match=r"unknown model_type 'lama' .*close: llama"):
        hf_source(_write(tmp_path, json.dumps({"model_type": "lama"})))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"no config\.json in folder"):
        hf_source(f"hf:{tmp_path / 'empty'}")


def test_hub_id_without_network_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_dns(*args: object, **kwargs: object) -> None:
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    with pytest.raises(UsageError, match=r"cannot fetch config.json for hub id 'meta-llama/Llama-3.1-8B' \(cannot"):
        hf_source("hf:meta-llama/Llama-3.1-8B")


def test_hub_id_when_the_download_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS answers but the fetch fails (a firewall, a proxy): the hub's error, on one line."""
    import transformers.utils.hub as hub

    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [])

    def refused(*args: object, **kwargs: object) -> None:
        raise ConnectionError("connection refused\nsecond line of detail")

    monkeypatch.setattr(hub, "hf_hub_download", refused)
    with pytest.raises(UsageError, match=r"cannot fetch config\.json for hub id 'org/name'") as info:
        hf_source("hf:org/name")
    assert "\n" not in str(info.value)
    assert "pass hf:./config.json" in str(info.value)


def test_without_transformers_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers now raises ImportError
    with pytest.raises(UsageError) as info:
        hf_source(LLAMA)
    assert str(info.value) == '--model: hf: models need transformers: in your dummyprof clone, pip install -e ".[hf]"'


def test_trust_remote_code_needs_an_hf_model() -> None:
    with pytest.raises(UsageError, match="only applies to --model hf:") as info:
        choose_source(model=None, preset="dense-decoder", model_args={}, trust_remote_code=True)
    assert info.value.flag == "--trust-remote-code"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "hf:tests/data/missing.json"], "dummyprof: error: --model: no such config"),
        (["--model", LLAMA, "--model-arg", "vocab=3"], "dummyprof: error: --model-arg: the llama config has no field"),
        (["--preset", "dense-decoder", "--trust-remote-code"], "dummyprof: error: --trust-remote-code:"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(cli: Cli, args: list[str], message: str) -> None:
    result = cli("inspect", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1


def test_cli_inspect_counts_the_full_8b_on_meta(cli: Cli) -> None:
    result = cli("inspect", "--model", LLAMA, "--max-depth", "0")
    assert result.exit_code == 0, result.stderr
    # 32 layers x 9 tensors at depth 4-5 + embedding (depth 2), final norm (2), lm_head (1)
    assert "legacy 1,672" in result.stdout and "per-layer 291" in result.stdout
