"""Ready-made model trees that need nothing installed beyond torch.

``torch-transformer`` is PyTorch's own ``nn.Transformer``: a real module tree
nobody here wrote. The decoders are shape-alikes of common LLM families: the
module nesting, tensor kinds and dtypes those models have (norms declaring
their dummy value, rotary caches as non-persistent buffers, tied embeddings,
fp8 experts with UE8M0 scale bytes, Engram tables), small by default and
scaled with ``--model-arg`` (``layers=32 hidden=4096`` ...). Their weights
are never used for compute, so only shapes and dtypes matter.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch import nn

from dummyprof.errors import UsageError
from dummyprof.models.engram import EngramTable
from dummyprof.models.loading import callable_source
from dummyprof.models.meta_bounds import BuildLimits
from dummyprof.models.source import ModelSource
from dummyprof.models.synthetic import DTYPES, HAS_FP8

MlpFactory = Callable[[torch.dtype], nn.Module]  # a layer's MLP (dense or experts) in a dtype


def _dtype(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {name!r}") from None


def _weight(*shape: int, dtype: torch.dtype) -> nn.Parameter:
    return nn.Parameter(torch.empty(shape, dtype=dtype), requires_grad=False)


class Linear(nn.Module):
    """A linear layer's tensors only (vLLM's layers hold just these)."""

    def __init__(self, d_in: int, d_out: int, dtype: torch.dtype, *, bias: bool = False) -> None:
        super().__init__()
        self.weight = _weight(d_out, d_in, dtype=dtype)
        self.bias = _weight(d_out, dtype=dtype) if bias else None


class Fp8Linear(nn.Module):
    """An fp8 block-quantized linear: fp8 weight plus one UE8M0 scale byte per 128x128 block."""

    def __init__(self, d_in: int, d_out: int, *, block: int = 128) -> None:
        super().__init__()
        self.weight = _weight(d_out, d_in, dtype=torch.float8_e4m3fn)
        self.weight_scale_inv = _weight(-(-d_out // block), -(-d_in // block), dtype=torch.uint8)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = _weight(dim, dtype=dtype)
        self.weight.dummy_weight_value = 1.0  # type: ignore[attr-defined]  # vLLM norms declare it


class Rotary(nn.Module):
    """Rotary frequencies: computed at construction, never in a checkpoint (non-persistent)."""

    def __init__(self, head_dim: int) -> None:
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int, dtype: torch.dtype) -> None:
        super().__init__()
        head_dim = hidden // heads
        self.q_proj = Linear(hidden, heads * head_dim, dtype)
        self.k_proj = Linear(hidden, kv_heads * head_dim, dtype)
        self.v_proj = Linear(hidden, kv_heads * head_dim, dtype)
        self.o_proj = Linear(heads * head_dim, hidden, dtype)
        self.rotary_emb = Rotary(head_dim)


class MLP(nn.Module):
    def __init__(self, hidden: int, intermediate: int, dtype: torch.dtype, *, fp8: bool = False) -> None:
        super().__init__()
        linear: Callable[[int, int], nn.Module] = Fp8Linear if fp8 else partial(Linear, dtype=dtype)
        self.gate_up_proj = linear(hidden, 2 * intermediate)
        self.down_proj = linear(intermediate, hidden)


class MoE(nn.Module):
    def __init__(
        self, hidden: int, experts: int, intermediate: int, shared: int, dtype: torch.dtype, *, fp8: bool = False
    ) -> None:
        super().__init__()
        self.gate = Linear(hidden, experts, torch.float32)
        self.register_buffer("e_score_correction_bias", torch.empty(experts, dtype=torch.float32))
        self.experts = nn.ModuleList(MLP(hidden, intermediate, dtype, fp8=fp8) for _ in range(experts))
        self.shared_experts = MLP(hidden, intermediate * shared, dtype, fp8=fp8) if shared else None


class DecoderLayer(nn.Module):
    def __init__(self, attn: nn.Module, mlp: nn.Module, hidden: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(hidden, dtype)
        self.self_attn = attn
        self.post_attention_layernorm = RMSNorm(hidden, dtype)
        self.mlp = mlp


class Embedding(nn.Module):
    def __init__(self, vocab: int, hidden: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = _weight(vocab, hidden, dtype=dtype)


class CausalLM(nn.Module):
    """``model.embed_tokens``, ``model.layers.N``, ``model.norm`` and an ``lm_head`` (tied if asked)."""

    def __init__(self, layers: list[nn.Module], vocab: int, hidden: int, dtype: torch.dtype, *, tie: bool) -> None:
        super().__init__()
        self.model = nn.Module()
        self.model.embed_tokens = Embedding(vocab, hidden, dtype)
        self.model.layers = nn.ModuleList(layers)
        self.model.norm = RMSNorm(hidden, dtype)
        self.lm_head = Embedding(vocab, hidden, dtype)
        if tie:
            self.lm_head.weight = self.model.embed_tokens.weight


def _gqa_decoder(
    layers: int, hidden: int, heads: int, kv_heads: int, vocab: int, dtype: str, tie: bool, mlp: MlpFactory
) -> nn.Module:
    """``layers`` blocks of grouped-query attention and ``mlp(dtype)`` between an embedding and an lm_head."""
    dt = _dtype(dtype)
    blocks: list[nn.Module] = [
        DecoderLayer(Attention(hidden, heads, kv_heads, dt), mlp(dt), hidden, dt) for _ in range(layers)
    ]
    return CausalLM(blocks, vocab, hidden, dt, tie=tie)


def torch_transformer(
    d_model: int = 128, nhead: int = 4, encoder_layers: int = 2, decoder_layers: int = 2, dim_feedforward: int = 256
) -> nn.Module:
    """PyTorch's ``nn.Transformer`` (encoder-decoder), batch_first."""
    return nn.Transformer(d_model, nhead, encoder_layers, decoder_layers, dim_feedforward, batch_first=True)


def dense_decoder(
    layers: int = 4,
    hidden: int = 256,
    heads: int = 8,
    kv_heads: int = 2,
    intermediate: int = 688,
    vocab: int = 2048,
    dtype: str = "bfloat16",
    tie: bool = True,
) -> nn.Module:
    """A Llama/Qwen-style dense decoder (grouped-query attention, gated MLP, RMSNorm, rotary)."""
    return _gqa_decoder(layers, hidden, heads, kv_heads, vocab, dtype, tie, partial(MLP, hidden, intermediate))


def moe_decoder(
    layers: int = 2,
    hidden: int = 128,
    heads: int = 4,
    kv_heads: int = 2,
    experts: int = 64,
    expert_intermediate: int = 64,
    shared_experts: int = 1,
    vocab: int = 1024,
    dtype: str = "bfloat16",
    tie: bool = False,
) -> nn.Module:
    """A Qwen-MoE/Mixtral-style decoder: a router and many small experts per layer."""
    moe = partial(MoE, hidden, experts, expert_intermediate, shared_experts)  # MoE(..., dtype)
    return _gqa_decoder(layers, hidden, heads, kv_heads, vocab, dtype, tie, moe)


class LatentAttention(nn.Module):
    """DeepSeek-style multi-head latent attention: low-rank q and kv with their own norms."""

    def __init__(self, hidden: int, heads: int, q_rank: int, kv_rank: int, head_dim: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.q_a_proj = Linear(hidden, q_rank, dtype)
        self.q_a_layernorm = RMSNorm(q_rank, dtype)
        self.q_b_proj = Linear(q_rank, heads * head_dim, dtype)
        self.kv_a_proj_with_mqa = Linear(hidden, kv_rank + head_dim // 2, dtype)
        self.kv_a_layernorm = RMSNorm(kv_rank, dtype)
        self.kv_b_proj = Linear(kv_rank, heads * head_dim * 2, dtype)
        self.o_proj = Linear(heads * head_dim, hidden, dtype)
        self.rotary_emb = Rotary(head_dim // 2)


def deepseek_v4_like(
    layers: int = 2,
    dense_layers: int = 1,
    hidden: int = 256,
    heads: int = 4,
    experts: int = 16,
    expert_intermediate: int = 128,
    vocab: int = 2048,
    engram_rows: int = 4096,
    engram_tables: int = 2,
    engram_dim: int = 256,
    offload_engram: bool = True,
    dtype: str = "bfloat16",
) -> nn.Module:
    """A DeepSeek-V4.1-like decoder: latent attention, fp8 experts with UE8M0 scales, Engram tables.

    With ``offload_engram`` the tables declare ``dummy_weight_value`` (1.0 and
    127) as vLLM does for CPU-offloaded tables, so the fill is a memset.
    """
    if not HAS_FP8:
        raise ValueError("this torch build has no float8_e4m3fn; the DeepSeek-like preset needs fp8")
    dt = _dtype(dtype)
    blocks: list[nn.Module] = []
    for index in range(layers):
        attn = LatentAttention(hidden, heads, hidden // 2, hidden // 4, hidden // heads, dt)
        mlp: nn.Module
        if index < dense_layers:
            mlp = MLP(hidden, 4 * hidden, dt, fp8=True)
        else:
            mlp = MoE(hidden, experts, expert_intermediate, 1, dt, fp8=True)
        blocks.append(DecoderLayer(attn, mlp, hidden, dt))
    model = CausalLM(blocks, vocab, hidden, dt, tie=False)
    model.model.engram = nn.ModuleList(
        EngramTable(engram_rows, engram_dim, device=torch.get_default_device(), declare_constant=offload_engram)
        for _ in range(engram_tables)
    )
    return model


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    build: Callable[..., nn.Module]

    def parameters(self) -> dict[str, Any]:
        return {p.name: p.default for p in inspect.signature(self.build).parameters.values()}


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("torch-transformer", "PyTorch's own torch.nn.Transformer (encoder-decoder)", torch_transformer),
        Preset("dense-decoder", "Llama/Qwen-like dense decoder, tied embedding", dense_decoder),
        Preset("moe-decoder", "Qwen-MoE/Mixtral-like decoder with many small experts", moe_decoder),
        Preset(
            "deepseek-v4-like", "DeepSeek-V4.1-like: latent attention, fp8 experts, Engram tables", deepseek_v4_like
        ),
    )
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise UsageError.for_field("preset", f"unknown preset {name!r}; choose from: {', '.join(PRESETS)}") from None


def preset_source(
    name: str, args: dict[str, Any], *, limits: BuildLimits | None = None, dtype: str = "auto"
) -> ModelSource:
    """The ModelSource for ``--preset NAME`` scaled by ``--model-arg`` values; ``dtype`` (``--dtype``, not auto): the
    preset's ``dtype`` argument, else (``torch-transformer``) torch's default dtype while it builds."""
    preset = get_preset(name)
    known = preset.parameters()
    unknown = sorted(set(args) - set(known))
    if unknown:
        choices = ", ".join(f"{k}={v!r}" for k, v in known.items())
        raise UsageError.for_field("model_args", f"preset {name!r} takes no {', '.join(unknown)}; it takes: {choices}")
    if dtype != "auto" and args.get("dtype", dtype) != dtype:
        raise UsageError.for_field("dtype", f"{dtype} and --model-arg dtype={args['dtype']} disagree; give one")
    args = {**args, "dtype": dtype} if dtype != "auto" and "dtype" in known else args
    merged = {**known, **args}
    shown = ", ".join(f"{k}={v}" for k, v in merged.items())
    return callable_source(
        f"preset {name}",
        preset.build,
        dict(args),
        source=f"preset:{name}",
        description=f"preset {name}: {preset.description} ({shown})",
        flag="--preset",
        options=merged,  # every argument the preset was built with, defaults included
        limits=limits,
        dtype=None if dtype == "auto" or "dtype" in known else getattr(torch, dtype),
    )
