"""Which rule splits each tensor: the model's declared plan where it has one, vLLM's layer names elsewhere.

transformers models declare their tensor-parallel intent (``model._tp_plan``, built from
``config.base_model_tp_plan`` and the class's own ``_tp_plan``; ``_ep_plan`` likewise), as
module-path patterns mapped to styles (``colwise``, ``rowwise``, ``packed_colwise``,
``embedding_rowwise``, ``moe_tp_experts`` ...). Where a model declares nothing for a tensor
(presets, user models, DeepSeek-V3's latent attention), the rule comes from the layer vLLM
builds for a module of that name (``q_proj`` is a column of ``QKVParallelLinear``, ``o_proj``
a ``RowParallelLinear`` ...); anything else is replicated, as vLLM replicates norms, routers
and small tensors. Where vLLM's layout differs from a declared plan (fused q/k/v, merged
gate/up, padded vocabulary) the shards follow vLLM: see docs/deployments.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from dummyprof.anatomy import qualified_name

REPLICATED = "replicated"  # every rank of the stage holds it whole
COLUMN = "column"  # output dimension split by tp (ColumnParallelLinear)
KV_COLUMN = "kv-column"  # k/v heads split by tp; once tp > kv heads, one head per rank (replicated tp / kv times)
ROW = "row"  # input dimension split by tp (RowParallelLinear); a row bias is replicated
VOCAB = "vocab"  # rows padded to a multiple of 64, then split by tp (VocabParallelEmbedding, ParallelLMHead)
EXPERTS_COLUMN = "experts-column"  # experts divided by ep; each expert's output dimension by the MoE tp
EXPERTS_ROW = "experts-row"  # experts divided by ep; each expert's input dimension by the MoE tp
ROWS = "rows"  # Engram tables: whole hash heads per tp x dp shard, vLLM's ParallelEngramEmbedding

DECLARED = "declared"  # the model's own plan (transformers' tp/ep plan)
VLLM = "vllm"  # vLLM's layer for a module of this name (the model declares nothing for it)
DEFAULT = "default"  # nothing declared, no vLLM layer by that name: replicated

# Module names vLLM builds as column- or row-parallel linears (Llama, Qwen, Mixtral, DeepSeek families).
_VLLM_COLUMN = frozenset(
    {"q_proj", "qkv_proj", "gate_proj", "up_proj", "gate_up_proj", "q_b_proj", "kv_b_proj", "w1", "w3"}
)
_VLLM_KV = frozenset({"k_proj", "v_proj"})
_VLLM_ROW = frozenset({"o_proj", "down_proj", "w2"})
_VLLM_VOCAB = frozenset({"embed_tokens", "lm_head", "wte"})
# transformers' Conv1D (GPT-2) holds [in, out]; vLLM builds these as linears, [out, in], split as named.
_CONV1D = {"c_attn": ("QKVParallelLinear", COLUMN), "c_fc": ("ColumnParallelLinear", COLUMN)}
_EXPERT_COLUMN_NAMES = ("gate_up", "w13", "gate", "up", "w1", "w3")
# vLLM fuses these sibling linears into one tensor: (fused module name, members in order).
FUSIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("qkv_proj", ("q_proj", "k_proj", "v_proj")),  # QKVParallelLinear
    ("gate_up_proj", ("gate_proj", "up_proj")),  # MergedColumnParallelLinear
    ("fused_qkv_a_proj", ("q_a_proj", "kv_a_proj_with_mqa")),  # DeepSeek MLA: MergedReplicatedLinear
)


# vLLM 0.33's text-generation architectures (its models/registry.py) by what a pipeline stage holds outside its
# decoder layers, read from each model's __init__ (or the model it subclasses): a part that is PPMissingLayer() off
# its stage is split (embedding first, final norm and head last); one built unconditionally is on every stage.
_EVERY_STAGE = """AliceAIForCausalLM BloomForCausalLM ChatGLMForConditionalGeneration ChatGLMModel Cohere2ForCausalLM
Cohere2MoeForCausalLM CohereForCausalLM DbrxForCausalLM DoryForCausalLM FalconForCausalLM FalconMambaForCausalLM
GPT2LMHeadModel GPTJForCausalLM Gemma2ForCausalLM Gemma3ForCausalLM Gemma3nForCausalLM Gemma4ForCausalLM
GemmaForCausalLM GptOssForCausalLM GraniteMoeForCausalLM GraniteMoeHybridForCausalLM GraniteMoeSWAForCausalLM
GraniteMoeSharedForCausalLM HCXVisionV2ForCausalLM HYV3ForCausalLM HrmTextForCausalLM IQuestLoopCoderForCausalLM
InternLM2ForCausalLM JambaForCausalLM K2HorizonForCausalLM Mamba2ForCausalLM MambaForCausalLM MiniCPM3ForCausalLM
MiniCPMForCausalLM MixtralForCausalLM MuseGlimmerForCausalLM NemotronHForCausalLM NemotronHPuzzleForCausalLM
OPTForCausalLM OlmoHybridForCausalLM OlmoeForCausalLM OrionForCausalLM PhiMoEForCausalLM Plamo3ForCausalLM
Qwen2MoeForCausalLM Qwen3MoeForCausalLM Rnj1ForCausalLM StableLmForCausalLM Zamba2ForCausalLM"""
_FIRST_LAST = """AXK1ForCausalLM AfmoeForCausalLM BailingMoeV2_5ForCausalLM BailingMoeV3ForCausalLM DeepseekForCausalLM
DeepseekV2ForCausalLM DeepseekV3ForCausalLM Ernie4_5_MoeForCausalLM FalconH1ForCausalLM Glm4MoeForCausalLM
Glm4MoeLiteForCausalLM LongcatFlashForCausalLM LongcatFlashNgramForCausalLM MiniMaxM2ForCausalLM
MistralLarge3ForCausalLM"""
_FIRST_LAST_TIED = """ApertusForCausalLM BailingMoeForCausalLM BailingMoeV2ForCausalLM DeciLMForCausalLM
DomynEdgeForCausalLM Ernie4_5ForCausalLM Exaone4ForCausalLM ExaoneForCausalLM ExaoneMoEForCausalLM
ExaoneMoeForCausalLM Glm4ForCausalLM GraniteForCausalLM GraniteSWAForCausalLM HyperCLOVAXForCausalLM
IQuestCoderForCausalLM InternLM3ForCausalLM LLaMAForCausalLM LagunaForCausalLM Llama4ForCausalLM LlamaForCausalLM
MiMoForCausalLM MiMoV2FlashForCausalLM MiMoV2ForCausalLM Ministral3ForCausalLM MistralForCausalLM
NemotronForCausalLM PanguEmbeddedForCausalLM PanguProMoEV2ForCausalLM PanguUltraMoEForCausalLM Param2MoEForCausalLM
Phi3ForCausalLM Qwen2ForCausalLM Qwen3ForCausalLM SarvamMLAForCausalLM SarvamMoEForCausalLM SolarForCausalLM
Step1ForCausalLM Step3TextForCausalLM Step3p5ForCausalLM TeleChat2ForCausalLM TeleChat3ForCausalLM
TeleFLMForCausalLM"""
_PARTLY_SPLIT = {  # only these parts are split; the rest is on every stage
    "Qwen3NextForCausalLM": ("norm",),
    "Qwen3_5ForCausalLM": ("norm", "head"),
    "Qwen3_5MoeForCausalLM": ("norm", "head"),
    "Lfm2ForCausalLM": ("head",),
    "Lfm2MoeForCausalLM": ("head",),
}
EMBED, NORM, HEAD = "embed", "norm", "head"

# vLLM 0.33 classes that build their shared experts whole (``disable_tp``) under sequence-parallel MoE: they pass
# ``parallel_config.use_sequence_parallel_moe`` to the shared expert's MLP (deepseek_v2.py DeepseekV2MoE, which
# DeepSeek V1-V3.2, GLM-MoE-DSA, Mistral Large 3 and dots3 build; AXK1.py; qwen3_next.py Qwen3NextSparseMoeBlock, which
# Qwen3.5-MoE reuses; llama4.py; nemotron_h.py; openpangu.py; interns2_mobius.py; DeepSeek-V4's and GLM-5-Next's own
# MoE). The others (Qwen2-MoE, Qwen3-MoE, GLM-4-MoE, ...) split their shared experts over tp in every layout.
_SHARED_WHOLE = """AXK1ForCausalLM DeepseekForCausalLM DeepseekV2ForCausalLM DeepseekV3ForCausalLM
DeepseekV32ForCausalLM DeepseekV4ForCausalLM DeepseekV4ForConditionalGeneration Dots3NoteForCausalLM
Glm5NextForCausalLM Glm5NextForConditionalGeneration GlmMoeDsaForCausalLM InternS2MobiusForConditionalGeneration
Llama4ForCausalLM Llama4ForConditionalGeneration MistralLarge3ForCausalLM NemotronHForCausalLM
NemotronHPuzzleForCausalLM PanguProMoEV2ForCausalLM PanguUltraMoEForCausalLM Qwen3NextForCausalLM
Qwen3_5MoeForCausalLM Qwen3_5MoeForConditionalGeneration"""
SHARED_EXPERTS_WHOLE_UNDER_SP = frozenset(_SHARED_WHOLE.split())


@dataclass(frozen=True)
class StageRule:
    """What a pipeline stage holds outside its layers, for one architecture (vLLM 0.33's model classes)."""

    architecture: str
    split: tuple[str, ...]  # parts held by their own stage only (embed: first; norm, head: last); others on every stage
    tied_on_last: bool  # the embedding also on the last stage when it is tied to the head
    known: bool  # False: not in the table; vLLM's Llama rule applied

    @classmethod
    def of(cls, model: nn.Module) -> StageRule:
        config = getattr(model, "config", None)
        names = getattr(config, "architectures", None) or [type(model).__name__]
        arch = str(names[0])
        if arch in _EVERY_STAGE.split():
            return cls(arch, (), False, True)
        if arch in _PARTLY_SPLIT:
            return cls(arch, _PARTLY_SPLIT[arch], False, True)
        if arch in _FIRST_LAST.split():
            return cls(arch, (EMBED, NORM, HEAD), False, True)
        return cls(arch, (EMBED, NORM, HEAD), True, arch in _FIRST_LAST_TIED.split())


@dataclass(frozen=True)
class Placement:
    """How one tensor of the whole model is split, and where the rule came from."""

    name: str
    rule: str
    source: str  # DECLARED, VLLM or DEFAULT
    style: str  # the declared style word, or the vLLM layer followed
    scale_of: str | None = None  # a block-scale tensor: the local name of the weight whose split it follows
    experts_first: bool = False  # dimension 0 indexes the experts (one tensor for all of them, as FusedMoE holds)
    transposed: bool = False  # held [..., in, out] (Conv1D, gpt-oss experts); the shard holds [..., out, in]
    heads: int | None = None  # an Engram table's hash heads (None: one per shard, as the engram command's default)


@dataclass(frozen=True)
class ModelDims:
    """The few config numbers a split needs beyond the shapes: attention and kv heads."""

    heads: int | None = None
    kv_heads: int | None = None

    @classmethod
    def of(cls, model: nn.Module, options: dict[str, Any] | None = None) -> ModelDims:
        """From a transformers model's ``config`` (``num_attention_heads``, ``num_key_value_heads``), else a
        preset's options (``heads``, ``kv_heads``); unknown heads leave k/v split as plain columns."""
        config = getattr(model, "config", None)
        if config is not None:
            heads = getattr(config, "num_attention_heads", None)
            kv = getattr(config, "num_key_value_heads", None) or heads
            return cls(heads if isinstance(heads, int) else None, kv if isinstance(kv, int) else None)
        opts = options or {}
        heads, kv = opts.get("heads"), opts.get("kv_heads")
        return cls(heads if isinstance(heads, int) else None, kv if isinstance(kv, int) else heads)


def _pattern(key: str) -> re.Pattern[str]:
    return re.compile(re.escape(key).replace(r"\*", r"[^.]+") + r"$")


def declared_plan(model: nn.Module, kind: str) -> dict[str, str]:
    """The model's declared ``kind`` plan ("tp" or "ep") with full module paths, or {} when it has none.

    transformers puts the merged plan on the instance (``model._tp_plan``); a config that carries
    ``base_model_tp_plan`` on a model without it is read with the model's ``base_model_prefix``.
    """
    plan = getattr(model, f"_{kind}_plan", None)
    if isinstance(plan, dict) and plan:
        return {str(k): str(v) for k, v in plan.items()}
    config = getattr(model, "config", None)
    base = getattr(config, f"base_model_{kind}_plan", None)
    if isinstance(base, dict) and base:
        prefix = getattr(model, "base_model_prefix", "")
        if not (prefix and isinstance(getattr(model, prefix, None), nn.Module)):
            prefix = ""
        return {qualified_name(prefix, str(k)): str(v) for k, v in base.items()}
    return {}


def _style_rule(style: str, tensor: torch.Tensor, module_name: str) -> str:
    """A declared style word as one of this module's rules."""
    if style in ("embedding_rowwise", "colwise_gather_output") or module_name in _VLLM_VOCAB:
        return VOCAB
    if "colwise" in style:
        return KV_COLUMN if module_name in _VLLM_KV else COLUMN
    if "rowwise" in style:
        return ROW if tensor.dim() >= 2 else REPLICATED
    return REPLICATED


def _expert_rule(local: str, module_name: str) -> str:
    """Inside an experts block: gate/up (w1, w3, w13) split their output dimension, down (w2) its input."""
    name = local if local not in ("weight", "bias") else module_name
    return EXPERTS_COLUMN if name.startswith(_EXPERT_COLUMN_NAMES) else EXPERTS_ROW


class Planner:
    """Placements for every tensor of one whole model, and the sibling linears vLLM fuses."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.tp_plan = [(_pattern(k), v) for k, v in declared_plan(model, "tp").items()]
        self.ep_plan = [(_pattern(k), v) for k, v in declared_plan(model, "ep").items()]
        self.expert_lists: set[int] = set()  # ModuleLists of whole expert modules (one module per expert)
        self.placements: dict[tuple[str, str], Placement] = {}
        self.fusions: dict[int, list[tuple[str, tuple[str, ...]]]] = {}
        self.expert_counts: set[int] = set()  # experts per MoE block, each size once (empty: a dense model)
        self._walk()

    @property
    def experts(self) -> int:
        """Experts in the largest MoE block (0: a dense model)."""
        return max(self.expert_counts, default=0)

    def _declared(self, plan: list[tuple[re.Pattern[str], str]], *names: str) -> str | None:
        return next((style for name in names for pattern, style in plan if pattern.match(name)), None)

    def _walk(self) -> None:
        for path, module in self.model.named_modules():
            name = path.rpartition(".")[2]
            if name == "experts" and isinstance(module, nn.ModuleList):
                self.expert_lists.add(id(module))
                self.expert_counts.add(len(module))
            self._find_fusions(module)
            in_experts = ".experts." in f".{path}." or name == "experts"
            for local, tensor in (*module._parameters.items(), *module._buffers.items()):
                if tensor is not None:
                    place = self._place(path, name, local, tensor, module, in_experts)
                    self.placements[(path, local)] = place
                    if place.experts_first and tensor.dim():
                        self.expert_counts.add(tensor.shape[0])

    def _find_fusions(self, module: nn.Module) -> None:
        for fused, members in FUSIONS:
            linears = [c for m in members if (c := module._modules.get(m)) is not None and _plain_linear(c)]
            if len(linears) < len(members) or fused in module._modules:
                continue
            # only siblings alike fuse: one dtype, one input width, a bias on all or on none
            weights = [w for c in linears if (w := c._parameters["weight"]) is not None]
            biases = {c._parameters.get("bias") is None for c in linears}
            if len({(w.dtype, w.shape[1]) for w in weights}) == 1 and len(biases) == 1:
                self.fusions.setdefault(id(module), []).append((fused, members))

    def _expert_placement(
        self, full: str, path: str, name: str, local: str, tensor: torch.Tensor, module: nn.Module
    ) -> Placement:
        """A tensor of a fused-MoE layer: the plans' declared styles (tp and ep), else vLLM's ``FusedMoE``."""
        ep_style = self._declared(self.ep_plan, full, path)
        tp_style = self._declared(self.tp_plan, full, path)
        style = "; ".join(f"{k} {v}" for k, v in (("tp", tp_style), ("ep", ep_style)) if v)
        return Placement(
            full,
            _expert_rule(local, name),
            DECLARED if style else VLLM,
            style or "FusedMoE",
            experts_first=name == "experts",
            transposed=bool(getattr(module, "is_transposed", False)) and tensor.dim() == 3,  # gpt-oss: [E, in, out]
        )

    def _place(
        self, path: str, name: str, local: str, tensor: torch.Tensor, module: nn.Module, in_experts: bool
    ) -> Placement:
        full = qualified_name(path, local)
        held = module._parameters.get("weight")
        if "scale" in local and local != "weight" and isinstance(held, torch.Tensor):
            weight = self._place(path, name, "weight", held, module, in_experts)
            return Placement(full, weight.rule, weight.source, weight.style, scale_of="weight", heads=weight.heads)
        if any(part.startswith("engram") for part in path.split(".")):
            heads = getattr(module, "heads", None)
            return Placement(
                full, ROWS, VLLM, "ParallelEngramEmbedding", heads=heads if isinstance(heads, int) else None
            )
        if in_experts:
            return self._expert_placement(full, path, name, local, tensor, module)
        if type(module).__name__ == "Conv1D" and name in (*_CONV1D, "c_proj"):
            style, rule = _CONV1D.get(name, ("RowParallelLinear", ROW))
            if tensor.dim() < 2:  # a column bias splits with its outputs; a row bias is whole on every rank
                rule = COLUMN if rule == COLUMN else REPLICATED
            return Placement(full, rule, VLLM, style, transposed=tensor.dim() == 2)
        if local == "sinks" and tensor.dim() == 1:  # gpt-oss: one per attention head, the rank's heads (vLLM)
            return Placement(full, COLUMN, VLLM, "attention sinks")
        declared = self._declared(self.tp_plan, full, path)
        if declared is not None:
            return Placement(full, _style_rule(declared, tensor, name), DECLARED, declared)
        if name in _VLLM_VOCAB and tensor.dim() == 2:
            return Placement(full, VOCAB, VLLM, "VocabParallelEmbedding")
        if name in _VLLM_KV:
            return Placement(full, KV_COLUMN, VLLM, "QKVParallelLinear")
        if name in _VLLM_COLUMN:
            return Placement(full, COLUMN, VLLM, "ColumnParallelLinear")
        if name in _VLLM_ROW:  # a row bias is replicated
            return Placement(full, ROW if tensor.dim() >= 2 else REPLICATED, VLLM, "RowParallelLinear")
        return Placement(full, REPLICATED, DEFAULT, "replicated")


def _plain_linear(module: nn.Module) -> bool:
    """A leaf holding a 2-D ``weight`` and at most a ``bias``: what vLLM can fuse with its siblings."""
    weight = module._parameters.get("weight")
    own = {k for k, v in (*module._parameters.items(), *module._buffers.items()) if v is not None}
    return isinstance(weight, torch.Tensor) and weight.dim() == 2 and own <= {"weight", "bias"} and not module._modules
