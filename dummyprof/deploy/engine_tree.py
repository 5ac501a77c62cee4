"""A rank's shard given the module tree vLLM 0.33 builds for a transformers model, where it holds more than the weights.

A shard mirrors transformers' module tree with the weights vLLM holds (``shards.py``, ``quant.py``). vLLM's own
classes differ in what its dummy loader meets while it walks them (``tests/data/vllm_goldens/``, recorded from
vLLM itself by ``benchmarks/vllm_goldens.py``; docs/engine-goldens.md):

- **kv-cache scales**: each attention layer's ``Attention`` (a child ``attn`` of the attention module; DeepSeek's
  latent attention: ``mla_attn.mla_attn``) registers four float32 scalar buffers, ``_k_scale``, ``_v_scale``,
  ``_q_scale``, ``_prob_scale``, persistent, so the per-layer fill draws them (uniform) and every ancestor's
  ``state_dict()`` lists them (``load_buffers.py`` counts their bytes as load buffers, not weights);
- **norms declare their value**: vLLM's ``RMSNorm`` sets ``dummy_weight_value`` 1.0 on its weight
  (``GemmaRMSNorm``: 0.0), so the loader fills the constant where transformers' norms would be drawn at random;
- **aliases**: DeepSeek's ``MultiHeadLatentAttentionWrapper`` registers the attention's linears and norms again
  under ``mla_attn``, and its ``MLAAttention`` the ``kv_b_proj``; the fused MoE (``MoERunner``) nests the routed
  experts one module deeper (``experts.routed_experts``), registers the model's router under it too
  (``experts.gate``, for the architectures in ``ROUTER_IN_RUNNER``), the shared expert
  (``experts._shared_experts._layer``; Qwen-MoE's shared MLP holds ``shared_expert_gate`` again as
  ``expert_gate``) and the router's ``e_score_correction_bias``
  (``routed_experts.e_score_correction_bias``). ``model.modules()`` meets an aliased module once, so the
  per-layer fill visits it once; each parent's recursive ``state_dict()`` lists it, so the recursive (legacy) fill
  visits it once per parent path.

Only the tree changes: the shard's ``tensors`` (its weights, bytes held) stay what they are. A preset or a user's
model has no config saying what vLLM builds, and is left as it is.
"""

from __future__ import annotations

import torch
from torch import nn

KV_SCALE_NAMES = ("_k_scale", "_v_scale", "_q_scale", "_prob_scale")  # Attention._init_kv_cache_quant
ATTENTION = ("self_attn", "attn")  # transformers' names for a decoder layer's attention module
# vLLM 0.33 classes that pass their router to FusedMoEFactory(gate=...): MoERunner registers it again as ``gate``
ROUTER_IN_RUNNER = frozenset(
    {"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM"}
)
SHARED = ("shared_experts", "shared_expert")  # transformers' names of a MoE block's shared expert
MLA_ALIASED = ("fused_qkv_a_proj", "q_a_layernorm", "q_proj", "q_b_proj", "kv_a_layernorm", "kv_b_proj", "o_proj")


def _norm_value(module: nn.Module) -> float | None:
    """The constant vLLM's norm declares for its weight, for a transformers norm class; None: not a norm vLLM
    builds as its own ``RMSNorm``."""
    name = type(module).__name__
    if not name.endswith("RMSNorm"):
        return None
    return 0.0 if name.startswith("Gemma") else 1.0


def _child(parent: nn.Module, name: str) -> nn.Module:
    """``parent``'s child ``name``, made empty where it is not there yet (another rule may have made it)."""
    child = parent._modules.get(name)
    if child is None:
        child = nn.Module()
        parent.add_module(name, child)
    return child


def _add_scales(attention: nn.Module, device: torch.device) -> None:
    if "kv_b_proj" in attention._modules:  # DeepSeek's latent attention: the wrapper, then MLAAttention
        wrapper = _child(attention, "mla_attn")
        for name in MLA_ALIASED:
            if name in attention._modules and name not in wrapper._modules:
                wrapper.add_module(name, attention._modules[name])
        if "mla_attn" not in wrapper._modules:  # a KV-cache method's tensors, put on ``attn`` by the rewrite, go there
            wrapper.add_module("mla_attn", attention._modules.pop("attn", None) or nn.Module())
        inner = _child(wrapper, "mla_attn")
        inner.add_module("kv_b_proj", attention._modules["kv_b_proj"])
    else:
        inner = _child(attention, "attn")
    for name in KV_SCALE_NAMES:
        if name not in inner._buffers:
            inner.register_buffer(name, torch.empty((), dtype=torch.float32, device=device))


def _nest_experts(block: nn.Module, architecture: str) -> None:
    """``block.experts`` (the fused experts' tensors) as vLLM's ``MoERunner``: the tensors one module deeper, the
    router and the shared expert registered under it again."""
    experts = block._modules["experts"]
    assert experts is not None
    runner = nn.Module()
    gate = block._modules.get("gate")
    if gate is not None and architecture in ROUTER_IN_RUNNER:
        runner.add_module("gate", gate)
    runner.add_module("routed_experts", experts)
    bias = getattr(gate, "e_score_correction_bias", None) if gate is not None else None
    if isinstance(bias, torch.Tensor) and "e_score_correction_bias" not in experts._parameters:
        if isinstance(bias, nn.Parameter):
            experts.register_parameter("e_score_correction_bias", bias)
        else:
            experts.register_buffer("e_score_correction_bias", bias)
    shared = next((block._modules[n] for n in SHARED if block._modules.get(n) is not None), None)
    shared_gate = block._modules.get("shared_expert_gate")
    if shared is not None and shared_gate is not None and "expert_gate" not in shared._modules:
        shared.add_module("expert_gate", shared_gate)  # Qwen2/3-MoE's shared MLP holds its gate (expert_gate)
    if shared is not None:
        wrapper = nn.Module()
        wrapper.add_module("_layer", shared)
        runner.add_module("_shared_experts", wrapper)
    block._modules["experts"] = runner
    # vLLM's MoE blocks register the router, the shared expert's gate, the shared expert, then the runner: the
    # first parent of an aliased module names it
    first = [n for n in ("gate", "shared_expert_gate", *SHARED, "experts") if n in block._modules]
    block._modules = {n: block._modules[n] for n in [*first, *(n for n in block._modules if n not in first)]}


def _holds_fused_experts(module: nn.Module) -> bool:
    return any(t is not None and t.dim() == 3 for t in (*module._parameters.values(), *module._buffers.values()))


def engine_tree(shard: nn.Module, whole: nn.Module, device: torch.device) -> None:
    """Give ``shard`` (one rank's module, cut from ``whole``) vLLM's tree as above, in place; new tensors on
    ``device``, unfilled. A model without a transformers config is left as it is."""
    config = getattr(whole, "config", None)
    if config is None:
        return
    architecture = (getattr(config, "architectures", None) or [type(whole).__name__])[0]
    shard_modules = dict(shard.named_modules())
    for path, module in whole.named_modules():
        value = _norm_value(module)
        target = shard_modules.get(path)
        if value is not None and target is not None:
            weight = target._parameters.get("weight")
            if weight is not None:
                weight.dummy_weight_value = value
    blocks = []
    for path, module in shard_modules.items():
        name = path.rsplit(".", 1)[-1]
        parent = path.rsplit(".", 1)[0] if "." in path else ""
        if name in ATTENTION and parent.rsplit(".", 1)[-1].isdigit():  # a decoder layer's attention
            _add_scales(module, device)
        experts = module._modules.get("experts")
        if experts is not None and _holds_fused_experts(experts):
            blocks.append(module)
    for block in blocks:
        _nest_experts(block, architecture)
