"""--model / --preset / --model-arg: loading paths, their errors, meta sizing and materialization."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from dummyprof.anatomy import model_bytes
from dummyprof.errors import DoesNotFitError, UsageError
from dummyprof.models import loading
from dummyprof.models.loading import materialize, model_source
from dummyprof.models.presets import PRESETS, preset_source
from dummyprof.scenarios.model_choice import check_source_fits, choose_source
from dummyprof.usercode import parse_call_args, resolve_callable
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
FIXTURES = "tests/fixtures/models.py"
CPU = torch.device("cpu")
# TiedLM(hidden=32): embedding 128x32 fp32 (tied to lm_head, counted once), Linear 32x32 + bias,
# LayerNorm weight + bias, int64 position_ids[32], fp32 running_mean[32].
TIED_BYTES = 128 * 32 * 4 + 32 * 32 * 4 + 32 * 4 + 2 * 32 * 4 + 32 * 8 + 32 * 4


def test_model_args_are_python_literals_or_strings() -> None:
    assert parse_call_args(["layers=4", "eps=1e-5", "tie=False", "dims=[1, 2]", "dtype=bfloat16", "name='x'"]) == {
        "layers": 4,
        "eps": 1e-5,
        "tie": False,
        "dims": [1, 2],
        "dtype": "bfloat16",
        "name": "x",
    }


@pytest.mark.parametrize(
    ("items", "message"),
    [(["layers"], "expected key=value"), (["4=layers"], "expected key=value"), (["a=1", "a=2"], "'a' is given twice")],
)
def test_bad_model_args(items: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_call_args(items)
    assert info.value.flag == "--model-arg"


def test_resolves_file_and_package_paths() -> None:
    from_file = resolve_callable(f"{FIXTURES}:tied")
    from_package = resolve_callable("tests.fixtures.models:tied")
    assert from_file.__name__ == from_package.__name__ == "tied"
    transformer = resolve_callable("torch.nn:Transformer")
    assert isinstance(transformer(d_model=8, nhead=2, dim_feedforward=8, batch_first=True), nn.Module)
    assert resolve_callable(f"{FIXTURES}:TiedLM.__init__").__name__ == "__init__"  # dotted attributes


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests/fixtures/models.py", "expected package.module:callable or ./file.py:callable"),
        ("./nowhere.py:build", "no such file './nowhere.py'"),
        ("no_such_pkg.models:build", "cannot import module 'no_such_pkg.models': No module named 'no_such_pkg'"),
        (f"{FIXTURES}:missing", "has no attribute 'missing'; it defines: Aliased"),
        (f"{FIXTURES}:NOT_CALLABLE", "is a int, not a callable"),
    ],
)
def test_resolve_errors_name_the_flag(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        resolve_callable(spec)
    assert info.value.flag == "--model"


def test_import_error_inside_the_file_is_reported(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\nraise ImportError('needs flash_attn')\n")
    with pytest.raises(UsageError, match=r"importing .*broken\.py' raised ImportError: needs flash_attn"):
        resolve_callable(f"{broken}:build")


def test_callable_raising_or_returning_a_non_module() -> None:
    with pytest.raises(UsageError, match=r"raises raised ValueError: hidden 7 is not supported"):
        model_source(f"{FIXTURES}:raises", {"hidden": 7})
    with pytest.raises(UsageError, match=r"returned int, not a torch\.nn\.Module"):
        model_source(f"{FIXTURES}:not_a_module")
    with pytest.raises(UsageError, match="unexpected keyword argument 'nope'"):
        model_source(f"{FIXTURES}:build", {"nope": 1})


def test_size_is_known_from_meta_before_building(monkeypatch: pytest.MonkeyPatch) -> None:
    devices: list[str] = []
    real = loading.call_model_builder

    def spy(*args: object, **kwargs: object) -> nn.Module:
        model = real(*args, **kwargs)  # type: ignore[arg-type]
        devices.append(next(model.parameters()).device.type)
        return model

    monkeypatch.setattr(loading, "call_model_builder", spy)
    source = model_source(f"{FIXTURES}:tied")
    assert source.estimated_bytes == TIED_BYTES
    assert devices == ["meta"]  # sized on meta, never built for real
    model = source.build(CPU)
    assert devices == ["meta", "cpu"]
    assert model_bytes(model) == TIED_BYTES


def test_refuses_before_building_when_it_does_not_fit(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    original = loading.call_model_builder

    def recording(*args: Any, **kwargs: Any) -> nn.Module:
        built.append(torch.empty(0).device.type)  # the device the callable builds on
        return original(*args, **kwargs)

    monkeypatch.setattr(loading, "call_model_builder", recording)
    result = cli("audit", "--model", f"{FIXTURES}:tied", "--max-memory", "1KiB", "--device", "cpu")
    assert result.exit_code == 2
    assert result.stderr.startswith("dummyprof: error: --max-memory: ")  # the user's limit is what stops it
    assert f"needs {TIED_BYTES / 1024:.2f} KiB" in result.stderr and "raise --max-memory" in result.stderr
    assert built == ["meta"]  # sized on meta, refused before building
    # compare projects a model that does not fit: built on meta only, never on the CPU
    result = cli(
        "compare", "--model", f"{FIXTURES}:tied", "--max-memory", "1KiB", "--device", "cpu", "--time-budget", "1"
    )
    assert result.exit_code == 0, result.stderr
    assert "PROJECTED" in result.stdout
    assert "cpu" not in built and built
    with pytest.raises(DoesNotFitError):
        check_source_fits(model_source(f"{FIXTURES}:tied"), CPU, 1024)


def test_meta_model_is_materialized_and_retied() -> None:
    source = model_source(f"{FIXTURES}:on_meta")
    assert source.estimated_bytes == TIED_BYTES
    model = source.build(CPU)
    assert all(t.device.type == "cpu" for t in model.parameters())
    assert model.lm_head.weight is model.embed.weight  # to_empty alone would have untied them
    assert any("materialized on cpu with to_empty" in note for note in source.notes)


def test_materialize_reports_aliases_it_cannot_keep() -> None:
    with torch.device("meta"):
        model = resolve_callable(f"{FIXTURES}:aliased")()
    notes = materialize(model, CPU)
    assert model.proj.weight.device.type == "cpu"
    assert any("1 aliased view(s) their own storage" in n for n in notes)


def test_choose_source_rules() -> None:
    assert choose_source(model=None, preset=None, model_args={}).source == "synthetic"
    with pytest.raises(UsageError, match="either --model or --preset"):
        choose_source(model=f"{FIXTURES}:build", preset="dense-decoder", model_args={})
    with pytest.raises(UsageError, match="needs --model or --preset") as info:
        choose_source(model=None, preset=None, model_args={"layers": 2})
    assert info.value.flag == "--model-arg"


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_build_small_and_match_their_estimate(name: str) -> None:
    source = preset_source(name, {})
    model = source.build(CPU)
    assert model_bytes(model) == source.estimated_bytes
    assert source.estimated_bytes is not None and source.estimated_bytes < 16 * 2**20


def test_torch_transformer_is_torchs_own() -> None:
    model = preset_source("torch-transformer", {"encoder_layers": 1, "decoder_layers": 1}).build(CPU)
    assert isinstance(model, nn.Transformer)
    assert len(model.encoder.layers) == 1 and len(model.decoder.layers) == 1


def test_presets_scale_with_model_args() -> None:
    small = preset_source("moe-decoder", {"experts": 4})
    large = preset_source("moe-decoder", {"experts": 8})
    model = large.build(CPU)
    assert len(model.model.layers[0].mlp.experts) == 8
    assert large.estimated_bytes is not None and small.estimated_bytes is not None
    assert large.estimated_bytes > small.estimated_bytes


def test_deepseek_like_has_fp8_scales_and_engram_tables() -> None:
    model = preset_source("deepseek-v4-like", {"engram_rows": 64, "experts": 2}).build(CPU)
    expert = model.model.layers[1].mlp.experts[0].gate_up_proj
    assert expert.weight.dtype == torch.float8_e4m3fn and expert.weight_scale_inv.dtype == torch.uint8
    tables = list(model.model.engram)
    assert len(tables) == 2 and tables[0].weight.shape == (64, 256)
    assert tables[0].weight.dummy_weight_value == 1.0 and tables[0].weight_scale_inv.dummy_weight_value == 127


def test_preset_errors() -> None:
    with pytest.raises(UsageError, match="unknown preset 'gpt'; choose from: torch-transformer") as info:
        preset_source("gpt", {})
    assert info.value.flag == "--preset"
    with pytest.raises(UsageError, match="preset 'dense-decoder' takes no depth; it takes: layers=4"):
        preset_source("dense-decoder", {"depth": 3})
    with pytest.raises(UsageError, match="raised ValueError: dtype must be one of"):
        preset_source("dense-decoder", {"dtype": "int8"})


def test_preset_options_record_every_argument() -> None:
    source = preset_source("dense-decoder", {"layers": 2})
    assert source.options == {**PRESETS["dense-decoder"].parameters(), "layers": 2}
    assert source.source == "preset:dense-decoder"


def test_compare_report_says_the_model_was_materialized(cli: Cli) -> None:
    result = cli("compare", "--model", f"{FIXTURES}:on_meta", "--repeat", "1", "--warmup", "0", "--device", "cpu")
    assert result.exit_code == 0, result.stderr
    assert "the model was built on the meta device and materialized on cpu with to_empty" in result.stdout
    assert "7 storages (8 registered names)" in result.stdout  # the tie survived materialization


# ---- --dtype for presets and the user's code (issue #24 part 2) ---------------------------------------------------


def _float_dtypes(model: nn.Module) -> dict[str, torch.dtype]:
    return {n: t.dtype for n, t in (*model.named_parameters(), *model.named_buffers()) if t.is_floating_point()}


def test_dtype_builds_a_preset_through_its_dtype_argument() -> None:
    source = choose_source(model=None, preset="moe-decoder", model_args={"layers": 1}, dtype="float16")
    assert source.options["dtype"] == "float16"
    floats = _float_dtypes(source.build(torch.device("meta")))
    # the fp32 router, its correction bias and rotary inv_freq keep the dtype the preset declares for them
    assert {n.removeprefix("model.layers.0.") for n, d in floats.items() if d != torch.float16} == {
        "mlp.gate.weight", "mlp.e_score_correction_bias", "self_attn.rotary_emb.inv_freq"}  # fmt: skip
    assert source.notes == []  # the preset's own argument: nothing to say


def test_dtype_builds_user_code_and_torch_transformer_under_torchs_default_dtype() -> None:
    before = torch.get_default_dtype()
    for model, preset in ((f"{FIXTURES}:build", None), (None, "torch-transformer")):
        source = choose_source(model=model, preset=preset, model_args={}, dtype="bfloat16")
        assert set(_float_dtypes(source.build(torch.device("meta"))).values()) == {torch.bfloat16}
        assert source.notes == [
            "--dtype bfloat16: built with torch's default dtype set to bfloat16, as vLLM builds a model; tensors "
            "the code makes in an explicit dtype keep it"
        ]
        assert torch.get_default_dtype() == before  # restored after each build
    assert set(_float_dtypes(choose_source(model=f"{FIXTURES}:build", preset=None, model_args={}).build(
        torch.device("meta"))).values()) == {torch.float32}  # fmt: skip


def test_dtype_and_a_preset_dtype_argument_that_disagree_are_refused(cli: Cli) -> None:
    result = cli("inspect", "--preset", "dense-decoder", "--dtype", "float16", "--model-arg", "dtype=bfloat16")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "dummyprof: error: --dtype: float16 and --model-arg dtype=bfloat16 disagree; give one"
    ]
    agreed = cli("inspect", "--preset", "dense-decoder", "--dtype", "float16", "--model-arg", "dtype=float16", "-q")
    assert agreed.exit_code == 0, agreed.stderr


@pytest.mark.parametrize(
    ("source", "dtype"),
    [
        (("--preset", "dense-decoder"), "int8"),
        (("--preset", "torch-transformer"), "foo"),
        (("--model", f"{FIXTURES}:build"), "int8"),
    ],
)
def test_dtype_a_preset_or_user_code_cannot_take_is_refused_naming_the_flag(
    cli: Cli, source: tuple[str, str], dtype: str
) -> None:
    # before: a preset's ValueError was blamed on --preset; torch-transformer and --model code crashed with a traceback
    result = cli("inspect", *source, "--dtype", dtype)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"dummyprof: error: --dtype: unknown dtype {dtype!r}; choose one of: auto, float32, bfloat16, float16"
    ]
