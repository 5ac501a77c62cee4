"""Issue #24.3: vLLM 0.33's rotary cos/sin cache per rope type, each figure written from ``get_rope`` and the class's
``_compute_cos_sin_cache`` (rows x width x the dtype it is cast to); vLLM is not needed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from dummyprof.deploy.load_buffers import load_buffers, rope_positions
from dummyprof.models.presets import dense_decoder

BF16 = 2
HEAD = 128  # 8 heads of a 1024 hidden size


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    with torch.device("meta"):
        return dense_decoder()  # bfloat16, 4 attention layers (0-3), a rotary_emb each


def _rotary(model: torch.nn.Module, rope: Any, max_position: int = 4096, **config: Any) -> int:
    spec = SimpleNamespace(
        rope_parameters=rope, num_attention_heads=8, hidden_size=1024, max_position_embeddings=max_position, **config
    )
    found = load_buffers(spec, model, ep=1, experts=0)
    assert found.not_counted == ""
    return found.rotary_cache


def test_types_whose_cache_has_max_position_rows(model: torch.nn.Module) -> None:
    """RotaryEmbedding, Llama3, NTKScaling (fixed and mixed), DynamicNTKAlpha (Hunyuan) and, in 0.33,
    DynamicNTKScaling: ``t = arange(max_position_embeddings)`` whatever the factor."""
    rows = 32768 * HEAD * BF16  # 8,388,608
    for rope in (
        {"rope_type": "default"},
        {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192},
        {"rope_type": "ntk", "factor": 2.0},
        {"rope_type": "ntk", "factor": 2.0, "mixed_b": 0.5},
        {"rope_type": "dynamic", "alpha": 1000.0},
        {"rope_type": "dynamic", "factor": 4.0},  # 0.29 built max x factor rows; 0.33 does not
    ):
        assert _rotary(model, rope, 32768) == rows == 8_388_608, rope
    assert rope_positions("dynamic", {"factor": 2.0}, 4096) == 4096


def test_scaled_types_rows() -> None:
    yarn = {"factor": 4.0, "original_max_position_embeddings": 32768}
    assert rope_positions("yarn", yarn, 131072) == 131072  # ceil(original x factor), not max_position
    assert rope_positions("telechat3-yarn", yarn, 1) == 131072  # vLLM rewrites it to yarn
    assert rope_positions("deepseek_yarn", {"factor": 2.5, "original_max_position_embeddings": 4097}, 1) == 10243
    assert (
        rope_positions("deepseek_llama_scaling", {"factor": 2.5, "original_max_position_embeddings": 4097}, 1) == 10243
    )
    assert rope_positions("longrope", {"original_max_position_embeddings": 4096}, 131072) == 135168  # short + long
    assert rope_positions("su", {"original_max_position_embeddings": 4096}, 131072) == 135168  # legacy name
    assert rope_positions("llama3", {"factor": 8.0}, 131072) == 131072


def test_linear_scaling_stacks_one_cache_per_factor(model: torch.nn.Module) -> None:
    """LinearScalingRotaryEmbedding: ``ceil(max_position x factor)`` rows per factor, concatenated."""
    assert _rotary(model, {"rope_type": "linear", "factor": 2.0}) == 8192 * HEAD * BF16
    assert _rotary(model, {"rope_type": "linear", "factor": [2.0, 4.0]}) == (8192 + 16384) * HEAD * BF16  # 6,291,456


def test_mrope_cache_is_positions_factor_times_max_position(model: torch.nn.Module) -> None:
    """MRotaryEmbedding: ``max_position x mrope_positions_factor`` rows, 4 unless the model passes 1 (Qwen3-VL,
    Qwen3.5: no video pruning); the legacy ``mrope`` type is ``default``; openpangu and bailing_mrope keep 4."""
    qwen2_vl = {"rope_type": "default", "mrope_section": [16, 24, 24]}
    assert _rotary(model, qwen2_vl, 32768, model_type="qwen2_vl") == 32768 * 4 * HEAD * BF16 == 33_554_432
    assert _rotary(model, {**qwen2_vl, "rope_type": "mrope"}, 32768) == 33_554_432
    assert _rotary(model, qwen2_vl, 32768, model_type="qwen3_vl_moe") == 32768 * HEAD * BF16
    assert _rotary(model, qwen2_vl, 32768, model_type="qwen3_5") == 8_388_608
    pangu = {**qwen2_vl, "rope_type": "openpangu", "mrope_interleaved": True}
    assert _rotary(model, pangu, 32768, model_type="qwen3_vl") == 33_554_432
    assert _rotary(model, {**qwen2_vl, "rope_type": "bailing_mrope"}, 32768) == 33_554_432
    # YaRN with sections: MRotaryEmbedding over original positions x 4, then YaRN's x factor
    yarn = {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 32768,
        "mrope_section": [16, 24, 24],
    }
    assert _rotary(model, yarn, 131072) == 32768 * 4 * 4 * HEAD * BF16  # 134,217,728
    # a section on another type is ignored by get_rope
    assert _rotary(model, {"rope_type": "ntk", "factor": 2.0, "mrope_section": [16, 24, 24]}) == 4096 * HEAD * BF16


def test_dual_chunk_attention_builds_five_caches(model: torch.nn.Module) -> None:
    """DualChunkRotaryEmbedding (Qwen2.5-7B-Instruct-1M): q, qc, qc_no_clamp and q_inter caches of
    ``chunk_size - local_size`` rows and a k cache of ``max_position`` rows, each cast to the model's dtype; it
    replaces the config's rope type."""
    dual = {"chunk_size": 262144, "local_size": 8192, "original_max_position_embeddings": 32768}
    rope = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    got = _rotary(model, rope, 1010000, dual_chunk_attention_config=dual)
    assert got == (4 * (262144 - 8192) + 1010000) * HEAD * BF16 == 518_606_848


def test_gemma4_proportional_is_head_size_wide(model: torch.nn.Module) -> None:
    """Gemma4RotaryEmbedding passes ``head_size`` as its rotary_dim: the non-rotated pairs are padded in."""
    rope = {"rope_type": "proportional", "partial_rotary_factor": 0.25}
    assert _rotary(model, rope, 4096) == 4096 * HEAD * BF16  # not 4096 x 32
    assert _rotary(model, {"rope_type": "default", "partial_rotary_factor": 0.25}) == 4096 * 32 * BF16


def test_rope_dim_and_deepseek_v4_float32(model: torch.nn.Module) -> None:
    """``rope_dim`` overrides head x partial factor; DeepseekV4ScalingRotaryEmbedding registers its cache float32."""
    assert _rotary(model, {"rope_type": "default", "rope_dim": 64}) == 4096 * 64 * BF16
    v4 = {"rope_type": "deepseek_yarn", "factor": 16.0, "original_max_position_embeddings": 65536, "rope_dim": 64}
    assert _rotary(model, {**v4, "is_deepseek_v4": True}) == 1_048_576 * 64 * 4  # 268,435,456
    assert _rotary(model, v4) == 1_048_576 * 64 * BF16


def test_parameters_nested_by_layer_type_build_one_cache_per_distinct_set(model: torch.nn.Module) -> None:
    """Gemma-3: ``rope_parameters[layer_type]`` per layer; get_rope keys its cache on the parameters, so the rank
    holds one cache per distinct set among its layers' types."""
    nested = {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
    }
    types = ["sliding_attention"] * 3 + ["full_attention"]
    assert _rotary(model, nested, layer_types=types) == (4096 + 32768) * HEAD * BF16  # 9,437,184
    assert _rotary(model, nested, layer_types=["sliding_attention"] * 4) == 4096 * HEAD * BF16
    same = {"sliding_attention": {"rope_type": "default"}, "full_attention": {"rope_type": "default"}}
    assert _rotary(model, same, layer_types=types) == 4096 * HEAD * BF16  # equal sets share one cache


def test_what_vllm_builds_but_the_config_cannot_size_is_named(model: torch.nn.Module) -> None:
    def skipped(rope: dict[str, Any]) -> str:
        config = SimpleNamespace(rope_parameters=rope, num_attention_heads=8, hidden_size=1024)
        return load_buffers(config, model, ep=1, experts=0).not_counted

    assert skipped({"rope_type": "default", "use_fope": True}) == (
        "rotary cache of rope type default: FoPE's (per-rank kv heads)"
    )
    assert (
        skipped({"rope_type": "mllama4"})
        == "rotary cache of rope type mllama4: the vision encoder's (complex64, patches)"
    )
    assert skipped({"rope_type": "made-up"}) == "rotary cache of rope type made-up"


def test_gpt_oss_builds_its_cache_in_float32(model: torch.nn.Module) -> None:
    """gpt-oss (and DomynEdge) pass ``dtype=torch.float32`` to get_rope: the cache is not cast to bfloat16.
    gpt-oss-20b as shipped: YaRN [4096 x 32 = 131072 positions, head_dim 64] float32 on every rank."""
    yarn = {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096}
    assert _rotary(model, yarn, 131072, architectures=["GptOssForCausalLM"]) == 131072 * HEAD * 4
    pytest.importorskip("transformers")
    from dummyprof.deploy import ParallelLayout, count_deployment
    from dummyprof.models.huggingface import hf_source

    source = hf_source(f"hf:{__file__.rpartition('/')[0]}/data/gpt-oss-20b.json").build(torch.device("meta"))
    counts = count_deployment(source, ParallelLayout(tp=2), strategies=["per-layer"])
    assert [r.rotary_cache_bytes for r in counts.ranks] == [131072 * 64 * 4] * len(counts.ranks)  # 33,554,432


def test_deepseek_v4_one_float32_cache_per_rope_its_layers_build(model: torch.nn.Module) -> None:
    """DeepSeek-V4 (``build_deepseek_v4_rope``): a layer whose ``compress_rates[layer_type]`` is over 1 uses the
    ``compress`` parameters at ``compress_rope_theta`` (YaRN 16 x 65536 positions); others plain positions (factor
    1, ``max_position_embeddings`` rows) at ``rope_theta``; float32, ``qk_rope_head_dim`` 64 wide; layers 3 and
    up (MTP here: ``num_hidden_layers`` 3) are ratio 1."""
    yarn = {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 65536, "attention_factor": 1.0}
    config = SimpleNamespace(
        model_type="deepseek_v4",
        rope_parameters={"main": {"rope_type": "default", "rope_theta": 10000.0}, "compress": yarn},
        layer_types=["compressed_sparse_attention", "heavily_compressed_attention"] * 2,
        compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 128},
        compress_rope_theta=160000.0,
        rope_theta=10000.0,
        max_position_embeddings=1048576,
        qk_rope_head_dim=64,
        head_dim=512,
        num_attention_heads=8,
        hidden_size=1024,
        num_hidden_layers=4,
    )
    assert load_buffers(config, model, ep=1, experts=0).rotary_cache == 1_048_576 * 64 * 4 == 268_435_456
    config.num_hidden_layers = 3  # layer 3 is then an MTP layer: ratio 1, the main cache too
    assert load_buffers(config, model, ep=1, experts=0).rotary_cache == 2 * 268_435_456


def test_gemma_configs_as_transformers_builds_them() -> None:
    """Gemma-3: sliding (theta 1e4) and full (theta 1e6) layers, two default caches of the one head size;
    Gemma-4: sliding ``default`` at head_dim 64, full ``proportional`` at its ``per_layer_config`` head size
    (``global_head_dim`` 128, the cache that wide whatever the partial factor); bfloat16, 4096 positions."""
    transformers = pytest.importorskip("transformers")
    small = dict(num_hidden_layers=6, hidden_size=256, num_attention_heads=4, num_key_value_heads=1, head_dim=64)
    small |= dict(vocab_size=1000, intermediate_size=64, max_position_embeddings=4096)
    for config, expected in (
        (transformers.Gemma3TextConfig(**small), 2 * 4096 * 64 * BF16),  # 1,048,576
        (
            transformers.Gemma4TextConfig(**small, global_head_dim=128, num_kv_shared_layers=0),
            4096 * 64 * BF16 + 4096 * 128 * BF16,  # 1,572,864
        ),
    ):
        with torch.device("meta"):
            built = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
        assert load_buffers(config, built, ep=1, experts=0).rotary_cache == expected


@pytest.mark.parametrize("factor", [-1.0, 0.0, float("nan"), "x"])
def test_a_scaling_factor_that_sizes_no_cache_is_refused_naming_the_model(model: torch.nn.Module, factor: Any) -> None:
    # before: -1 counted -8 MiB (a results file that does not load back), NaN a ValueError traceback
    from dummyprof.errors import UsageError

    with pytest.raises(UsageError) as caught:
        _rotary(model, {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": 4096})
    assert (caught.value.field, caught.value.message) == (
        "model",
        f"the config's rope scaling factor {factor!r} is not a positive number; set one above 0 in its rope_scaling",
    )


def test_a_cache_beyond_int64_bytes_is_refused(model: torch.nn.Module) -> None:
    # before: 8.39e+20 bytes written to the results, which then refused to load them
    from dummyprof.errors import UsageError

    with pytest.raises(UsageError) as caught:
        _rotary(model, {"rope_type": "yarn", "factor": 1e14, "original_max_position_embeddings": 32768})
    assert caught.value.message == (
        "the config's rotary cos/sin cache is 8.39e+20 bytes, beyond int64; lower its rope_scaling factor"
    )
