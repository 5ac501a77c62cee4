"""Device bytes that are not weights but that vLLM 0.33 allocates on each rank at load, counted per rank.

The rotary cos/sin cache (``RotaryEmbedding.cos_sin_cache``, non-persistent: one per rank, as ``get_rope`` caches
instances; ``[positions, rotary_dim]`` in the model's dtype), the expert map (``ExpertMapManager``:
``determine_expert_map``, int32 per global expert per MoE layer, only under ep > 1) and the kv-cache scales
(``_init_kv_cache_quant``: four float32 scalars per attention layer). Only a transformers model (a config) says
what vLLM builds; a preset or a user's model gets none of these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

KV_SCALES = 4  # _k_scale, _v_scale, _q_scale, _prob_scale
SCALE_BYTES = 4  # float32
EXPERT_ID_BYTES = 4  # int32


@dataclass(frozen=True)
class LoadBuffers:
    """One rank's non-weight device bytes, and what could not be counted."""

    rotary_cache: int = 0
    expert_map: int = 0
    kv_scales: int = 0
    not_counted: str = ""  # e.g. "rotary cache of rope type ntk"

    @property
    def total(self) -> int:
        return self.rotary_cache + self.expert_map + self.kv_scales


def _rope(config: object) -> dict[str, object]:
    params = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    return dict(params) if isinstance(params, dict) else {}


def rope_positions(kind: str, rope: dict[str, object], max_position: int) -> int | None:
    """Rows of vLLM 0.33's cos/sin cache for ``get_rope``'s rope type (None: a type whose cache is not modelled):
    RotaryEmbedding and Llama3 ``max_position``; YaRN and DeepseekScaling ``ceil(original x factor)``;
    LinearScaling and DynamicNTKScaling ``ceil(max_position x factor)``; Phi3LongRoPE short + long caches."""
    factor = float(rope.get("factor", 1.0))  # type: ignore[arg-type]
    original = int(rope.get("original_max_position_embeddings", max_position))  # type: ignore[call-overload]
    if kind in ("default", "llama3") and "mrope_section" not in rope:
        return max_position
    if kind in ("yarn", "deepseek_yarn", "deepseek_llama_scaling") and "mrope_section" not in rope:
        return math.ceil(original * factor)
    if kind == "linear" or (kind == "dynamic" and "alpha" not in rope):
        return math.ceil(max_position * factor)
    return original + max_position if kind == "longrope" else None


def model_dtype(shard: nn.Module) -> torch.dtype:
    """The model's dtype as vLLM builds it: the embedding's (rotary caches are cast to it)."""
    floats = [(n, t.dtype) for n, t in shard.named_parameters() if t.is_floating_point()]
    embedded = [d for n, d in floats if n.endswith(("embed_tokens.weight", "wte.weight"))]
    return (embedded or [d for _, d in floats] or [torch.bfloat16])[0]


def load_buffers(config: object, shard: nn.Module, *, ep: int, experts: int) -> LoadBuffers:
    """What vLLM allocates beside the weights on the rank holding ``shard`` (that rank's module); ``config``: the
    model's transformers config (None: nothing is known, nothing counted); ``experts``: per MoE layer, all ranks."""
    if config is None:
        return LoadBuffers()
    names = [path.rpartition(".")[2] for path, _ in shard.named_modules()]
    attention = sum(name in ("self_attn", "attn") for name in names)
    moe_layers = sum(name == "experts" for name in names)
    dtype = model_dtype(shard)
    rotary, skipped = 0, ""
    if attention and any(name == "rotary_emb" for name in names):
        rope = _rope(config)
        kind = str(rope.get("rope_type", rope.get("type", "default")))
        heads = getattr(config, "num_attention_heads", 1) or 1
        head = getattr(config, "head_dim", None) or getattr(config, "hidden_size", 0) // heads
        partial = float(rope.get("partial_rotary_factor", getattr(config, "partial_rotary_factor", 1.0)))  # type: ignore[arg-type]
        rotary_dim = getattr(config, "qk_rope_head_dim", None) or int(head * partial)  # MLA: the rope part only
        positions = rope_positions(kind, rope, getattr(config, "max_position_embeddings", 8192))
        if positions is not None:
            rotary = positions * rotary_dim * dtype.itemsize
        else:
            skipped = f"rotary cache of rope type {kind}"
    return LoadBuffers(
        rotary_cache=rotary,
        expert_map=moe_layers * int(experts) * EXPERT_ID_BYTES if ep > 1 else 0,
        kv_scales=attention * KV_SCALES * SCALE_BYTES,
        not_counted=skipped,
    )
