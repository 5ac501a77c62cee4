"""Quantized checkpoints: the tensors vLLM 0.33 creates per rank for a checkpoint's ``quantization_config``.

vLLM builds a quantized linear or fused-MoE layer through its method's ``create_weights``, with
the sizes one rank holds (``output_partition_sizes``, ``input_size_per_partition``). Here the same
rules run on a rank's shard (``deploy/shards.py``) after it is cut: each linear weight becomes the
method's tensors (fp8 weight and scales; packed int4 and its scales, zeros and indices ...), each
fused-MoE pair becomes ``w13_*``/``w2_*``. What stays unquantized is vLLM's rule: embeddings, the
head, router gates (built with ``quant_config=None``), norms, biases, and what the config excludes.
The methods and their vLLM sources are listed in docs/deployments.md ("Quantized checkpoints").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from dummyprof.anatomy import dtype_name, qualified_name
from dummyprof.errors import UsageError
from dummyprof.models.source import ModelSource

if TYPE_CHECKING:
    from dummyprof.deploy.shards import RankShard, ShardTensor  # shards imports this module

AUTO, NONE = "auto", "none"
FLAG = "quantization"
FP8 = getattr(torch, "float8_e4m3fn", torch.uint8)
E8M0 = getattr(torch, "float8_e8m0fnu", torch.uint8)
F32 = torch.float32
# Modules vLLM builds without a quantization method whatever the config says.
_NEVER = ("embed", "lm_head", "norm")
_ROUTERS = ("gate", "router")
# transformers' fused expert tensors -> vLLM's FusedMoE names
_EXPERT_NAMES = {"gate_up_proj": "w13", "down_proj": "w2"}
# Architectures whose vLLM model reads ``scale_fmt`` and builds UE8M0 (float8_e8m0fnu) fp8 block scales.
_E8M0_ARCHS = frozenset({"BailingMoeV3ForCausalLM"})

Made = list[tuple[str, tuple[int, ...], torch.dtype]]  # (local name, shape, dtype) a method creates


@dataclass(frozen=True)
class QuantScheme:
    """A checkpoint's quantization as vLLM reads it: the method and its config, with what the rules need."""

    method: str
    config: Mapping[str, Any]
    dtype: torch.dtype = torch.bfloat16  # the model's dtype (unquantized tensors, biases, float scales)
    hidden: int | None = None  # the model's hidden size: which dimension of a fused expert tensor is hidden
    architectures: tuple[str, ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        value = self.config.get(key, default)
        return default if value is None else value


def resolve_method(config: Mapping[str, Any] | None, flag: str) -> tuple[str | None, str | None]:
    """(method vLLM builds, notice) for the checkpoint's ``quantization_config`` and ``--quantization``.

    ``auto``: the config's method; ``none``: unquantized, said in a notice when the config has one;
    a method: it must be the config's (vLLM refuses a mismatch). A method not known here is refused.
    """
    found = str(config.get("quant_method", "")).lower() if config else None
    if flag == NONE:
        return None, (
            f"--quantization none: the checkpoint's {found} quantization is not applied; "
            "the model is counted unquantized"
            if found
            else None
        )
    method = found if flag == AUTO else flag
    if method is None:
        return None, None
    if found is not None and method != found:
        raise UsageError.for_field(
            FLAG,
            f"{method!r} does not match the config's quant_method {found!r} (vLLM refuses a mismatch); "
            "give --quantization auto or none",
        )
    if found is None:
        raise UsageError.for_field(
            FLAG,
            f"the model's config has no quantization_config, so there is no checkpoint layout for {method!r}; "
            "for vLLM's online fp8 path give --online-quant fp8",
        )
    if method not in METHODS:
        raise UsageError.for_field(
            FLAG,
            f"quantization method {method!r} is not known to dummyprof (known: {', '.join(METHODS)}); "
            "give --quantization none to count the model unquantized",
        )
    return method, None


def scheme_of(options: Mapping[str, Any] | None) -> QuantScheme | None:
    """The scheme :func:`engine_source` resolved into a source's options (``quantization``), else None."""
    found = (options or {}).get("quantization")
    if not isinstance(found, str) or found not in METHODS:
        return None
    opts = options or {}
    dtype = getattr(torch, str(opts.get("dtype", "bfloat16")), torch.bfloat16)
    return QuantScheme(
        method=found,
        config=dict(opts.get("quantization_config") or {}),
        dtype=dtype if isinstance(dtype, torch.dtype) else torch.bfloat16,
        hidden=opts.get("hidden_size"),
        architectures=tuple(opts.get("architectures") or ()),
    )


def quantizer_of(options: Mapping[str, Any] | None) -> ShardQuantizer | None:
    """What rewrites each shard of a source whose options carry a scheme (None: unquantized)."""
    scheme = scheme_of(options)
    return None if scheme is None else ShardQuantizer(scheme)


def engine_source(source: ModelSource, flag: str = AUTO) -> ModelSource:
    """``source`` as vLLM builds it with ``--quantization flag``: a quantized checkpoint becomes the engine's
    one-rank model (fused linears holding the method's tensors); deployments cut its ``whole`` model per rank.

    Unquantized (no ``quantization_config``, or ``none``), the source is returned as it is (with a notice for
    ``none`` on a quantized checkpoint).
    """
    from dummyprof.anatomy import largest_low_precision_elements, model_bytes
    from dummyprof.deploy.plan import ModelDims
    from dummyprof.deploy.shards import Sharder
    from dummyprof.layout import ParallelLayout

    method, notice = resolve_method(source.options.get("quantization_config"), flag)
    if notice:
        source.notes.append(notice)
    if method is None:
        return source
    options = {**source.options, "quantization": method}
    whole = source.build(torch.device("meta"))
    one = ParallelLayout()
    sharder = Sharder(whole, one, ModelDims.of(whole, options), quantizer_of(options))
    engine = sharder.build(one.coords()[0]).module
    return dataclasses.replace(
        source,
        description=f"{source.description}, {method} as vLLM builds it",
        build=lambda device: sharder.build(one.coords()[0], device).module,
        estimated_bytes=model_bytes(engine),
        options=options,
        largest_scratch_bytes=3 * largest_low_precision_elements(engine),
        whole=lambda: whole,
    )


# ---- which modules a method skips ---------------------------------------------------------
def _skipped(prefixes: list[str], ignored: list[str], match: Callable[[str, str], bool]) -> bool:
    """vLLM's ``is_layer_skipped``: a fused layer is skipped when its parts are; parts must agree."""
    hits = {any(match(p, rule) for rule in ignored) for p in prefixes}
    if len(hits) > 1:
        raise UsageError.for_field(
            FLAG, f"{', '.join(prefixes)} are fused by vLLM but only some are excluded by the config; vLLM refuses it"
        )
    return hits == {True}


def _exact(prefix: str, rule: str) -> bool:
    return prefix == rule


def _ct_match(prefix: str, rule: str) -> bool:
    """compressed-tensors ``ignore``: ``re:`` patterns match anywhere; plain names match the whole prefix."""
    return re.match(rule[3:], prefix) is not None if rule.startswith("re:") else prefix == rule


def _substring(prefix: str, rule: str) -> bool:
    return rule in prefix


def _gptq_dynamic(prefix: str, rules: Mapping[str, Any]) -> bool:
    """GPTQ ``dynamic``: a ``-:`` pattern that matches excludes the module from quantization."""
    return any(k.startswith("-:") and re.match(k[2:], prefix) for k in rules)


def excluded(scheme: QuantScheme, prefixes: list[str]) -> bool:
    """Whether the config keeps the module(s) at ``prefixes`` (vLLM names) unquantized."""
    method = scheme.method
    if method == "fp8":
        ignored = scheme.get("ignored_layers") or scheme.get("modules_to_not_convert", [])
        return _skipped(prefixes, list(ignored), _exact)
    if method == "compressed-tensors":
        return _skipped(prefixes, list(scheme.get("ignore", [])), _ct_match)
    if method == "gptq":
        dynamic = scheme.get("dynamic", {})
        return any(_gptq_dynamic(p, dynamic) for p in prefixes) or _skipped(
            prefixes, list(scheme.get("modules_to_not_convert", [])), _substring
        )
    if method in ("awq", "mxfp4"):
        return _skipped(prefixes, list(scheme.get("modules_to_not_convert", [])), _substring)
    return False


# ---- fp8 (vLLM fp8.py: Fp8LinearMethod, Fp8MoEMethod) --------------------------------------
def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _fp8_block(scheme: QuantScheme) -> tuple[int, int] | None:
    block = scheme.get("weight_block_size")
    return (int(block[0]), int(block[1])) if block else None


def fp8_linear(scheme: QuantScheme, out: int, inp: int, parts: int) -> Made:
    """``weight`` fp8 [out, in]; per tensor: ``weight_scale`` float32 [parts]; block: ``weight_scale_inv``
    [ceil(out / n), ceil(in / k)] (float32, or UE8M0 where vLLM reads ``scale_fmt``); static activations:
    ``input_scale`` float32 [parts]."""
    made: Made = [("weight", (out, inp), FP8)]
    block = _fp8_block(scheme)
    if block is None:
        made.append(("weight_scale", (parts,), F32))
    else:
        e8m0 = scheme.get("scale_fmt") == "ue8m0" and _E8M0_ARCHS.intersection(scheme.architectures)
        made.append(("weight_scale_inv", (_cdiv(out, block[0]), _cdiv(inp, block[1])), E8M0 if e8m0 else F32))
    if scheme.get("activation_scheme") == "static":
        made.append(("input_scale", (parts,), F32))
    return made


def fp8_moe(scheme: QuantScheme, experts: int, inter: int, hidden: int) -> Made:
    """``w13_weight`` fp8 [E, 2I, H], ``w2_weight`` [E, H, I]; scales per expert (and per w1/w3) or per block;
    static activations: ``w13_input_scale``/``w2_input_scale`` [E]."""
    made: Made = [("w13_weight", (experts, 2 * inter, hidden), FP8), ("w2_weight", (experts, hidden, inter), FP8)]
    block = _fp8_block(scheme)
    if block is None:
        made += [("w13_weight_scale", (experts, 2), F32), ("w2_weight_scale", (experts,), F32)]
    else:
        n, k = block
        made += [
            ("w13_weight_scale_inv", (experts, 2 * _cdiv(inter, n), _cdiv(hidden, k)), F32),
            ("w2_weight_scale_inv", (experts, _cdiv(hidden, n), _cdiv(inter, k)), F32),
        ]
    if scheme.get("activation_scheme") == "static":
        made += [("w13_input_scale", (experts,), F32), ("w2_input_scale", (experts,), F32)]
    return made


def _check_fp8_block(scheme: QuantScheme, name: str, out: int, inp: int, split_out: bool, split_in: bool) -> None:
    """vLLM's ``validate_fp8_block_shape``: a split dimension must be whole blocks on each rank."""
    block = _fp8_block(scheme)
    if block is None:
        return
    for split, size, step, what in ((split_in, inp, block[1], "input"), (split_out, out, block[0], "output")):
        if split and size % step:
            raise UsageError.for_field(
                "tp",
                f"{name}: {what} size per rank {size} is not a multiple of the fp8 block {step} "
                "(vLLM refuses it); choose a smaller tp",
            )


LinearRule = Callable[[QuantScheme, int, int, int], Made]
MoeRule = Callable[[QuantScheme, int, int, int], Made]
METHODS: dict[str, tuple[LinearRule, MoeRule]] = {"fp8": (fp8_linear, fp8_moe)}


# ---- applying a scheme to a shard -----------------------------------------------------------
def _module_prefix(member: str) -> str:
    return member.rpartition(".")[0]


class ShardQuantizer:
    """Rewrites a rank's shard (module and entries) into the tensors vLLM creates for ``scheme``."""

    def __init__(self, scheme: QuantScheme) -> None:
        self.scheme = scheme
        self.linear, self.moe = METHODS[scheme.method]

    def apply(self, shard: RankShard) -> None:
        entries = {e.name: i for i, e in enumerate(shard.tensors)}
        out: dict[int, list[ShardTensor]] = {}  # entry index -> what replaces it
        for path, module in shard.module.named_modules():
            name = path.rpartition(".")[2]
            weight = module._parameters.get("weight")
            if weight is not None and weight.dim() == 2 and self._linear_module(name, weight):
                index = entries[qualified_name(path, "weight")]
                self._linear(module, path, shard.tensors[index], index, out)
            experts = [k for k in _EXPERT_NAMES if isinstance(module._parameters.get(k), torch.Tensor)]
            if name == "experts" and len(experts) == 2:
                self._experts(module, path, shard.tensors, entries, out)
        tensors: list[ShardTensor] = []
        for i, entry in enumerate(shard.tensors):
            tensors.extend(out.get(i, [entry]))
        shard.tensors[:] = tensors

    def _linear_module(self, name: str, weight: torch.Tensor) -> bool:
        return weight.dtype.is_floating_point and not any(w in name for w in _NEVER) and name not in _ROUTERS

    def _linear(self, module: nn.Module, path: str, entry: ShardTensor, index: int, out: dict[int, Any]) -> None:
        if excluded(self.scheme, [_module_prefix(m) for m in entry.members]):
            return
        weight = module._parameters["weight"]
        assert weight is not None
        rows, cols = weight.shape
        # the last part of a merged layer may end mid-block; a tp-split output must be whole blocks
        _check_fp8_block(self.scheme, path, rows, cols, "column" in entry.rule, entry.rule == "row")
        made = self.linear(self.scheme, rows, cols, len(entry.members))
        del module._parameters["weight"]
        out[index] = self._register(module, path, entry, made, weight.device)

    def _experts(
        self, module: nn.Module, path: str, tensors: list[ShardTensor], entries: dict[str, int], out: dict[int, Any]
    ) -> None:
        if excluded(self.scheme, [path]):
            return
        up = module._parameters["gate_up_proj"]
        down = module._parameters["down_proj"]
        assert up is not None and down is not None
        experts, a, b = up.shape
        hidden = self.scheme.hidden
        # transformers holds gate_up as [E, 2I, H] (most) or [E, H, 2I] (gpt-oss)
        inter = (a if hidden == b or hidden is None else b) // 2
        made = self.moe(self.scheme, experts, inter, down.shape[1] if inter == down.shape[2] else down.shape[2])
        first = entries[qualified_name(path, "gate_up_proj")]
        for local in _EXPERT_NAMES:
            del module._parameters[local]
        out[entries[qualified_name(path, "down_proj")]] = []
        out[first] = self._register(module, path, tensors[first], made, up.device)
        for bias, vllm in (("gate_up_proj_bias", "w13_bias"), ("down_proj_bias", "w2_bias")):
            if bias in module._parameters:  # gpt-oss: biases stay in the model's dtype under vLLM's names
                old = module._parameters.pop(bias)
                assert old is not None
                index = entries[qualified_name(path, bias)]
                shape = tuple(old.shape) if vllm == "w2_bias" else (experts, 2 * inter)
                out[index] = self._register(module, path, tensors[index], [(vllm, shape, old.dtype)], old.device)

    def _register(
        self, module: nn.Module, path: str, entry: ShardTensor, made: Made, device: torch.device
    ) -> list[ShardTensor]:
        entries = []
        for local, shape, dtype in made:
            tensor = nn.Parameter(torch.empty(shape, dtype=dtype, device=device), requires_grad=False)
            module.register_parameter(local, tensor)
            entries.append(
                dataclasses.replace(
                    entry,
                    name=qualified_name(path, local),
                    shape=shape,
                    dtype=dtype_name(dtype),
                    nbytes=tensor.nbytes,
                    padding_bytes=0,
                )
            )
        return entries
