"""Device bytes that are not weights but that vLLM 0.33 allocates on each rank at load, counted per rank.

The rotary cos/sin cache (``RotaryEmbedding.cos_sin_cache``, non-persistent: one per rank and distinct rope
parameter set, as ``get_rope`` caches instances; ``[positions, rotary_dim]`` in the model's dtype; dual-chunk
attention's five caches), the expert map (``ExpertMapManager``:
``determine_expert_map``, int32 per global expert per MoE layer, only under ep > 1) and the kv-cache scales
(``_init_kv_cache_quant``: four float32 scalars per attention layer). Only a transformers model (a config) says
what vLLM builds; a preset or a user's model gets none of these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from dummyprof.deploy.engine_tree import KV_SCALE_NAMES
from dummyprof.errors import UsageError
from dummyprof.models.hf_fields import MAX_DIMENSION

EXPERT_ID_BYTES = 4  # int32


@dataclass(frozen=True)
class LoadBuffers:
    """One rank's non-weight device bytes, and what could not be counted."""

    rotary_cache: int = 0
    expert_map: int = 0
    kv_scales: int = 0
    not_counted: str = ""  # e.g. "rotary cache of rope type ntk"


ALIASES = {"su": "longrope", "mrope": "default", "telechat3-yarn": "yarn", "deepseek_llama_scaling": "deepseek_yarn"}
PLAIN = ("default", "llama3", "ntk", "dynamic", "proportional")  # RotaryEmbedding's [max_position] rows
MROPE_ONCE = ("qwen3_vl", "qwen3_5")  # their attention passes mrope_positions_factor=1 (4 elsewhere)
FLOAT32 = ("GptOssForCausalLM", "DomynEdgeForCausalLM")  # their attention passes get_rope dtype=torch.float32
ROPE = "rope_scaling"  # where the config keeps the rope parameters (rope_parameters in newer transformers)
NOT_SIZED = {"mllama4": "the vision encoder's (complex64, patches)", "fope": "FoPE's (per-rank kv heads)"}


def _attr(config: object, name: str) -> Any:
    """``getattr`` or None; transformers raises for a per-layer attribute of a heterogeneous config (Gemma-4)."""
    try:
        return getattr(config, name, None)
    except Exception:  # AmbiguousGlobalPerLayerAttributeError
        return None


def _rope_sets(config: object, layers: set[int], head: int) -> list[tuple[dict[str, Any], int]]:
    """The distinct (rope parameters, head size) ``get_rope`` builds a cache for among the rank's layers: the
    parameters nested by layer type (Gemma-3, Gemma-4) are the layer's, the head size the layer's own
    (``per_layer_config``: Gemma-4's full-attention ``global_head_dim``); equal pairs share a cache."""
    params = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    params = dict(params) if isinstance(params, dict) else {}
    nested = bool(params) and all(isinstance(v, dict) or v is None for v in params.values())
    types, per = getattr(config, "layer_types", None) or [], _attr(config, "per_layer_config") or []
    out: dict[str, tuple[dict[str, Any], int]] = {}
    for i in sorted(layers) or [-1]:
        own = types[i] if 0 <= i < len(types) and nested and types[i] in params else None
        sets = [params[own]] if own else [v for v in params.values() if v] if nested else [params]
        size = (_attr(per[i], "head_dim") if 0 <= i < len(per) else None) or head
        out.update({repr((sorted(r.items()), size)): (dict(r), size) for r in sets})
    return list(out.values())


def _deepseek_v4_sets(config: Any, layers: set[int], head: int) -> list[tuple[dict[str, Any], int]]:
    """DeepSeek-V4 (``build_deepseek_v4_rope``): per layer, ``compress_rates[layer_type]`` > 1 takes the
    ``compress`` parameters at ``compress_rope_theta`` (YaRN unless ``default``), else plain positions (factor 1)
    at ``rope_theta``; always ``deepseek_yarn``, float32, ``qk_rope_head_dim`` wide; MTP layers ratio 1."""
    params, types, out = config.rope_parameters, config.layer_types, {}
    nested = isinstance(params.get("main"), dict) and isinstance(params.get("compress"), dict)
    for i in sorted(layers):
        ratio = max(1, config.compress_rates.get(types[i], 0)) if i < config.num_hidden_layers else 1
        rope = dict(params["compress" if ratio > 1 else "main"] if nested else params)
        theta = config.compress_rope_theta if ratio > 1 else getattr(config, "rope_theta", rope.get("rope_theta"))
        if ratio == 1 or rope.get("rope_type", "default") == "default":
            rope.update(factor=1.0, original_max_position_embeddings=config.max_position_embeddings)
        rope.update(rope_type="deepseek_yarn", rope_theta=theta, is_deepseek_v4=True, rope_dim=config.qk_rope_head_dim)
        out[repr(sorted(rope.items()))] = (rope, head)
    return list(out.values())


def rope_positions(
    kind: str, rope: dict[str, Any], max_position: int, *, mrope_factor: int = 4, dual_chunk: object = None
) -> int | None:
    """Rows of vLLM 0.33's cos/sin cache(s) for ``get_rope``'s rope type (None: not sized). Dual-chunk (any rope
    type): q, qc, qc_no_clamp, q_inter ``[chunk_size - local_size]`` + k ``[max_position]``; RotaryEmbedding, Llama3,
    NTK, DynamicNTK alpha and factor (0.33 builds ``max_position`` rows for both), Gemma-4's proportional:
    ``max_position``; MRoPE ``max_position x mrope_positions_factor`` (openpangu, bailing: x 4); YaRN and
    DeepseekScaling ``ceil(original x factor)`` (YaRN MRoPE: ``original x mrope_positions_factor x factor``);
    LinearScaling: ``ceil(max_position x factor)`` per factor; Phi3LongRoPE: short + long caches."""
    max_position = _whole("max_position_embeddings", max_position)
    if isinstance(dual_chunk, dict):
        return _dual_chunk_rows(dual_chunk, max_position)
    kind = ALIASES.get(kind, kind)
    factor = rope.get("factor", 1.0)
    original = rope.get("original_max_position_embeddings")
    original = max_position if original is None else _whole(f"{ROPE}.original_max_position_embeddings", original)
    mrope = mrope_factor if "mrope_section" in rope and kind in ("default", "yarn") else 1  # others ignore it
    if kind in PLAIN and not rope.get("use_fope"):
        return max_position * mrope
    if kind in ("openpangu", "bailing_mrope"):
        return max_position * 4
    if kind in ("yarn", "deepseek_yarn"):
        return math.ceil(original * mrope * _factor(factor))
    if kind == "linear":
        return sum(math.ceil(max_position * _factor(f)) for f in (factor if isinstance(factor, list) else [factor]))
    return original + max_position if kind == "longrope" else None


def _refuse(field: str, value: Any, problem: str) -> UsageError:
    return UsageError.for_field("model", f"the config's {field} {value!r} {problem}; correct it in the config")


def _whole(field: str, value: Any, *, low: int = 1) -> int:
    """A rotary field that counts positions or channels: a whole number (a float only when whole), at least ``low``."""
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole:
        raise _refuse(field, value, "is not a whole number")
    if not low <= value <= MAX_DIMENSION:
        raise _refuse(field, value, f"is not a whole number from {low} to {MAX_DIMENSION:,}")
    return int(value)


def _fraction(field: str, value: Any) -> float:
    """``partial_rotary_factor``: the share of each head rotated, above 0 and at most 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise _refuse(field, value, "is not a share above 0 and at most 1")
    return float(value)


def _dual_chunk_rows(dual_chunk: dict[str, Any], max_position: int) -> int | None:
    """q, qc, qc_no_clamp, q_inter ``[chunk_size - local_size]`` + k ``[max_position]`` (None: not sized)."""
    chunk, local = dual_chunk.get("chunk_size"), dual_chunk.get("local_size")
    if not chunk or local is None:
        return None
    chunk = _whole("dual_chunk_attention_config.chunk_size", chunk)
    local = _whole("dual_chunk_attention_config.local_size", local, low=0)
    if local > chunk:
        raise _refuse(
            "dual_chunk_attention_config.local_size",
            local,
            f"is larger than its chunk_size {chunk} (each chunk holds it)",
        )
    return 4 * (chunk - local) + max_position


def _factor(value: Any) -> float:
    """A rope scaling factor of the config, a positive number (a hand-edited NaN, 0 or -1 sizes no cache)."""
    try:
        factor = float(value)
    except (TypeError, ValueError):
        factor = math.nan
    if not (math.isfinite(factor) and factor > 0):
        raise UsageError.for_field(
            "model",
            f"the config's rope scaling factor {value!r} is not a positive number; set one above 0 in its rope_scaling",
        )
    return factor


def model_dtype(shard: nn.Module) -> torch.dtype:
    """The model's dtype as vLLM builds it: the embedding's (rotary caches are cast to it)."""
    floats = [(n, t.dtype) for n, t in shard.named_parameters() if t.is_floating_point()]
    embedded = [d for n, d in floats if n.endswith(("embed_tokens.weight", "wte.weight"))]
    return (embedded or [d for _, d in floats] or [torch.bfloat16])[0]


def _rotary_cache(config: object, shard: nn.Module, layers: set[int]) -> tuple[int, str]:
    """The bytes of the rotary cos/sin caches vLLM builds for the shard's attention ``layers``, and the rope type
    whose cache is not sized ('' when every one is)."""
    text = getattr(config, "text_config", None) or config
    heads = getattr(text, "num_attention_heads", 1) or 1
    head = _attr(text, "head_dim") or getattr(text, "hidden_size", 0) // heads
    dtype = model_dtype(shard)
    mrope = 1 if str(getattr(config, "model_type", "")).startswith(MROPE_ONCE) else 4
    v4 = str(getattr(config, "model_type", "")) == "deepseek_v4"
    rotary, skipped = 0, ""
    for rope, size in (_deepseek_v4_sets if v4 else _rope_sets)(text, layers, head):
        kind = str(rope.get("rope_type", rope.get("type", "default")))
        partial = _fraction(
            "partial_rotary_factor", rope.get("partial_rotary_factor", _attr(text, "partial_rotary_factor") or 1.0)
        )
        size = _whole("head_dim", size)
        if rope.get("rope_dim") is not None:
            rotary_dim = _whole(f"{ROPE}.rope_dim", rope["rope_dim"])
        elif _attr(text, "qk_rope_head_dim"):
            rotary_dim = _whole("qk_rope_head_dim", _attr(text, "qk_rope_head_dim"))
        else:
            rotary_dim = int(size * partial)
        width = size if kind == "proportional" else rotary_dim
        dual = getattr(text, "dual_chunk_attention_config", None)
        rows = rope_positions(
            kind, rope, getattr(text, "max_position_embeddings", 8192), mrope_factor=mrope, dual_chunk=dual
        )
        f32 = rope.get("is_deepseek_v4")  # DeepseekV4ScalingRotaryEmbedding registers its cache float32
        itemsize = 4 if f32 or set(getattr(config, "architectures", None) or ()) & set(FLOAT32) else dtype.itemsize
        if rows is None:
            why = NOT_SIZED.get("fope" if rope.get("use_fope") else kind, "")
            skipped = f"rotary cache of rope type {kind}" + (f": {why}" if why else "")
        else:
            rotary += rows * width * itemsize
    return rotary, skipped


def load_buffers(config: object, shard: nn.Module, *, ep: int, experts: int) -> LoadBuffers:
    """What vLLM allocates beside the weights on the rank holding ``shard`` (that rank's module); ``config``: the
    model's transformers config (None: nothing is known, nothing counted); ``experts``: per MoE layer, all ranks."""
    if config is None:
        return LoadBuffers()
    paths = [path.split(".") for path, _ in shard.named_modules()]
    names = [parts[-1] for parts in paths]
    # an attention layer is a ``self_attn`` (or GPT-2's ``attn``); a quantized shard's ``self_attn.attn`` holds its
    # KV-cache method's tensors and is the same layer
    attention = sum(p[-1] == "self_attn" or (p[-1] == "attn" and p[-2:-1] != ["self_attn"]) for p in paths)
    moe_layers = sum(name == "experts" for name in names)
    layers = {int(p[-2]) for p in paths if p[-1] in ("self_attn", "attn") and len(p) > 1 and p[-2].isdigit()}
    rotary, skipped = 0, ""
    if attention and any(name == "rotary_emb" for name in names):
        rotary, skipped = _rotary_cache(config, shard, layers)
    if rotary >= 2**63:  # no device holds it, and a results file cannot say it
        raise UsageError.for_field(
            "model",
            f"the config's rotary cos/sin cache is {rotary:.3g} bytes, beyond int64; lower its rope_scaling factor",
        )
    return LoadBuffers(
        rotary_cache=rotary,
        expert_map=moe_layers * int(experts) * EXPERT_ID_BYTES if ep > 1 else 0,
        kv_scales=sum(
            b.nbytes for m in shard.modules() for n, b in m._buffers.items() if n in KV_SCALE_NAMES and b is not None
        ),
        not_counted=skipped,
    )
