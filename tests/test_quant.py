"""Quantized checkpoints: per rank, the tensors vLLM 0.33 creates (names, shapes, dtypes, bytes), written here from
vLLM's ``create_weights`` rules (fp8.py: Fp8LinearMethod, Fp8MoEMethod; utils/fp8_utils.py), not from the library."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from dummyprof.deploy import ParallelLayout, Sharder, count_deployment
from dummyprof.deploy.engine import engine_source, quantizer_of, source_sharder
from dummyprof.deploy.plan import ModelDims
from dummyprof.deploy.quant import fill_kinds, resolve_method
from dummyprof.deploy.shards import RankShard
from dummyprof.errors import UsageError
from dummyprof.models.source import ModelSource
from dummyprof.units import format_bytes
from tests.conftest import CliResult

DATA = Path("tests/data")
FP8, F32, BF16 = "float8_e4m3fn", "float32", "bfloat16"


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@functools.cache
def _source(path: str, flag: str = "auto", **args: Any) -> ModelSource:
    pytest.importorskip("transformers")
    from dummyprof.models.huggingface import hf_source

    return engine_source(hf_source(f"hf:{path}", dict(args)), flag)


def _shard(source: ModelSource, layout: ParallelLayout, rank: int = 0) -> RankShard:
    assert source.whole is not None
    whole = source.whole()
    sharder = source_sharder(source, whole, layout)
    return sharder.build(layout.coords()[rank])


def _table(shard: RankShard, part: str) -> dict[str, tuple[tuple[int, ...], str]]:
    return {t.name.split(part, 1)[1]: (t.shape, t.dtype) for t in shard.tensors if part in t.name}


# ---- fp8 block (DeepSeek-V3: 128 x 128, float32 weight_scale_inv, fused MoE) ------------------------------------


def _deepseek_v3_rank_bytes(tp: int, ep: int) -> int:
    """vLLM's per-rank weights for DeepSeek-V3 fp8 under tp (attention, dense MLPs, shared experts, vocab) and ep."""
    h, vocab, layers, dense, experts = 7168, 129280, 61, 3, 256

    def lin(out: int, inp: int) -> int:  # fp8 weight + float32 block scales
        return out * inp + _cdiv(out, 128) * _cdiv(inp, 128) * 4

    moe_tp = 1 if ep > 1 else tp
    local, inter = experts // ep, 2048 // moe_tp
    norms = 2 * h * 2 + 1536 * 2 + 512 * 2
    attn = lin(1536 + 576, h) + lin(128 * 192 // tp, 1536) + lin(128 * 256 // tp, 512) + lin(h, 128 * 128 // tp)
    mlp = lin(2 * 18432 // tp, h) + lin(h, 18432 // tp)
    routed = local * (2 * inter * h + 2 * _cdiv(inter, 128) * 56 * 4) + local * (h * inter + 56 * _cdiv(inter, 128) * 4)
    moe = experts * h * 2 + experts * 4 + routed + lin(2 * 2048 // tp, h) + lin(h, 2048 // tp)
    return 2 * (vocab // tp) * h * 2 + h * 2 + dense * (norms + attn + mlp) + (layers - dense) * (norms + attn + moe)


@pytest.mark.parametrize(("sizes", "tp", "ep"), [({"tp": 8}, 8, 1), ({"ep": 8}, 1, 8)])
def test_deepseek_v3_fp8_block_weights_per_rank_are_vllms(sizes: dict[str, int], tp: int, ep: int) -> None:
    shard = _shard(_source(f"{DATA}/DeepSeek-V3.json"), ParallelLayout.from_sizes(**sizes), rank=3)
    weights = [t for t in shard.tensors if "rotary_emb" not in t.name]  # transformers' inv_freq: not a weight
    assert sum(t.nbytes for t in weights) == _deepseek_v3_rank_bytes(tp, ep)
    assert len(weights) == 1327  # 61 layers' tensors with their scales, embedding, norm, head
    if tp == 8:
        assert sum(t.nbytes for t in weights) == 85_140_130_848  # issue #24: what vLLM allocates on each rank
    local, inter = 256 // ep, 2048 // tp
    assert _table(shard, "layers.40.") == {
        "self_attn.fused_qkv_a_proj.weight": ((2112, 7168), FP8),  # q_a + kv_a: MergedReplicatedLinear
        "self_attn.fused_qkv_a_proj.weight_scale_inv": ((17, 56), F32),
        "self_attn.q_a_layernorm.weight": ((1536,), BF16),
        "self_attn.q_b_proj.weight": ((24576 // tp, 1536), FP8),
        "self_attn.q_b_proj.weight_scale_inv": ((192 // tp, 12), F32),
        "self_attn.kv_a_layernorm.weight": ((512,), BF16),
        "self_attn.kv_b_proj.weight": ((32768 // tp, 512), FP8),
        "self_attn.kv_b_proj.weight_scale_inv": ((256 // tp, 4), F32),
        "self_attn.o_proj.weight": ((7168, 16384 // tp), FP8),
        "self_attn.o_proj.weight_scale_inv": ((56, 128 // tp), F32),
        "mlp.experts.w13_weight": ((local, 2 * inter, 7168), FP8),
        "mlp.experts.w2_weight": ((local, 7168, inter), FP8),
        "mlp.experts.w13_weight_scale_inv": ((local, 2 * _cdiv(inter, 128), 56), F32),
        "mlp.experts.w2_weight_scale_inv": ((local, 56, _cdiv(inter, 128)), F32),
        "mlp.gate.weight": ((256, 7168), BF16),  # the router: unquantized, in the model's dtype (vLLM's GateLinear)
        "mlp.gate.e_score_correction_bias": ((256,), F32),
        "mlp.shared_experts.gate_up_proj.weight": ((4096 // tp, 7168), FP8),
        "mlp.shared_experts.gate_up_proj.weight_scale_inv": ((32 // tp, 56), F32),
        "mlp.shared_experts.down_proj.weight": ((7168, 2048 // tp), FP8),
        "mlp.shared_experts.down_proj.weight_scale_inv": ((56, 16 // tp), F32),
        "input_layernorm.weight": ((7168,), BF16),
        "post_attention_layernorm.weight": ((7168,), BF16),
    }
    assert _table(shard, "lm_head.") == {"weight": ((129280 // tp, 7168), BF16)}  # ParallelLMHead: not a LinearBase


def test_deepseek_v3_one_rank_is_the_engine_model() -> None:
    source = _source(f"{DATA}/DeepSeek-V3.json")
    assert source.quantization is not None and source.quantization.method == "fp8"
    assert source.recorded_options()["quantization"] == "fp8"  # what the Results record
    # + transformers' two rotary inv_freq, + vLLM's MLAAttention kv scales (four float32 per layer)
    assert source.estimated_bytes == _deepseek_v3_rank_bytes(1, 1) + 256 + 61 * 4 * 4
    model = source.build(torch.device("meta"))
    assert model.get_submodule("model.layers.3.mlp.experts.routed_experts").w13_weight.dtype == torch.float8_e4m3fn


# ---- fp8 per tensor, static activations, ignored layers (a Llama-3 fp8 checkpoint's config) --------------------


def _llama_fp8(tmp_path: Path, **quant: Any) -> str:
    config = json.loads((DATA / "Llama-3.1-8B.json").read_text())
    config.update(num_hidden_layers=2, quantization_config={"quant_method": "fp8", **quant})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_fp8_per_tensor_static_scales_follow_the_fused_parts(tmp_path: Path) -> None:
    ignored = ["model.layers.1.mlp.down_proj"]
    path = _llama_fp8(tmp_path, activation_scheme="static", ignored_layers=ignored)
    shard = _shard(_source(path), ParallelLayout(tp=2))
    assert _table(shard, "layers.0.") == {
        "self_attn.qkv_proj.weight": (((4096 + 2 * 1024) // 2, 4096), FP8),
        "self_attn.qkv_proj.weight_scale": ((3,), F32),  # one per q, k, v (output_partition_sizes)
        "self_attn.qkv_proj.input_scale": ((3,), F32),
        "self_attn.o_proj.weight": ((4096, 2048), FP8),
        "self_attn.o_proj.weight_scale": ((1,), F32),
        "self_attn.o_proj.input_scale": ((1,), F32),
        "mlp.gate_up_proj.weight": ((14336, 4096), FP8),
        "mlp.gate_up_proj.weight_scale": ((2,), F32),
        "mlp.gate_up_proj.input_scale": ((2,), F32),
        "mlp.down_proj.weight": ((4096, 7168), FP8),
        "mlp.down_proj.weight_scale": ((1,), F32),
        "mlp.down_proj.input_scale": ((1,), F32),
        "input_layernorm.weight": ((4096,), BF16),
        "post_attention_layernorm.weight": ((4096,), BF16),
        **{f"self_attn.attn.{kind}_scale": ((), BF16) for kind in ("q", "k", "v", "prob")},  # Fp8KVCacheMethod
    }
    assert _table(shard, "layers.1.mlp.down_proj") == {".weight": ((4096, 7168), BF16)}  # ignored_layers
    assert _table(shard, "embed_tokens.") == {"weight": ((128256 // 2, 4096), BF16)}


def test_fp8_block_refuses_a_split_vllm_refuses(tmp_path: Path) -> None:
    path = _llama_fp8(tmp_path, activation_scheme="dynamic", weight_block_size=[128, 256])
    with pytest.raises(UsageError, match=r"o_proj: input size per rank 128 is not a multiple of the fp8 block 256"):
        _shard(_source(path), ParallelLayout(tp=32))


# Qwen/Qwen1.5-MoE-A2.7B's published config (transformers' Qwen2MoeConfig defaults are this model's numbers)
QWEN15_MOE = {
    "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "torch_dtype": "bfloat16",
    "hidden_size": 2048, "intermediate_size": 5632, "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4, "norm_topk_prob": False,
    "decoder_sparse_step": 1, "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
    "vocab_size": 151936, "max_position_embeddings": 8192, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
    "hidden_act": "silu", "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 32768,
    "max_window_layers": 21, "bos_token_id": 151643, "eos_token_id": 151643,
}  # fmt: skip
FP8_BLOCK = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128]}


def _qwen15_moe(tmp_path: Path, **fields: Any) -> str:
    config = {**QWEN15_MOE, **fields}
    text = json.dumps(config)
    path = tmp_path / f"Qwen1.5-MoE-{hashlib.sha1(text.encode()).hexdigest()[:12]}.json"
    path.write_text(text)
    return str(path)


def test_fp8_block_routers_follow_each_architectures_vllm_class(tmp_path: Path) -> None:
    """vLLM 0.33's Qwen3-MoE builds ``mlp.gate`` (GateLinear) with the model's quant config, so an fp8 block checkpoint
    without ``modules_to_not_convert`` holds it as Fp8LinearMethod makes it: fp8 [128, 2048] and a float32
    ``weight_scale_inv`` [ceil(128 / 128), ceil(2048 / 128)] = [1, 16], replicated. Qwen2-MoE, DeepSeek-V2/V3, Mixtral
    and gpt-oss build their routers without it (bfloat16), and every ``shared_expert_gate`` is built with
    ``quant_config=None``."""
    path = _with_quant(tmp_path, "Qwen3-30B-A3B", FP8_BLOCK, num_hidden_layers=2)
    shard = _shard(_source(path), ParallelLayout(tp=2))
    assert _table(shard, "layers.1.mlp.gate.") == {"weight": ((128, 2048), FP8), "weight_scale_inv": ((1, 16), F32)}
    assert {t.rule for t in shard.tensors if ".mlp.gate." in t.name} == {"replicated"}
    assert _table(shard, "layers.1.mlp.experts.") == {
        "w13_weight": ((128, 2 * 384, 2048), FP8),
        "w2_weight": ((128, 2048, 384), FP8),
        "w13_weight_scale_inv": ((128, 2 * 3, 16), F32),
        "w2_weight_scale_inv": ((128, 16, 3), F32),
    }
    kept = _with_quant(tmp_path, "Qwen3-30B-A3B", dict(FP8_BLOCK, modules_to_not_convert=["model.layers.1.mlp.gate"]),
                       num_hidden_layers=2)  # fmt: skip
    assert _table(_shard(_source(kept), ParallelLayout(tp=2)), "layers.1.mlp.gate.") == {"weight": ((128, 2048), BF16)}
    qwen2 = _shard(_source(_qwen15_moe(tmp_path, num_hidden_layers=1, quantization_config=FP8_BLOCK)), ParallelLayout())
    assert _table(qwen2, "layers.0.mlp.gate.") == {"weight": ((60, 2048), BF16)}  # GateLinear, no quant config
    assert _table(qwen2, "layers.0.mlp.shared_expert.") == {  # the shared expert: quantized
        "gate_up_proj.weight": ((2 * 5632, 2048), FP8),
        "gate_up_proj.weight_scale_inv": ((2 * 44, 16), F32),
        "down_proj.weight": ((2048, 5632), FP8),
        "down_proj.weight_scale_inv": ((16, 44), F32),
    }
    assert _table(qwen2, "layers.0.mlp.shared_expert_gate.") == {"weight": ((1, 2048), BF16)}
    deepseek = _shard(_source(f"{DATA}/DeepSeek-V3.json", num_hidden_layers=4), ParallelLayout(tp=8))
    assert _table(deepseek, "layers.3.mlp.gate.") == {"weight": ((256, 7168), BF16),
                                                      "e_score_correction_bias": ((256,), F32)}  # fmt: skip
    mixtral = {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "torch_dtype": "bfloat16",
        "num_hidden_layers": 1,
        "quantization_config": FP8_BLOCK,
    }  # transformers' defaults: Mixtral-8x7B
    (tmp_path / "mixtral.json").write_text(json.dumps(mixtral))
    assert _table(_shard(_source(str(tmp_path / "mixtral.json")), ParallelLayout()), "mlp.gate.") == {
        "weight": ((8, 4096), BF16)
    }  # gpt-oss's router: test_gpt_oss_mxfp4_experts_are_vllms


def _qwen3_fp8_block_rank_bytes(tp: int, grid: int) -> int:
    """vLLM's weights per rank for Qwen3-30B-A3B fp8 (128 x 128 blocks) at tp, the experts' scales on ``grid``."""
    h, experts, inter, vocab = 2048, 128, 768 // tp, 151936 // tp

    def lin(out: int, inp: int) -> int:  # fp8 weight + float32 block scales
        return out * inp + _cdiv(out, 128) * _cdiv(inp, 128) * 4

    qkv = (32 // tp + 2 * max(1, 4 // tp)) * 128
    attn = lin(qkv, h) + lin(h, 32 * 128 // tp) + 2 * 128 * 2 + 4 * 2  # q/k norms, the KV-cache method's scalars
    moe = lin(experts, h) + experts * 3 * inter * h  # the router (GateLinear takes the quant config), w13 and w2
    moe += experts * (2 * _cdiv(inter, grid) * _cdiv(h, grid) + _cdiv(h, grid) * _cdiv(inter, grid)) * 4
    return 48 * (attn + moe + 2 * h * 2) + 2 * vocab * h * 2 + h * 2


def test_fp8_block_moe_refines_its_scale_grid_where_vllm_does(tmp_path: Path) -> None:
    """Qwen3-30B-A3B fp8 (128 x 128) at tp 4 holds 192 intermediate rows per expert, not whole blocks: vLLM 0.33
    (``refine_fp8_moe_block_shape``, the default ``--moe-backend auto``) builds it with the scales on a 64 x 64 grid,
    gcd(128, 128, 192, 2048), the checkpoint's upsampled at load; at tp 8 on 32 x 32 (96 rows). At tp 16 (48 rows)
    the gcd is 16, under 32: ``validate_fp8_block_shape_moe`` refuses it, and so does dummyprof, naming the tp that
    passes; ``--ep 16`` holds whole experts."""
    path = _with_quant(tmp_path, "Qwen3-30B-A3B", FP8_BLOCK)
    source = _source(path)
    assert source.whole is not None
    quant, layout = quantizer_of(source), ParallelLayout(tp=4)
    counts = count_deployment(source.whole(), layout, options=source.options, quant=quant, strategies=["per-layer"])
    for rank in counts.ranks:  # + transformers' two rotary inv_freq buffers (64 float32 each), never visited
        assert (rank.storages, rank.held_bytes) == (48 * 18 + 3 + 2, _qwen3_fp8_block_rank_bytes(4, 64) + 512)
        # + vLLM's attention's four float32 kv scales per layer (self_attn.attn), visited, not weights
        assert rank.strategy("per-layer").visits == 48 * (18 + 4) + 3
        assert rank.strategy("per-layer").bytes_written == _qwen3_fp8_block_rank_bytes(4, 64) + 48 * 16
        assert _qwen3_fp8_block_rank_bytes(4, 64) == 7_805_556_096
    shard = _shard(source, ParallelLayout(tp=4), rank=3)
    assert _table(shard, "layers.47.mlp.experts.") == {
        "w13_weight": ((128, 2 * 192, 2048), FP8),
        "w2_weight": ((128, 2048, 192), FP8),
        "w13_weight_scale_inv": ((128, 2 * 3, 32), F32),  # 2 x ceil(192 / 64), ceil(2048 / 64)
        "w2_weight_scale_inv": ((128, 32, 3), F32),
    }
    assert _table(_shard(source, ParallelLayout(tp=8)), "layers.0.mlp.experts.w") == {
        "13_weight": ((128, 2 * 96, 2048), FP8),
        "2_weight": ((128, 2048, 96), FP8),
        "13_weight_scale_inv": ((128, 2 * 3, 64), F32),
        "2_weight_scale_inv": ((128, 64, 3), F32),
    }
    with pytest.raises(UsageError) as caught:
        _shard(source, ParallelLayout(tp=16))
    assert caught.value.field == "tp"
    assert caught.value.message == (
        "model.layers.0.mlp.experts: the experts' intermediate size per rank 48 is not a multiple of the fp8 block_n "
        "128, and no block of 32 or more divides 128 x 128, it and the hidden size 2048 (vLLM refuses it; --ep 16 "
        "holds whole experts on each rank); try --tp 8"
    )
    whole = _shard(source, ParallelLayout.from_sizes(tp=16, ep=16), rank=15)
    assert _table(whole, "layers.0.mlp.experts.w13_weight") == {
        "": ((8, 2 * 768, 2048), FP8),
        "_scale_inv": ((8, 2 * 6, 16), F32),
    }


# ---- GPTQ and AWQ (vLLM auto_gptq.py / auto_awq.py, the CUDA path) ----------------------------------------------

I32, F16, U8 = "int32", "float16", "uint8"


def _with_quant(tmp_path: Path, base: str, quant: dict[str, Any], **fields: Any) -> str:
    config = json.loads((DATA / f"{base}.json").read_text())
    config.update(fields, quantization_config=quant)
    text = json.dumps(config)
    path = tmp_path / f"{base}-{hashlib.sha1(text.encode()).hexdigest()[:12]}.json"  # one name per config (cached)
    path.write_text(text)
    return str(path)


def test_awq_int4_llama_tp2_is_vllms() -> None:
    shard = _shard(_source(f"{DATA}/Llama-3.1-8B-Instruct-AWQ-INT4.json"), ParallelLayout(tp=2))
    qkv, inter, h = (4096 + 2 * 1024) // 2, 14336 // 2, 4096
    assert _table(shard, "layers.0.") == {
        "self_attn.qkv_proj.qweight": ((h, qkv // 8), I32),  # packed along the output: 8 int4 per int32
        "self_attn.qkv_proj.qzeros": ((h // 128, qkv // 8), I32),
        "self_attn.qkv_proj.scales": ((h // 128, qkv), F16),  # the model's dtype (the config's float16)
        "self_attn.o_proj.qweight": ((h // 2, h // 8), I32),
        "self_attn.o_proj.qzeros": ((h // 2 // 128, h // 8), I32),
        "self_attn.o_proj.scales": ((h // 2 // 128, h), F16),
        "mlp.gate_up_proj.qweight": ((h, 2 * inter // 8), I32),
        "mlp.gate_up_proj.qzeros": ((h // 128, 2 * inter // 8), I32),
        "mlp.gate_up_proj.scales": ((h // 128, 2 * inter), F16),
        "mlp.down_proj.qweight": ((inter, h // 8), I32),
        "mlp.down_proj.qzeros": ((inter // 128, h // 8), I32),
        "mlp.down_proj.scales": ((inter // 128, h), F16),
        "input_layernorm.weight": ((h,), F16),
        "post_attention_layernorm.weight": ((h,), F16),
    }
    assert _table(shard, "lm_head.") == {"weight": ((128256 // 2, h), F16)}


def test_gptq_linear_and_moe_with_dynamic_exclusions(tmp_path: Path) -> None:
    quant = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True,
             "dynamic": {r"-:model\.layers\.1\.mlp\..*": {}}}  # fmt: skip
    path = _with_quant(tmp_path, "Qwen3-30B-A3B", quant, num_hidden_layers=2)
    shard = _shard(_source(path), ParallelLayout(tp=4))
    h, experts, inter = 2048, 128, 768 // 4
    # 192 per rank is not whole groups of 128: vLLM falls back from Marlin to MoeWNA16Method, group halved to 64
    assert _table(shard, "layers.0.mlp.") == {
        "gate.weight": ((experts, h), BF16),
        "experts.w13_qweight": ((experts, 2 * inter, h // 2), U8),  # two int4 per byte, N first
        "experts.w2_qweight": ((experts, h, inter // 2), U8),
        "experts.w13_scales": ((experts, 2 * inter, h // 64), BF16),
        "experts.w2_scales": ((experts, h, inter // 64), BF16),
        "experts.w13_qzeros": ((0,), I32),  # symmetric: registered empty
        "experts.w2_qzeros": ((0,), I32),
    }
    marlin = _shard(_source(path), ParallelLayout(tp=2))
    assert _table(marlin, "layers.0.mlp.experts.") == {
        "w13_qweight": ((experts, h // 8, 2 * 384), I32),  # packed along the input (K first)
        "w2_qweight": ((experts, 384 // 8, h), I32),
        "w13_scales": ((experts, h // 128, 2 * 384), BF16),
        "w2_scales": ((experts, 384 // 128, h), BF16),
        "w13_qzeros": ((experts, h // 128, 2 * 384 // 8), I32),
        "w2_qzeros": ((experts, 384 // 128, h // 8), I32),
        "w13_bias": ((experts, 2 * 384), BF16),  # AutoGPTQMoEMethod registers zero biases always
        "w2_bias": ((experts, h), BF16),
    }
    asymmetric = _with_quant(tmp_path, "Qwen3-30B-A3B", {**quant, "sym": False, "bits": 8}, num_hidden_layers=1)
    table = _table(_shard(_source(asymmetric), ParallelLayout(tp=4)), "layers.0.mlp.experts.")
    assert table["w13_qweight"] == ((experts, 2 * inter, h), U8)  # 8 bits: one per byte
    assert table["w13_qzeros"] == ((experts, 2 * inter, h // 64), U8)
    assert table["w2_qzeros"] == ((experts, h, inter // 64), U8)
    with pytest.raises(UsageError, match=r"no group of 32 or more divides the intermediate size per rank 48"):
        _shard(_source(path), ParallelLayout(tp=16))
    o_in = 32 * 128 // 4
    assert _table(shard, "layers.0.self_attn.o_proj.") == {
        "qweight": ((o_in // 8, h), I32),
        "scales": ((o_in // 128, h), BF16),
        "qzeros": ((o_in // 128, h // 8), I32),
    }
    assert _table(shard, "layers.1.mlp.experts.") == {  # excluded by the dynamic rule: bf16 as transformers builds
        "gate_up_proj": ((experts, 2 * inter, h), BF16),
        "down_proj": ((experts, h, inter), BF16),
    }


def test_gptq_desc_act_is_refused_as_vllm_refuses(tmp_path: Path) -> None:
    quant = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True, "sym": True}
    with pytest.raises(UsageError, match=r"desc_act=True\) is no longer supported by vLLM 0.33"):
        _shard(_source(_with_quant(tmp_path, "Llama-3.1-8B", quant, num_hidden_layers=1)), ParallelLayout())


# ---- compressed-tensors ------------------------------------------------------------------------------------------


def test_compressed_tensors_fp8_dynamic_llama_is_vllms() -> None:
    shard = _shard(_source(f"{DATA}/Llama-3.1-8B-Instruct-FP8-dynamic.json"), ParallelLayout(tp=2))
    qkv, inter, h = (4096 + 2 * 1024) // 2, 14336 // 2, 4096
    assert _table(shard, "layers.0.self_attn.") == {  # channel scales [out, 1]; dynamic tokens: no input_scale
        "qkv_proj.weight": ((qkv, h), FP8),
        "qkv_proj.weight_scale": ((qkv, 1), F32),
        "o_proj.weight": ((h, h // 2), FP8),
        "o_proj.weight_scale": ((h, 1), F32),
        **CT_KV_SCALES,  # kv_cache_scheme null: CompressedTensorsKVCacheMethod registers them all the same
    }
    assert _table(shard, "layers.0.mlp.") == {
        "gate_up_proj.weight": ((2 * inter, h), FP8),
        "gate_up_proj.weight_scale": ((2 * inter, 1), F32),
        "down_proj.weight": ((h, inter), FP8),
        "down_proj.weight_scale": ((h, 1), F32),
    }
    assert _table(shard, "lm_head.") == {"weight": ((128256 // 2, h), BF16)}  # ignore: lm_head


# CompressedTensorsKVCacheMethod.create_weights: float32 scales and zero points in the model's dtype, [1] per layer
CT_KV_SCALES = {f"attn.{kv}_{what}": ((1,), dtype) for what, dtype in (("scale", F32), ("zero_point", BF16))
                for kv in "kvq"}  # fmt: skip


def _llama_ct_fp8_bytes(tp: int) -> int:
    """vLLM's weights per rank for Llama-3.1-8B compressed-tensors fp8 (channel scales), the KV-cache method's too."""
    qkv, inter, h, vocab = (4096 + 2 * 1024) // tp, 14336 // tp, 4096, 128256 // tp
    linears = [(qkv, h), (h, h // tp), (2 * inter, h), (h, inter)]  # fp8 weight + float32 channel scale [out, 1]
    layer = sum(o * i + o * 4 for o, i in linears) + 2 * h * 2 + 3 * 4 + 3 * 2  # + kv scales, zero points
    return 32 * layer + 2 * vocab * h * 2 + h * 2


def test_the_kv_cache_methods_tensors_are_counted_per_rank() -> None:
    """vLLM gives each attention layer of a compressed-tensors, fp8 or ModelOpt checkpoint a KV-cache method whose
    ``create_weights`` registers parameters on the ``Attention`` module (``self_attn.attn``), so the dummy loader
    visits them: Llama-3.1-8B compressed-tensors fp8 at tp 2 holds 6 more tensors (18 bytes) per layer."""
    source = _source(f"{DATA}/Llama-3.1-8B-Instruct-FP8-dynamic.json")
    assert source.whole is not None
    counts = count_deployment(source.whole(), ParallelLayout(tp=2), options=source.options, quant=quantizer_of(source))
    weights = _llama_ct_fp8_bytes(2)
    for rank in counts.ranks:
        assert rank.storages == 32 * (8 + 2 + 6) + 3 + 2  # + transformers' two rotary inv_freq buffers (not visited)
        assert rank.held_bytes == weights + 2 * 64 * 4 == 4_544_143_936 + 512
        per_layer, legacy = rank.strategy("per-layer"), rank.strategy("legacy")
        # + the four float32 kv scale buffers vLLM's Attention registers beside them: 643 visits, as vLLM's own
        assert (per_layer.visits, per_layer.bytes_written) == (32 * (16 + 4) + 3, weights + 32 * 16)
        assert per_layer.visits == 643
        # legacy: a tensor k modules below the root is visited k + 1 times (model.layers.N.self_attn.attn.k_scale: 6)
        assert legacy.visits == 32 * (8 * 6 + 2 * 5 + (6 + 4) * 6) + 3 + 3 + 2  # embedding, final norm, head
        assert rank.kv_scale_bytes == 32 * 4 * 4  # the _k/_v/_q/_prob_scale buffers: load buffers, counted once
    assert counts.model_bytes == _llama_ct_fp8_bytes(1) + 512  # the engine's one-rank model, rotary buffers too
    shard = _shard(source, ParallelLayout(tp=2))
    kv = [t for t in shard.tensors if ".self_attn.attn." in t.name]
    assert (len(kv), sum(t.nbytes for t in kv)) == (32 * 6, 32 * 18)  # 192 tensors, 576 bytes


def test_the_kv_cache_method_follows_the_scheme_and_the_attention_class(tmp_path: Path) -> None:
    """``attn_head``: one scale and zero point per kv head of the rank (kv-column); an fp8 checkpoint's method takes
    vLLM's ``Attention`` only, so DeepSeek's ``MLAAttention`` gets none (ModelOpt's takes both); GPTQ, AWQ and mxfp4
    have none; a kv_cache_scheme vLLM refuses is refused."""
    fp8 = {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True}
    quant = _ct(fp8, "float-quantized", {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True})
    heads = {"num_bits": 8, "type": "float", "strategy": "attn_head", "symmetric": True, "dynamic": False}
    path = _with_quant(tmp_path, "Llama-3.1-8B", dict(quant, kv_cache_scheme=heads), num_hidden_layers=1)
    for tp, kv in ((2, 4), (16, 1)):  # 8 kv heads: 4 per rank at tp 2, one (shared by 2 ranks) at tp 16
        shard = _shard(_source(path), ParallelLayout(tp=tp))
        assert _table(shard, "self_attn.attn.") == {k.removeprefix("attn."): ((kv,), d) for k, (_, d) in
                                                    CT_KV_SCALES.items()}  # fmt: skip
        assert {t.rule for t in shard.tensors if ".attn." in t.name} == {"kv-column"}
    deepseek = _shard(_source(f"{DATA}/DeepSeek-V3.json", num_hidden_layers=1), ParallelLayout(tp=8))
    assert not [t for t in deepseek.tensors if ".attn." in t.name]
    awq = _shard(_source(f"{DATA}/Llama-3.1-8B-Instruct-AWQ-INT4.json", num_hidden_layers=1), ParallelLayout())
    assert not [t for t in awq.tensors if ".attn." in t.name]
    asymmetric = dict(heads, symmetric=False)
    path = _with_quant(tmp_path, "Llama-3.1-8B", dict(quant, kv_cache_scheme=asymmetric), num_hidden_layers=1)
    with pytest.raises(UsageError, match=r"kv_cache_scheme .* is not a symmetric tensor or attn_head strategy"):
        _shard(_source(path), ParallelLayout())


def _ct(weights: dict[str, Any], fmt: str, inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    group = {"targets": ["Linear"], "weights": weights, "input_activations": inputs}
    ignore = ["lm_head", "re:.*layers\\.1\\.mlp\\.down_proj"]
    return {"quant_method": "compressed-tensors", "format": fmt, "config_groups": {"group_0": group}, "ignore": ignore}


def test_compressed_tensors_w4a16_and_int8_w8a8(tmp_path: Path) -> None:
    w4 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": False}
    shard = _shard(_source(_with_quant(tmp_path, "Llama-3.1-8B", _ct(w4, "pack-quantized"), num_hidden_layers=2)),
                   ParallelLayout(tp=2))  # fmt: skip
    h, inter = 4096, 14336 // 2
    assert _table(shard, "layers.0.mlp.down_proj.") == {
        "weight_packed": ((h, inter * 4 // 32), I32),
        "weight_scale": ((h, inter // 128), BF16),  # groups split with the row-parallel input
        "weight_shape": ((2,), "int64"),
        "weight_zero_point": ((h * 4 // 32, inter // 128), I32),  # asymmetric
    }
    assert _table(shard, "layers.1.mlp.down_proj.") == {"weight": ((h, inter), BF16)}  # ignore: re: pattern
    w8 = {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True}
    a8 = {"num_bits": 8, "type": "int", "strategy": "tensor", "symmetric": False, "dynamic": False}
    path = _with_quant(tmp_path, "Llama-3.1-8B", _ct(w8, "int-quantized", a8), num_hidden_layers=1)
    assert _table(_shard(_source(path), ParallelLayout(tp=2)), "layers.0.self_attn.o_proj.") == {
        "weight": ((h, h // 2), "int8"),
        "weight_scale": ((h, 1), F32),
        "input_scale": ((1,), F32),
        "input_zero_point": ((1,), "int8"),
    }


@pytest.mark.parametrize(("sizes", "local", "inter"), [({"tp": 2}, 128, 384), ({"ep": 8}, 16, 768)])
def test_compressed_tensors_moe_fp8_channel_and_w4a16_are_vllms(sizes: dict[str, int], local: int, inter: int) -> None:
    """CompressedTensorsW8A8Fp8MoEMethod (channel weights, dynamic tokens) and CompressedTensorsWNA16MoEMethod
    (pack-quantized int4, group 128, symmetric: no zero points; N-first, no g_idx); the router (``re:.*mlp.gate$``)
    stays bfloat16."""
    h, layout = 2048, ParallelLayout.from_sizes(**sizes)
    fp8 = _shard(_source(f"{DATA}/Qwen3-30B-A3B-FP8-dynamic.json", num_hidden_layers=1), layout)
    assert _table(fp8, "layers.0.mlp.") == {
        "gate.weight": ((128, h), BF16),
        "experts.w13_weight": ((local, 2 * inter, h), FP8),
        "experts.w2_weight": ((local, h, inter), FP8),
        "experts.w13_weight_scale": ((local, 2 * inter, 1), F32),
        "experts.w2_weight_scale": ((local, h, 1), F32),
    }
    w4 = _shard(_source(f"{DATA}/Qwen3-30B-A3B-quantized.w4a16.json", num_hidden_layers=1), layout)
    assert _table(w4, "layers.0.mlp.experts.") == {
        "w13_weight_packed": ((local, 2 * inter, h // 8), I32),
        "w2_weight_packed": ((local, h, inter // 8), I32),
        "w13_weight_scale": ((local, 2 * inter, h // 128), BF16),
        "w2_weight_scale": ((local, h, inter // 128), BF16),
        "w2_weight_shape": ((local, 2), BF16),  # torch.empty under the model's default dtype
        "w13_weight_shape": ((local, 2), BF16),
    }
    assert _table(w4, "layers.0.mlp.gate.") == {"weight": ((128, h), BF16)}
    with pytest.raises(UsageError) as caught:
        _shard(_source(f"{DATA}/Qwen3-30B-A3B-quantized.w4a16.json", num_hidden_layers=1), ParallelLayout(tp=4))
    assert caught.value.message.startswith(  # the size at fault alone (it said 'the hidden size 2048 or ...')
        "WNA16 MoE: the intermediate size per rank 192 is not a multiple of the group size 128 (vLLM refuses it)"
    )


def test_compressed_tensors_moe_block_int8_zero_points_and_refusals(tmp_path: Path) -> None:
    h, experts, inter = 2048, 128, 768 // 2
    block = {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128], "symmetric": True}
    dyn = {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 128, "dynamic": True}
    path = _with_quant(tmp_path, "Qwen3-30B-A3B", _ct(block, "float-quantized", dyn), num_hidden_layers=1)
    table = _table(_shard(_source(path), ParallelLayout(tp=2)), "experts.")
    assert {k: v for k, v in table.items() if "scale" in k} == {
        "w13_weight_scale": ((experts, 2 * 3, h // 128), F32),
        "w2_weight_scale": ((experts, h // 128, 3), F32),
    }
    w8 = {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True}
    a8 = {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True}
    path = _with_quant(tmp_path, "Qwen3-30B-A3B", _ct(w8, "int-quantized", a8), num_hidden_layers=1)
    assert _table(_shard(_source(path), ParallelLayout(tp=2)), "experts.") == {
        "w13_weight": ((experts, 2 * inter, h), "int8"),
        "w2_weight": ((experts, h, inter), "int8"),
        "w13_weight_scale": ((experts, 2 * inter, 1), F32),
        "w2_weight_scale": ((experts, h, 1), F32),
    }
    w4 = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": False, "actorder": "group"}
    path = _with_quant(tmp_path, "Qwen3-30B-A3B", _ct(w4, "pack-quantized"), num_hidden_layers=1)
    table = _table(_shard(_source(path), ParallelLayout(tp=2)), "experts.")
    assert table["w2_weight_scale"] == ((experts, h, inter // 128), BF16)  # actorder group: the rank's groups
    assert table["w13_weight_zero_point"] == ((experts, 2 * inter // 8, h // 128), I32)
    assert table["w2_weight_zero_point"] == ((experts, h // 8, inter // 128), I32)
    with pytest.raises(UsageError, match=r"intermediate size per rank 96 is not a multiple of the block 128 x 128"):
        path = _with_quant(tmp_path, "Qwen3-30B-A3B", _ct(block, "float-quantized", dyn), num_hidden_layers=1)
        _shard(_source(path), ParallelLayout(tp=8))
    static = {"num_bits": 8, "type": "float", "strategy": "channel", "dynamic": False}
    with pytest.raises(UsageError, match=r"compressed-tensors MoE scheme of model.layers.0.mlp.experts.0.gate_proj"):
        path = _with_quant(tmp_path, "Qwen3-30B-A3B", _ct(dict(block, strategy="channel"), "float-quantized", static),
                           num_hidden_layers=1)  # fmt: skip
        _shard(_source(path), ParallelLayout(tp=2))


# ---- ModelOpt FP8 and NVFP4 ---------------------------------------------------------------------------------------


def test_modelopt_fp8_llama_is_vllms() -> None:
    """ModelOptFp8LinearMethod: fp8 weight, float32 weight_scale and input_scale per fused part; lm_head excluded."""
    shard = _shard(_source(f"{DATA}/Llama-3.1-8B-Instruct-FP8-modelopt.json"), ParallelLayout(tp=2))
    qkv, inter, h = (4096 + 2 * 1024) // 2, 14336 // 2, 4096
    assert _table(shard, "layers.0.self_attn.") == {
        "qkv_proj.weight": ((qkv, h), FP8),
        "qkv_proj.weight_scale": ((3,), F32),
        "qkv_proj.input_scale": ((3,), F32),
        "o_proj.weight": ((h, h // 2), FP8),
        "o_proj.weight_scale": ((1,), F32),
        "o_proj.input_scale": ((1,), F32),
        **{f"attn.{kind}_scale": ((), BF16) for kind in ("q", "k", "v", "prob")},  # ModelOptKVCacheMethod
    }
    assert _table(shard, "mlp.gate_up_proj.") == {"weight": ((2 * inter, h), FP8), "weight_scale": ((2,), F32),
                                                  "input_scale": ((2,), F32)}  # fmt: skip
    assert _table(shard, "lm_head.") == {"weight": ((128256 // 2, h), BF16)}
    per_layer = sum(o * i + 2 * parts * 4 for o, i, parts in [(qkv, h, 3), (h, h // 2, 1), (2 * inter, h, 2),
                                                              (h, inter, 1)]) + 2 * h * 2 + 4 * 2  # fmt: skip
    weights = [t for t in shard.tensors if "rotary_emb" not in t.name]
    assert sum(t.nbytes for t in weights) == 32 * per_layer + 2 * 128256 // 2 * h * 2 + h * 2 == 4_540_868_608
    assert len(weights) == 32 * (10 + 4 + 4) + 3 == 579  # + the four kv-cache scalars per layer


def test_modelopt_fp8_moe_and_a_quantized_head(tmp_path: Path) -> None:
    """ModelOptFp8MoEMethod (per-tensor scales, static input scales per expert); nothing excluded (flat layout,
    ``ignore`` empty): vLLM's ParallelLMHead takes the linear method too, and so does Qwen3-MoE's router."""
    quant = {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": []}
    path = _with_quant(tmp_path, "Qwen3-30B-A3B", quant, num_hidden_layers=1)
    shard = _shard(_source(path), ParallelLayout(tp=2))
    h, experts, inter, vocab = 2048, 128, 384, 151936 // 2
    assert _table(shard, "layers.0.mlp.") == {
        "gate.weight": ((experts, h), FP8),  # Qwen3-MoE's GateLinear takes the quant config: quantized unless excluded
        "gate.weight_scale": ((1,), F32),
        "gate.input_scale": ((1,), F32),
        "experts.w13_weight": ((experts, 2 * inter, h), FP8),
        "experts.w2_weight": ((experts, h, inter), FP8),
        "experts.w13_weight_scale": ((experts, 2), F32),
        "experts.w2_weight_scale": ((experts,), F32),
        "experts.w13_input_scale": ((experts,), F32),
        "experts.w2_input_scale": ((experts,), F32),
    }
    assert _table(shard, "lm_head.") == {"weight": ((vocab, h), FP8), "weight_scale": ((1,), F32),
                                         "input_scale": ((1,), F32)}  # fmt: skip
    assert _table(shard, "embed_tokens.") == {"weight": ((vocab, h), BF16)}


def _deepseek_r1_fp4_rank_bytes(tp: int) -> int:
    """vLLM's per-rank weights for nvidia/DeepSeek-R1-FP4 (NVFP4, group 16; attention and head excluded) under tp."""
    h, vocab, layers, dense, experts = 7168, 129280, 61, 3, 256

    def lin(out: int, inp: int, parts: int) -> int:  # packed fp4, fp8 group scales, input_scale + weight_scale_2
        return out * inp // 2 + out * inp // 16 + 2 * parts * 4

    norms = 2 * h * 2 + 1536 * 2 + 512 * 2
    attn = 2 * ((1536 + 576) * h + 128 * 192 // tp * 1536 + 128 * 256 // tp * 512 + h * 128 * 128 // tp)  # bf16
    attn += 4 * 2  # ModelOptKVCacheMethod on MLAAttention: q/k/v/prob_scale, bfloat16 scalars
    mlp = lin(2 * 18432 // tp, h, 2) + lin(h, 18432 // tp, 1)
    inter = 2048 // tp
    routed = experts * (2 * inter * h // 2 + 2 * inter * h // 16 + h * inter // 2 + h * inter // 16 + 6 * 4)
    moe = experts * h * 2 + experts * 4 + routed + lin(2 * 2048 // tp, h, 2) + lin(h, 2048 // tp, 1)
    return 2 * (vocab // tp) * h * 2 + h * 2 + dense * (norms + attn + mlp) + (layers - dense) * (norms + attn + moe)


def test_modelopt_nvfp4_deepseek_r1_is_vllms() -> None:
    """ModelOptNvFp4LinearMethod and ModelOptNvFp4FusedMoE: uint8 [out, in/2], fp8-e4m3 block scales [out, in/16],
    float32 global scales; ``exclude_modules`` (``model.layers.N.self_attn*``, lm_head) stay bfloat16."""
    shard = _shard(_source(f"{DATA}/DeepSeek-R1-FP4.json"), ParallelLayout(tp=8), rank=3)
    h, inter, u8 = 7168, 2048 // 8, "uint8"
    assert _table(shard, "layers.3.mlp.experts.") == {
        "w13_weight": ((256, 2 * inter, h // 2), u8),
        "w2_weight": ((256, h, inter // 2), u8),
        "w13_weight_scale": ((256, 2 * inter, h // 16), FP8),
        "w2_weight_scale": ((256, h, inter // 16), FP8),
        "w13_weight_scale_2": ((256, 2), F32),
        "w2_weight_scale_2": ((256,), F32),
        "w13_input_scale": ((256, 2), F32),
        "w2_input_scale": ((256,), F32),
    }
    assert _table(shard, "layers.3.mlp.shared_experts.down_proj.") == {
        "weight": ((h, inter // 2), u8),
        "input_scale": ((1,), F32),
        "weight_scale_2": ((1,), F32),
        "weight_scale": ((h, inter // 16), FP8),
    }
    assert {dtype for _, dtype in _table(shard, "layers.3.self_attn.").values()} == {BF16}
    weights = [t for t in shard.tensors if "rotary_emb" not in t.name]
    assert sum(t.nbytes for t in weights) == _deepseek_r1_fp4_rank_bytes(8) == 51_389_224_864
    assert len(weights) == 1559 + 61 * 4


def _llama_nvfp4(tmp_path: Path, **quant: Any) -> str:
    """A ModelOpt NVFP4 Llama-3.1-8B in the flat layout ModelOpt's newer exports write in config.json."""
    flat = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "kv_cache_scheme": None}
    return _with_quant(tmp_path, "Llama-3.1-8B", dict(flat, **quant))


def test_modelopt_flat_exclude_modules_keep_the_head_in_bfloat16(tmp_path: Path) -> None:
    """``ModelOptQuantConfigBase.from_config``, flat layout: ``ignore`` where the key is there, else
    ``exclude_modules``; ``["lm_head"]`` leaves the head a bfloat16 ``ParallelLMHead`` (UnquantizedLinearMethod)."""
    shard = _shard(_source(_llama_nvfp4(tmp_path, exclude_modules=["lm_head"])), ParallelLayout())
    h, inter, vocab = 4096, 14336, 128256

    def lin(out: int, inp: int, parts: int) -> int:  # packed fp4 + fp8 group scales + input_scale, weight_scale_2
        return out * inp // 2 + out * inp // 16 + 2 * parts * 4

    layer = lin(6144, h, 3) + lin(h, h, 1) + lin(2 * inter, h, 2) + lin(h, inter, 1) + 2 * h * 2 + 4 * 2  # kv scalars
    weights = [t for t in shard.tensors if "rotary_emb" not in t.name]
    assert _table(shard, "lm_head.") == {"weight": ((vocab, h), BF16)}
    assert sum(t.nbytes for t in weights) == 32 * layer + 2 * vocab * h * 2 + h * 2 == 6_027_749_376
    assert len(weights) == 32 * (4 * 4 + 2 + 4) + 3
    quantized = _shard(_source(_llama_nvfp4(tmp_path, exclude_modules=[])), ParallelLayout())
    assert _table(quantized, "lm_head.") == {
        "weight": ((vocab, h // 2), "uint8"),
        "input_scale": ((1,), F32),
        "weight_scale_2": ((1,), F32),
        "weight_scale": ((vocab, h // 16), FP8),
    }
    both = _shard(_source(_llama_nvfp4(tmp_path, ignore=[], exclude_modules=["lm_head"])), ParallelLayout())
    assert _table(both, "lm_head.")["weight"] == ((vocab, h // 2), "uint8")  # ignore is read first
    with pytest.raises(UsageError, match=r"the config's ignore None is not a list of module names"):
        _shard(_source(_llama_nvfp4(tmp_path, ignore=None, exclude_modules=["lm_head"])), ParallelLayout())


def test_modelopt_method_follows_quant_algo() -> None:
    assert resolve_method({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "auto") == ("modelopt_fp4", None)
    assert resolve_method({"quant_method": "modelopt", "quantization": {"quant_algo": "FP8"}}, "modelopt") == (
        "modelopt",
        None,
    )
    for algo, method in (("MXFP8", "modelopt_mxfp8"), ("MIXED_PRECISION", "modelopt_mixed")):
        with pytest.raises(UsageError, match=rf"method '{method}' is not known to dummyprof"):
            resolve_method({"quant_method": "modelopt", "quant_algo": algo}, "auto")


# ---- mxfp4 (gpt-oss) ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sizes", "local", "inter"), [({}, 32, 2880), ({"tp": 2}, 32, 1472), ({"tp": 8}, 32, 384),
                                                       ({"ep": 8}, 4, 2880)])  # fmt: skip
def test_gpt_oss_mxfp4_experts_are_vllms(sizes: dict[str, int], local: int, inter: int) -> None:
    """uint8 blocks (two fp4 per byte) and UE8M0 scale bytes per 32; the per-rank intermediate size rounded up to
    64 (H200's Triton backend: 1440 -> 1472, 360 -> 384); attention, router, embeddings stay bfloat16."""
    shard = _shard(_source(f"{DATA}/gpt-oss-20b.json"), ParallelLayout.from_sizes(**sizes))
    h, u8 = 2880, "uint8"
    assert _table(shard, "layers.0.mlp.experts.") == {
        "w13_weight": ((local, 2 * inter, h // 2), u8),
        "w13_weight_scale": ((local, 2 * inter, h // 32), u8),
        "w2_weight": ((local, h, inter // 2), u8),
        "w2_weight_scale": ((local, h, inter // 32), u8),
        "w13_bias": ((local, 2 * inter), BF16),
        "w2_bias": ((local, h), BF16),
    }
    assert {dtype for name, (_, dtype) in _table(shard, "layers.0.").items() if "experts" not in name} == {BF16}
    expert_bytes = sum(t.nbytes for t in shard.tensors if ".mlp.experts." in t.name)
    assert expert_bytes == 24 * local * (
        2 * inter * (h // 2 + h // 32) + h * (inter // 2 + inter // 32) + 2 * (2 * inter + h)
    )


@pytest.mark.parametrize(("tp", "heads"), [(1, 64), (2, 32), (8, 8)])
def test_gpt_oss_sinks_are_the_ranks_heads_and_experts_split_as_vllm_holds_them(tp: int, heads: int) -> None:
    """vLLM's OAIAttention: ``sinks`` [num_attention_heads // tp]; unquantized FusedMoE ``w13`` [E, 2I/tp, H] and
    ``w2`` [E, H, I/tp] (transformers holds gpt-oss's experts [E, in, out]: turned, then split by outputs/inputs)."""
    whole = _source(f"{DATA}/gpt-oss-20b.json", "none", num_hidden_layers=1).build(torch.device("meta"))
    layout = ParallelLayout(tp=tp)
    shard = Sharder(whole, layout, ModelDims.of(whole), None).build(layout.coords()[0])
    h, inter = 2880, 2880
    assert _table(shard, "layers.0.self_attn.")["sinks"] == ((heads,), BF16)
    experts = _table(shard, "layers.0.mlp.experts.")
    assert experts["gate_up_proj"] == ((32, 2 * inter // tp, h), BF16)
    assert experts["down_proj"] == ((32, h, inter // tp), BF16)
    assert experts["gate_up_proj_bias"] == ((32, 2 * inter // tp), BF16) and experts["down_proj_bias"] == (
        (32, h),
        BF16,
    )


@pytest.mark.parametrize(("tp", "rank", "rows"), [(1, 0, 0), (2, 0, 32), (2, 1, 32), (8, 0, 0), (8, 6, 0), (8, 7, 192)])
def test_gpt_oss_mxfp4_padding_is_padding(tp: int, rank: int, rows: int) -> None:
    """vLLM's _load_weights_mxfp4 gives MoE rank r the intermediate rows [r x per, min((r + 1) x per, 2880)),
    per = cdiv(90, tp) x 32 (tp 2: 1440 of 1472 held; tp 8: 384 of 384, the last rank 192): the rows no weight is
    loaded into are padding in every tensor with that dimension (w13 blocks, scales, bias; w2 blocks, scales)."""
    layout = ParallelLayout(tp=tp)
    shard = _shard(_source(f"{DATA}/gpt-oss-20b.json", num_hidden_layers=1), layout, rank)
    experts, h = 32, 2880
    padding = {t.name.rpartition(".")[2]: t.padding_bytes for t in shard.tensors if ".mlp.experts." in t.name}
    assert padding == {
        "w13_weight": experts * 2 * rows * h // 2,
        "w13_weight_scale": experts * 2 * rows * h // 32,
        "w2_weight": experts * h * rows // 2,
        "w2_weight_scale": experts * h * rows // 32,
        "w13_bias": experts * 2 * rows * 2,
        "w2_bias": 0,
    }
    assert sum(t.padding_bytes for t in shard.tensors) == experts * rows * (h + h // 16 + h // 2 + h // 32 + 4)


# ---- choosing the method ---------------------------------------------------------------------------------------


def test_method_choice_follows_vllms_flag() -> None:
    fp8 = {"quant_method": "fp8"}
    assert resolve_method(fp8, "auto") == ("fp8", None)
    assert resolve_method(fp8, "fp8") == ("fp8", None)
    assert resolve_method(None, "auto") == (None, None)
    assert resolve_method(None, "none") == (None, None)
    method, notice = resolve_method(fp8, "none")
    assert method is None
    assert notice == (
        "--quantization none: the checkpoint's fp8 quantization is not applied; the model is counted unquantized"
    )
    with pytest.raises(UsageError, match=r"'gptq' does not match the config's quant_method 'fp8'"):
        resolve_method(fp8, "gptq")
    assert resolve_method({"quant_method": "gptq"}, "gptq_marlin") == ("gptq", None)  # a kernel variant
    with pytest.raises(UsageError, match=r"no quantization_config.*--online-quant fp8"):
        resolve_method(None, "fp8")


def test_an_explicit_dtype_builds_the_unquantized_tensors_or_is_refused_as_vllm_refuses() -> None:
    """--dtype float16 on compressed-tensors fp8: its float tensors are float16 (vLLM builds them in the model's
    dtype); a dtype outside the method's get_supported_act_dtypes is refused, as vLLM refuses to start."""
    from dummyprof.models.huggingface import hf_source

    one = {"num_hidden_layers": 1}
    llama = engine_source(hf_source(f"hf:{DATA}/Llama-3.1-8B-Instruct-FP8-dynamic.json", one, dtype="float16"))
    shard = _shard(llama, ParallelLayout(tp=2))
    floats = {t.dtype for t in shard.tensors if t.dtype not in (FP8, F32)}
    assert floats == {"float16"} and _table(shard, "layers.0.self_attn.o_proj.")["weight"] == ((4096, 2048), FP8)
    for config, dtype, words in (
        ("gpt-oss-20b", "float16", "vLLM refuses mxfp4 with float16: it supports bfloat16"),
        ("Llama-3.1-8B-Instruct-AWQ-INT4", "float32", "vLLM refuses awq with float32: it supports float16, bfloat16"),
    ):
        with pytest.raises(UsageError) as refused:
            engine_source(hf_source(f"hf:{DATA}/{config}.json", one, dtype=dtype))
        assert (refused.value.field, refused.value.message) == ("dtype", words)


def test_unknown_method_is_one_line_exit_2_unless_none(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    config = json.loads((DATA / "Llama-3.1-8B.json").read_text())
    config.update(num_hidden_layers=1, quantization_config={"quant_method": "bitblas", "bits": 4})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = cli("inspect", "--model", f"hf:{path}")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "dummyprof: error: --quantization: quantization method 'bitblas' is not known to dummyprof "
        "(known: fp8, compressed-tensors, gptq, awq, mxfp4, modelopt, modelopt_fp4); give --quantization none to "
        "count the model unquantized"
    ]
    counted = cli("inspect", "--model", f"hf:{path}", "--quantization", "none")
    assert counted.exit_code == 0, counted.stderr
    assert "the checkpoint's bitblas quantization is not applied; the model is counted unquantized" in counted.stdout


# ---- what the dummy fill does to each kind -----------------------------------------------------------------------


def test_fill_kinds_count_fp8_scales_integers_and_skipped_bytes() -> None:
    llama = _shard(_source(f"{DATA}/Llama-3.1-8B-Instruct-AWQ-INT4.json"), ParallelLayout(tp=2))
    h, qkv, inter, layers = 4096, 3072, 7168, 32
    packed = [(h, qkv), (h // 2, h), (h, 2 * inter), (inter, h)]  # (in, out) per rank of qkv, o, gate_up, down
    skipped = layers * sum(i * o // 8 * 4 + i // 128 * o // 8 * 4 for i, o in packed)  # qweight + qzeros, int32
    kv_scales = layers * 4 * 4  # vLLM's attention: four float32 scalars per layer
    scales = layers * sum(i // 128 * o * 2 for i, o in packed) + kv_scales
    floats = 2 * 128256 // 2 * h * 2 + 2 * 64 * 4  # embedding, head, inv_freq
    norms = (2 * layers + 1) * h * 2  # vLLM's RMSNorm declares its weight 1.0
    kinds = fill_kinds(llama.module)
    assert kinds == {"fp8": 0, "scale": scales, "integer": 0, "skipped": skipped, "float": floats, "declared": norms,
                     "fp16-scratch": 0}  # fmt: skip
    deepseek = _shard(_source(f"{DATA}/DeepSeek-V3.json"), ParallelLayout(tp=8))
    kinds = fill_kinds(deepseek.module)
    fp8 = sum(t.nbytes for t in deepseek.tensors if t.dtype == FP8)
    assert kinds["fp8"] == fp8 == 84_441_235_456
    # the scratch alive at once: one tensor's float16 copy, the largest (a layer's w13_weight, 256 experts x 2 x
    # 2048 / 8 x 7168), never the sum of all of them (157.28 GiB: more than an H200 holds)
    largest = max(t.nbytes for t in deepseek.tensors if t.dtype == FP8)
    assert kinds["fp16-scratch"] == 2 * largest == 2 * 256 * (2 * 2048 // 8) * 7168 == 1_879_048_192
    kv_scales = 61 * 4 * 4  # vLLM's MLAAttention: four float32 scalars per layer, not weights
    assert kinds["scale"] == sum(t.nbytes for t in deepseek.tensors if "scale" in t.name) + kv_scales
    assert kinds["skipped"] == kinds["integer"] == 0


def test_the_report_shows_each_kind_per_rank(cli: Callable[..., CliResult]) -> None:
    one_layer = ("--model-arg", "num_hidden_layers=1", "--model-arg", "layer_types=['full_attention']")
    result = cli("inspect", "--model", f"hf:{DATA}/gpt-oss-20b.json", *one_layer, "--tp", "2")
    assert result.exit_code == 0, result.stderr
    experts, h, inter = 32, 2880, 1472  # 1440 per rank, padded to 64
    scales = experts * 2 * inter * h // 32 + experts * h * inter // 32
    blocks = experts * 2 * inter * h // 2 + experts * h * inter // 2
    row = f" 0-1    0 B  {format_bytes(scales)}  {format_bytes(blocks)}  0 B  0 B"
    assert "Quantized tensors per rank (vLLM 0.33 fill rules)" in result.stdout
    assert re.sub(r" +", " ", row) in [re.sub(r" +", " ", line).rstrip() for line in result.stdout.splitlines()]
    # the 32 padded rows of each rank are padding; beyond them only w2_bias [E, H] is held on both ranks
    padded, w2_bias = 2 * experts * 32 * (h + h // 16 + h // 2 + h // 32 + 4), experts * h * 2
    assert f"+ padding {format_bytes(padded)} + other copies {format_bytes(w2_bias)} (held" in result.stdout


def test_the_flag_help_names_every_known_method(cli: Callable[..., CliResult]) -> None:
    from dummyprof.deploy.quant import METHODS

    shown = " ".join(cli("inspect", "--help").stdout.split())
    assert f"the config's method ({', '.join(METHODS)})" in shown


# ---- hand-edited quantization configs: one line naming --quantization, not a traceback -------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (-5, "-5 is not a whole number above 0 (or -1: channelwise)"),
        ("x", "'x' is not a whole number"),
        (0.5, "0.5 is not a whole number"),
    ],
    ids=["negative", "text", "fraction"],
)
def test_a_compressed_tensors_group_size_that_is_no_count_is_refused(tmp_path: Path, value: Any, shown: str) -> None:
    # before: -5 a RuntimeError (negative dimension), 'x' a ValueError, both tracebacks (exit 1)
    config = json.loads((DATA / "Qwen3-30B-A3B-quantized.w4a16.json").read_text())
    config["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = value
    path = _with_quant(tmp_path, "Qwen3-30B-A3B-quantized.w4a16", config["quantization_config"], num_hidden_layers=1)
    with pytest.raises(UsageError) as caught:
        _shard(_source(path), ParallelLayout(tp=2))
    assert caught.value.message == (
        f"the config's quantization_config.config_groups.group_0.weights.group_size {shown}; "
        "correct it in the config, or give --quantization none to count the model unquantized"
    )


def test_modelopt_exclude_modules_that_are_not_names_are_refused(tmp_path: Path) -> None:
    # before: a TypeError traceback (object of type 'int' has no len())
    config = json.loads((DATA / "DeepSeek-R1-FP4.json").read_text())
    config["quantization_config"]["quantization"]["exclude_modules"] = [1, 2]
    path = _with_quant(tmp_path, "DeepSeek-R1-FP4", config["quantization_config"], num_hidden_layers=4)
    with pytest.raises(UsageError) as caught:
        _shard(_source(path), ParallelLayout(tp=2))
    assert caught.value.message == (
        "the config's quantization_config.quantization.exclude_modules [1, 2] is not a list of module names; "
        "correct it in the config, or give --quantization none to count the model unquantized"
    )


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        ({"strategy": "block", "block_structure": [128]}, " [128] is not a block [rows, columns] of two whole numbers"),
        ({"strategy": "block", "block_structure": [0, 128]}, "[0] 0 is not a whole number from 1 to 4,294,967,296"),
    ],
    ids=["one-number-block", "zero-block"],
)
def test_a_quantization_config_vllm_cannot_read_is_one_line(tmp_path: Path, edit: dict[str, Any], error: str) -> None:
    # before: the exception's traceback (exit 1)
    config = json.loads((DATA / "Qwen3-30B-A3B-FP8-dynamic.json").read_text())
    config["quantization_config"]["config_groups"]["group_0"]["weights"].update(edit)
    path = _with_quant(tmp_path, "Qwen3-30B-A3B-FP8-dynamic", config["quantization_config"], num_hidden_layers=1)
    with pytest.raises(UsageError) as caught:
        _shard(_source(path), ParallelLayout(tp=2))
    assert caught.value.message == (  # refused by the field checks before any rule computes with it
        f"the config's quantization_config.config_groups.group_0.weights.block_structure{error}; "
        "correct it in the config, or give --quantization none to count the model unquantized"
    )
