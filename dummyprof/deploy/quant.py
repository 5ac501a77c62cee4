"""Quantized checkpoints: the tensors vLLM 0.33 creates per rank for a checkpoint's ``quantization_config``.

vLLM builds a quantized linear or fused-MoE layer through its method's ``create_weights``, with
the sizes one rank holds (``output_partition_sizes``, ``input_size_per_partition``). Here the same
rules run on a rank's shard (``deploy/shards.py``) after it is cut: each linear weight becomes the
method's tensors (fp8 weight and scales; packed int4 and its scales, zeros and indices ...), each
fused-MoE pair becomes ``w13_*``/``w2_*``, and each attention layer gets its KV-cache method's scales. What stays
unquantized is vLLM's rule: embeddings, the head, router gates (built with ``quant_config=None``, but for the
architectures in ``_QUANTIZED_ROUTERS``), norms, biases, and what the config excludes.
The methods and their vLLM sources are listed in docs/deployments.md ("Quantized checkpoints").
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from typing import Any

import torch
from torch import nn

from dummyprof.anatomy import dtype_name, qualified_name, walk
from dummyprof.deploy import name_patterns
from dummyprof.deploy.plan import KV_COLUMN, REPLICATED, VLLM
from dummyprof.deploy.shards import RankShard, ShardTensor
from dummyprof.errors import UsageError
from dummyprof.layout import ParallelLayout
from dummyprof.loaders.initializers import (
    RULE_DECLARED,
    RULE_RANDOM_BYTES,
    RULE_SCALE,
    RULE_SKIP,
    RULE_UNIFORM_VIA_FP16,
    V033Initializer,
)
from dummyprof.results.deployment import FILL_KINDS, FP16_SCRATCH

AUTO, NONE = "auto", "none"
FLAG = "quantization"
FP8 = getattr(torch, "float8_e4m3fn", torch.uint8)
E8M0 = getattr(torch, "float8_e8m0fnu", torch.uint8)
F32 = torch.float32
# Modules vLLM builds without a quantization method whatever the config says.
_NEVER = ("embed", "lm_head", "norm")
_ROUTERS = ("gate", "router")
# Architectures whose vLLM 0.33 class builds the MoE router (``GateLinear``) with the model's ``quant_config``
# (qwen3_moe.py, whose block Qwen3-VL-MoE and Qwen3-Omni-MoE reuse; lfm2_moe.py; k2_horizon.py): the method then
# quantizes it as any linear, unless the config excludes it. Every other router, and every ``shared_expert_gate``
# (a ``ReplicatedLinear`` built with ``quant_config=None``), stays in the model's dtype.
_QUANTIZED_ROUTERS = frozenset(
    {
        "Qwen3MoeForCausalLM",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen3OmniMoeForConditionalGeneration",
        "Lfm2MoeForCausalLM",
        "K2HorizonForCausalLM",
    }
)
# transformers' fused expert tensors -> vLLM's FusedMoE names
_EXPERT_NAMES = {"gate_up_proj": "w13", "down_proj": "w2"}
# Architectures whose vLLM model reads ``scale_fmt`` and builds UE8M0 (float8_e8m0fnu) fp8 block scales.
_E8M0_ARCHS = frozenset({"BailingMoeV3ForCausalLM"})

Made = list[tuple[str, tuple[int, ...], torch.dtype]]  # (local name, shape, dtype) a method creates
Padding = tuple[int, int]  # (padding rows, held rows) of a fused-MoE tensor's intermediate dimension
Shape = Callable[[int, int], tuple[int, ...]]  # a tensor's shape from its layer's (out, in): per expert for experts


@dataclass(frozen=True)
class QuantScheme:
    """A checkpoint's quantization as vLLM reads it: the method and its config, with what the rules need."""

    method: str
    config: Mapping[str, Any]
    dtype: torch.dtype = torch.bfloat16  # the model's dtype (unquantized tensors, biases, float scales)
    hidden: int | None = None  # the model's hidden size: which dimension of a fused expert tensor is hidden
    architectures: tuple[str, ...] = ()
    layer: tuple[str, ...] = ()  # a fused-MoE layer's vLLM names (compressed-tensors matches its unfused parts)
    moe_tp: int = 1  # ranks splitting each expert's intermediate dimension
    tp: int = 1  # the attention's tensor-parallel ranks (vLLM's get_tensor_model_parallel_world_size)

    def get(self, key: str, default: Any = None) -> Any:
        value = self.config.get(key, default)
        return default if value is None else value


def resolve_method(config: Mapping[str, Any] | None, flag: str) -> tuple[str | None, str | None]:
    """(method vLLM builds, notice) for the checkpoint's ``quantization_config`` and ``--quantization``.

    ``auto``: the config's method; ``none``: unquantized, said in a notice when the config has one;
    a method: it must be the config's (vLLM refuses a mismatch). A method not known here is refused.
    """
    found = _config_method(config) if config else None
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
    if found is not None and found in METHODS and method in METHODS[found].aliases:
        method = found
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
            "give --quantization auto or none (vLLM's online fp8 path: dummyprof compare --online-quant fp8)",
        )
    if method not in METHODS:
        raise _refuse(f"quantization method {method!r} is not known to dummyprof (known: {', '.join(METHODS)})")
    return method, None


def _config_method(config: Mapping[str, Any]) -> str:
    """The method vLLM picks for the config: ModelOpt's by its ``quant_algo`` (``override_quantization_method``)."""
    found = str(config.get("quant_method", "")).lower()
    if not found.startswith("modelopt"):
        return found
    algo = str((config.get("quantization") or config).get("quant_algo", "")).upper()
    other = {"MXFP8": "modelopt_mxfp8", "MIXED_PRECISION": "modelopt_mixed"}  # not modelled: refused by name
    return other.get(algo, "modelopt_fp4" if "FP4" in algo else "modelopt")


# ---- which modules a method skips ---------------------------------------------------------
def _listed(*keys: str) -> Callable[[QuantScheme], list[str]]:
    """The config's exclusions in the first of ``keys`` it sets (GPTQ's ``dynamic``: its keys)."""
    return lambda scheme: list(next((found for key in keys if (found := scheme.get(key))), []))


def _modelopt_rules(scheme: QuantScheme) -> list[str]:
    """ModelOpt's ``exclude_modules`` as ``apply_vllm_mapper`` reads them: "path*" is "path" and "path.*"."""
    rules: list[str] = []
    for rule in _modelopt(scheme)[1]:
        rules += [rule[:-1], rule[:-1] + ".*"] if len(rule) > 1 and rule[-1] == "*" and rule[-2] != "." else [rule]
    return rules


def _ct_names(prefix: str, rule: str) -> bool:
    """compressed-tensors: a ``re:`` pattern (matched at the start), else an exact name."""
    return name_patterns.match(rule[3:], prefix) if rule.startswith("re:") else prefix == rule


def _gptq_names(prefix: str, rule: str) -> bool:
    return rule.startswith("-:") and name_patterns.match(rule[2:], prefix)


def _modelopt_names(prefix: str, rule: str) -> bool:
    return rule in prefix or fnmatch(prefix, rule)


def excluded(scheme: QuantScheme, prefixes: list[str]) -> bool:
    """Whether the config keeps the module(s) at ``prefixes`` (vLLM names) unquantized: vLLM's ``is_layer_skipped``,
    a fused layer skipped when its parts are (parts must agree; GPTQ: any part)."""
    method = METHODS[scheme.method]
    rules = method.skips(scheme)
    hits = {any(method.names(p, rule) for rule in rules) for p in prefixes}
    if len(hits) > 1 and scheme.method != "gptq":
        raise UsageError.for_field(
            FLAG, f"{', '.join(prefixes)} are fused by vLLM but only some are excluded by the config; vLLM refuses it"
        )
    return True in hits if scheme.method == "gptq" else hits == {True}


@dataclass(frozen=True)
class Linear:
    """One linear layer on one rank, as ``create_weights`` sees it."""

    prefixes: tuple[str, ...]  # vLLM module names of its parts (one, or the fused q/k/v, gate/up ...)
    out: int  # output_size_per_partition (the parts summed)
    inp: int  # input_size_per_partition
    row: bool  # its input is split (RowParallelLinear under tp)

    @property
    def parts(self) -> int:
        return len(self.prefixes)

    def each(self, local: str, dtype: torch.dtype, shape: Shape) -> Made:
        """The one tensor ``local`` of ``shape(out, in)``, as :meth:`Experts.each` makes one per fused-MoE half."""
        return [(local, shape(self.out, self.inp), dtype)]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _refuse(what: str) -> UsageError:
    return UsageError.for_field(FLAG, f"{what}; give --quantization none to count the model unquantized")


def _count(value: Any, name: str) -> int:
    """A quantization config's ``num_bits`` or ``group_size``: a whole number above 0, or -1 (a group: none)."""
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if (count < 1 and count != -1) or (isinstance(value, float) and not value.is_integer()):
        raise _refuse(f"the config's {name} {value!r} is not a whole number above 0")
    return count


def _per(size: int, group: int, layer: Linear | str) -> int:
    """Groups of ``group`` in a dimension of ``size`` per rank: vLLM refuses a group that does not divide it ("The
    input size is not aligned with the quantized weight shape")."""
    if size % group:
        where = "/".join(layer.prefixes) if isinstance(layer, Linear) else layer
        raise _refuse(f"{where}: a size per rank of {size} is not whole groups of {group} (vLLM refuses it)")
    return size // group


# ---- tensors the methods share ------------------------------------------------------------------------
def _w8_linear(layer: Linear, scale: Made, input_scale: tuple[int, ...] | None, dtype: torch.dtype = FP8) -> Made:
    """An 8-bit ``weight`` [out, in], its ``scale`` tensor, and a static activation's float32 ``input_scale``."""
    made: Made = [("weight", (layer.out, layer.inp), dtype), *scale]
    return made + ([("input_scale", input_scale, F32)] if input_scale else [])


def _out_in(out: int, inp: int) -> tuple[int, ...]:
    return out, inp


def _channel(out: int, inp: int) -> tuple[int, ...]:
    return out, 1


def _blocks(n: int, k: int) -> Shape:
    """One scale per ``n`` x ``k`` block of an [out, in] weight, a part block counted whole."""
    return lambda out, inp: (_cdiv(out, n), _cdiv(inp, k))


@dataclass(frozen=True)
class Experts:
    """One fused-MoE layer on one rank, as ``create_weights`` sees it: per expert, gate and up fused (``w13``,
    [2I, H]) and down (``w2``, [H, I])."""

    n: int  # experts on this rank
    inter: int  # I, the intermediate size per rank
    hidden: int  # H
    bias: bool  # the checkpoint has expert biases (gpt-oss)

    def each(self, local: str, dtype: torch.dtype, shape: Shape = _out_in) -> Made:
        """``w13_<local>`` and ``w2_<local>``, ``shape(out, in)`` per expert."""
        return [(f"w13_{local}", (self.n, *shape(2 * self.inter, self.hidden)), dtype),
                (f"w2_{local}", (self.n, *shape(self.hidden, self.inter)), dtype)]  # fmt: skip

    def scalars(self, local: str) -> Made:
        """One float32 per expert, and per half (gate, up) of ``w13``: [E, 2] and [E]."""
        return [(f"w13_{local}", (self.n, 2), F32), (f"w2_{local}", (self.n,), F32)]

    def biases(self, dtype: torch.dtype, *, always: bool = False) -> Made:
        """[E, out] in ``dtype`` where the checkpoint has biases (``always``: registered even without)."""
        return self.each("bias", dtype, lambda out, inp: (out,)) if self.bias or always else []


def _w8_experts(moe: Experts, scales: Made, static: bool, bias: Made, dtype: torch.dtype = FP8) -> Made:
    """8-bit ``w13_weight`` [E, 2I, H] and ``w2_weight`` [E, H, I], ``bias``, ``scales``, static ``input_scale`` [E]."""
    made = moe.each("weight", dtype) + bias + scales
    return made + (moe.each("input_scale", F32, lambda out, inp: ()) if static else [])


def _k_first(layer: Linear | Experts, pack: int, groups: Callable[[int], int], dtype: torch.dtype, *,
             packed_out: bool = False) -> Made:  # fmt: skip
    """GPTQ's and AWQ's layout: packed int32 ``qweight`` [in/pack, out] (``packed_out``, AWQ: [in, out/pack]),
    ``scales`` in the model's dtype [groups(in), out] and int32 ``qzeros`` [groups(in), out/pack], per expert for
    experts."""
    weight: Shape = (lambda out, inp: (inp, out // pack)) if packed_out else (lambda out, inp: (inp // pack, out))
    made = layer.each("qweight", torch.int32, weight) + layer.each("scales", dtype, lambda out, inp: (groups(inp), out))
    return made + layer.each("qzeros", torch.int32, lambda out, inp: (groups(inp), out // pack))


# ---- fp8 (vLLM fp8.py: Fp8LinearMethod, Fp8MoEMethod; utils/fp8_utils.py) ------------------------
def _fp8_block(scheme: QuantScheme) -> tuple[int, int] | None:
    block = scheme.get("weight_block_size")
    return (int(block[0]), int(block[1])) if block else None


def _check_fp8_block(block: tuple[int, int] | None, name: str, layer: Linear, split_out: bool) -> None:
    """vLLM's ``validate_fp8_block_shape``: a split dimension must be whole blocks on each rank."""
    for split, size, step, what in ((layer.row, layer.inp, 1, "input"), (split_out, layer.out, 0, "output")):
        if block is not None and split and size % block[step]:
            raise UsageError.for_field(
                "tp",
                f"{name}: {what} size per rank {size} is not a multiple of the fp8 block {block[step]} "
                "(vLLM refuses it)",  # the Sharder offers the tps that split it, each tried on the model
            )


def _fp8_scale(strategy: str, layer: Linear, block: tuple[int, int] | None) -> tuple[int, ...]:
    """``create_fp8_scale_parameter``: per tensor [parts], per channel [out, 1], per block [ceil(out/n), ceil(in/k)]."""
    if strategy == "block" and block is not None:
        return _blocks(*block)(layer.out, layer.inp)
    return _channel(layer.out, layer.inp) if strategy == "channel" else (layer.parts,)


def fp8_linear(scheme: QuantScheme, layer: Linear) -> Made | None:
    """Block scales are ``weight_scale_inv``, UE8M0 where vLLM reads ``scale_fmt``."""
    block = _fp8_block(scheme)
    static = (layer.parts,) if scheme.get("activation_scheme") == "static" else None
    if block is None:
        return _w8_linear(layer, [("weight_scale", (layer.parts,), F32)], static)
    e8m0 = scheme.get("scale_fmt") == "ue8m0" and _E8M0_ARCHS.intersection(scheme.architectures)
    return _w8_linear(layer, [("weight_scale_inv", _fp8_scale("block", layer, block), E8M0 if e8m0 else F32)], static)


def fp8_moe_block(scheme: QuantScheme, block: tuple[int, int], inter: int, hidden: int) -> tuple[int, int]:
    """The block grid vLLM 0.33 sizes an fp8 MoE's scales on, for ``inter`` (the rank's intermediate size).

    ``refine_fp8_moe_block_shape`` (fused_moe/oracle/fp8.py; ``--moe-backend auto``): where ``inter`` is not whole
    blocks (of ``n``, or of ``k`` once the MoE is split over ranks), the checkpoint's scales are upsampled at load to
    ``r x r``, r = gcd(n, k, inter, hidden), if r >= 32 (only Triton's kernels take it, and they take any block);
    ``Fp8MoEMethod.create_weights`` then takes ``r x r`` where ``inter % n`` or (tp > 1 and ``inter % k``). Without a
    refinement ``validate_fp8_block_shape_moe`` refuses what is not whole blocks, as vLLM does."""
    n, k = block
    refine = None
    if inter % n or (scheme.moe_tp > 1 and inter % k):
        found = math.gcd(n, k, inter, hidden)
        refine = found if found >= 32 else None
    if refine is None:
        for size, what in [(n, "block_n")] + ([(k, "block_k")] if scheme.tp > 1 else []):
            if inter % size:
                whole = f"; --ep {scheme.moe_tp} holds whole experts on each rank" if scheme.moe_tp > 1 else ""
                raise UsageError.for_field(
                    "tp",
                    f"{scheme.layer[0]}: the experts' intermediate size per rank {inter} is not a multiple of the fp8 "
                    f"{what} {size}, and no block of 32 or more divides {n} x {k}, it and the hidden size {hidden} "
                    f"(vLLM refuses it{whole})",
                )
        return n, k
    return (refine, refine) if inter % n or (scheme.tp > 1 and inter % k) else (n, k)


def fp8_moe(scheme: QuantScheme, moe: Experts) -> Made:
    """Scales per expert (and per w1/w3) or per block (on :func:`fp8_moe_block`'s grid); biases (gpt-oss style) in
    the model's dtype."""
    block = _fp8_block(scheme)
    if block is None:
        scales = moe.scalars("weight_scale")
    else:
        scales = moe.each("weight_scale_inv", F32, _blocks(*fp8_moe_block(scheme, block, moe.inter, moe.hidden)))
    return _w8_experts(moe, scales, scheme.get("activation_scheme") == "static", moe.biases(scheme.dtype))


# ---- GPTQ and AWQ int4/int8 (vLLM auto_gptq.py, auto_awq.py: the CUDA path's AutoGPTQ/AutoAWQ) ------------
def _gptq_config(scheme: QuantScheme, prefixes: tuple[str, ...]) -> dict[str, Any]:
    """The base config with the first positive ``dynamic`` rule matching the module applied (``override_config``)."""
    config = dict(scheme.config)
    for pattern, override in (scheme.get("dynamic") or {}).items():
        if not pattern.startswith("-:") and any(name_patterns.match(pattern.removeprefix("+:"), p) for p in prefixes):
            return {**config, **(override if isinstance(override, Mapping) else {})}
    return config


def _bits_group(config: Mapping[str, Any], hidden_default: int) -> tuple[int, int]:
    bits = int(config.get("bits") or config.get("w_bit") or 4)
    group = config.get("group_size", config.get("q_group_size", -1))
    if config.get("desc_act") and group != -1:
        raise _refuse(
            "GPTQ group activation ordering (desc_act=True) is no longer supported by vLLM 0.33 (it refuses the "
            "checkpoint)"
        )
    return bits, hidden_default if group in (-1, None) else int(group)


def gptq_linear(scheme: QuantScheme, layer: Linear) -> Made | None:
    """Groups split with the input unless channelwise on a row-parallel layer (repeated)."""
    config = _gptq_config(scheme, layer.prefixes)
    bits, group = _bits_group(config, layer.inp)
    channelwise = config.get("group_size", -1) == -1
    return _k_first(layer, 32 // bits, lambda inp: 1 if channelwise else _per(inp, group, layer), scheme.dtype)


def gptq_moe(scheme: QuantScheme, moe: Experts) -> Made:
    """Marlin's layout (``AutoGPTQMoEMethod``), zero biases registered even without checkpoint biases; where
    ``check_moe_marlin_supports_layer`` fails, ``MoeWNA16Method`` (:func:`moe_wna16`)."""
    bits, group = _bits_group(scheme.config, -1)
    marlin = moe.hidden % 128 == 0 and (group <= 0 or moe.inter % group == 0) and group in (-1, 32, 64, 128)
    if not marlin:
        return moe_wna16(scheme, moe, bits, group)
    made = _k_first(moe, 32 // bits, lambda inp: 1 if group == -1 else inp // group, scheme.dtype)
    return made + moe.biases(scheme.dtype, always=True)


def moe_wna16(scheme: QuantScheme, moe: Experts, bits: int, group: int) -> Made:
    """vLLM moe_wna16.py ``MoeWNA16Method.create_weights`` for a GPTQ checkpoint: the group halved until it divides
    the intermediate size per rank and the hidden size (below 32 refused, as vLLM asserts); N-first uint8
    ``qweight`` (pack = 8 / bits), ``qzeros`` uint8 when asymmetric, else int32 [0] (registered unused); no
    biases."""
    inter, hidden = moe.inter, moe.hidden
    if bits not in (4, 8) or group < 1:
        what = f"{bits} bits" if bits not in (4, 8) else "no group (channelwise)"
        raise _refuse(f"GPTQ MoE: {scheme.layer[0]} falls back to vLLM's MoeWNA16 (hidden size {hidden}, intermediate "
                      f"size per rank {inter}), which does not take {what} (vLLM refuses it)")  # fmt: skip
    while inter % group or hidden % group:
        group //= 2
        if group < 32:
            raise _refuse(f"GPTQ MoE: no group of 32 or more divides the intermediate size per rank {inter} and the "
                          f"hidden size {hidden} (vLLM's MoeWNA16 fallback refuses it)")  # fmt: skip
    pack, u8 = 8 // bits, torch.uint8
    made = moe.each("qweight", u8, lambda out, inp: (out, inp // pack))
    made += moe.each("scales", scheme.dtype, lambda out, inp: (out, inp // group))
    if scheme.get("sym", True):
        return [*made, ("w13_qzeros", (0,), torch.int32), ("w2_qzeros", (0,), torch.int32)]
    return made + moe.each("qzeros", u8, lambda out, inp: (out // pack, inp // group))


def awq_linear(scheme: QuantScheme, layer: Linear) -> Made | None:
    """Packed along the output; groups = in per rank / group size; ``qzeros`` registered before ``scales``."""
    bits, group = _bits_group(scheme.config, layer.inp)
    qweight, scales, qzeros = _k_first(
        layer, 32 // bits, lambda inp: _per(inp, group, layer), scheme.dtype, packed_out=True
    )
    return [qweight, qzeros, scales]


def awq_moe(scheme: QuantScheme, moe: Experts) -> Made:
    bits, group = _bits_group(scheme.config, moe.hidden)
    return _k_first(moe, 32 // bits, lambda inp: inp // group, scheme.dtype, packed_out=True)


# ---- compressed-tensors (vLLM compressed_tensors.py: _get_scheme_from_parts, dense layers) ----------------
_ACTIVATION_FORMATS = ("naive-quantized", "int-quantized", "float-quantized")


def _ct_scheme(scheme: QuantScheme, prefixes: tuple[str, ...]) -> tuple[Any, ...] | None:
    """(weights, inputs, format, bits, type, strategy) of the config group whose ``targets`` match the layer
    (``Linear``: any linear; ``re:`` a pattern; a name); None: no group, or no weights."""
    for group in (scheme.get("config_groups") or {}).values():
        for target in group.get("targets", []):
            if target == "Linear" or all(_ct_names(p, target) for p in prefixes):
                weights = group.get("weights")
                if not weights:
                    return None
                inputs = group.get("input_activations") or {}
                fmt = group.get("format") or scheme.get("format")
                kind, strategy = weights.get("type", "int"), weights.get("strategy")
                return weights, inputs, fmt, _count(weights.get("num_bits", 8), "num_bits"), kind, strategy
    return None


def ct_linear(scheme: QuantScheme, layer: Linear) -> Made | None:
    """W8A8 / W8A16 fp8 (tensor, channel, block), W8A8 int8 (tensor, channel; static activations with their
    zero point when asymmetric), pack-quantized WNA16; a layer no group targets stays unquantized."""
    ct = _ct_scheme(scheme, layer.prefixes)
    if ct is None:
        return None
    weights, inputs, fmt, bits, kind, strategy = ct
    static = bool(inputs) and not inputs.get("dynamic", False)
    if kind == "int" and not inputs and fmt == "pack-quantized" and strategy in ("group", "channel"):
        group_size = _count(weights.get("group_size") or -1, "group_size") if strategy == "group" else -1
        groups = 1 if group_size == -1 else _per(layer.inp, group_size, layer)
        made: Made = [
            ("weight_packed", (layer.out, _cdiv(layer.inp * bits, 32)), torch.int32),
            ("weight_scale", (layer.out, groups), scheme.dtype),
            ("weight_shape", (2,), torch.int64),
        ]
        if not weights.get("symmetric", True):
            made.append(("weight_zero_point", (_cdiv(layer.out * bits, 32), groups), torch.int32))
        return made
    if fmt in _ACTIVATION_FORMATS and kind == "float" and bits == 8:
        block = weights.get("block_structure")
        block_t = (int(block[0]), int(block[1])) if block else None
        _check_fp8_block(block_t if strategy == "block" else None, "/".join(layer.prefixes), layer, True)
        scale = [("weight_scale", _fp8_scale(strategy, layer, block_t), F32)]
        return _w8_linear(layer, scale, (layer.parts,) if static else None)
    if fmt in _ACTIVATION_FORMATS and kind == "int" and bits == 8 and inputs and inputs.get("num_bits") == 8:
        made = _w8_linear(
            layer, [("weight_scale", _fp8_scale(strategy, layer, None), F32)], (1,) if static else None, torch.int8
        )
        asymmetric = static and not inputs.get("symmetric", True)
        return made + ([("input_zero_point", (1,), torch.int8)] if asymmetric else [])
    raise _refuse(
        f"compressed-tensors scheme of {'/'.join(layer.prefixes)} (weights {weights}, format {fmt}) is not modelled"
    )


def ct_moe(scheme: QuantScheme, moe: Experts) -> Made | None:
    """``CompressedTensorsMoEMethod.get_moe_method`` on CUDA, for the group of the unfused ``.0.gate_proj`` ...
    (none: unquantized): W8A8 fp8 (tensor, channel, block), int8 W8A8 (channel, dynamic tokens), pack-quantized
    WNA16 (:func:`ct_wna16_moe`)."""
    ct = _ct_scheme(scheme, scheme.layer)
    if ct is None:
        return None
    weights, inputs, fmt, bits, kind, strategy = ct
    unsupported = _refuse(f"compressed-tensors MoE scheme of {scheme.layer[0]} (weights {weights}, inputs "
                          f"{inputs or None}) is not one vLLM 0.33 builds on CUDA")  # fmt: skip
    if not inputs and strategy in ("group", "channel") and not weights.get("dynamic"):
        if fmt != "pack-quantized" or bits not in (4, 8):
            raise unsupported
        return ct_wna16_moe(scheme, weights, moe, bits)
    if kind == "float" and bits == 8 and inputs.get("type") == "float" and inputs.get("num_bits") == 8:
        return _ct_fp8_moe(scheme, weights, inputs, moe, unsupported)
    dynamic_tokens = inputs.get("dynamic") and inputs.get("strategy") == "token" and inputs.get("num_bits") == 8
    if kind == "int" and bits == 8 and strategy == "channel" and dynamic_tokens:
        scales = moe.each("weight_scale", F32, _channel)
        return _w8_experts(moe, scales, False, moe.biases(scheme.dtype), torch.int8)
    raise unsupported


def _ct_fp8_moe(scheme: QuantScheme, weights: Mapping[str, Any], inputs: Mapping[str, Any], moe: Experts,
                unsupported: UsageError) -> Made:  # fmt: skip
    """``CompressedTensorsW8A8Fp8MoEMethod.create_weights``: fp8 experts with per-block, per-tensor or (dynamic
    inputs only) per-channel weight scales."""
    static, strategy = not inputs.get("dynamic", False), weights.get("strategy")
    if strategy == "block":
        n, k = (int(b) for b in weights["block_structure"])
        if moe.inter % n or (scheme.tp > 1 and moe.inter % k):  # validate_fp8_block_shape_moe, no refinement
            raise UsageError.for_field("tp", f"fp8 MoE: the intermediate size per rank {moe.inter} is not a multiple "
                                       f"of the block {n} x {k} (vLLM refuses it)")  # fmt: skip
        scales = moe.each("weight_scale", F32, _blocks(n, k))
    elif strategy == "tensor":
        scales = moe.scalars("weight_scale")
    elif strategy == "channel" and not static:
        scales = moe.each("weight_scale", F32, _channel)
    else:
        raise unsupported
    return _w8_experts(moe, scales, static, [])


def ct_wna16_moe(scheme: QuantScheme, weights: Mapping[str, Any], moe: Experts, bits: int) -> Made:
    """``CompressedTensorsWNA16MoEMethod.create_weights`` (every CUDA backend, Marlin's too, allocates the checkpoint's
    N-first layout): int32 ``weight_packed``, biases where the model has them, ``weight_scale``, int32
    ``weight_zero_point`` when asymmetric, and ``weight_shape`` [E, 2] in the default dtype (the model's, while vLLM
    builds it)."""
    inter, hidden, pack = moe.inter, moe.hidden, 32 // bits
    size = _count(weights.get("group_size") or -1, "group_size") if weights.get("strategy") == "group" else -1
    sizes = (("hidden size", hidden), ("intermediate size per rank", inter))
    off = " and the ".join(f"{what} {n}" for what, n in sizes if size != -1 and n % size)  # the one(s) at fault
    if off:
        raise _refuse(f"WNA16 MoE: the {off} {'are' if ' and ' in off else 'is'} not a multiple of the group "
                      f"size {size} (vLLM refuses it)")  # fmt: skip
    symmetric = weights.get("symmetric", True)
    if not symmetric and (2 * inter % pack or hidden % pack):
        raise _refuse(f"WNA16 MoE: asymmetric zero points need 2 x the intermediate size per rank ({2 * inter}) and "
                      f"the hidden size ({hidden}) in whole int32 words of {pack} (vLLM refuses it)")  # fmt: skip

    def groups(inp: int) -> int:
        return 1 if size == -1 else inp // size

    made = moe.each("weight_packed", torch.int32, lambda out, inp: (out, inp // pack)) + moe.biases(scheme.dtype)
    made += moe.each("weight_scale", scheme.dtype, lambda out, inp: (out, groups(inp)))
    if not symmetric:
        made += moe.each("weight_zero_point", torch.int32, lambda out, inp: (out // pack, groups(inp)))
    return [*made, ("w2_weight_shape", (moe.n, 2), scheme.dtype), ("w13_weight_shape", (moe.n, 2), scheme.dtype)]


# ---- ModelOpt (vLLM modelopt.py: ModelOptFp8Config, ModelOptNvFp4Config; the head is quantized unless excluded) ---
def _modelopt(scheme: QuantScheme) -> tuple[str, list[str], int]:
    """(quant_algo, exclude_modules, group size) from either layout ``ModelOptQuantConfigBase.from_config`` reads:
    ``quantization: {..., "exclude_modules": [...]}``, or flat, ``ignore`` where the key is there, else
    ``exclude_modules`` (ModelOpt's exports write either)."""
    nested = scheme.get("quantization")
    config: Mapping[str, Any] = nested if isinstance(nested, Mapping) else scheme.config
    key = "exclude_modules" if nested or "ignore" not in config else "ignore"
    excluded = config.get(key, [])
    if not isinstance(excluded, list) or not all(isinstance(rule, str) for rule in excluded):
        raise _refuse(f"the config's {key} {excluded!r} is not a list of module names")
    return str(config.get("quant_algo", "")).upper(), excluded, _count(config.get("group_size") or 16, "group_size")


def modelopt_linear(scheme: QuantScheme, layer: Linear) -> Made | None:
    """FP8 (per tensor, static), FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO (128 x 128 blocks); NVFP4 (W4A4, W4A16):
    two fp4 per uint8 byte, fp8 group scales, float32 ``weight_scale_2`` and ``input_scale`` per part."""
    algo, _, group = _modelopt(scheme)
    if scheme.method == "modelopt_fp4":
        if layer.inp % 16:
            raise _refuse(f"NVFP4: {'/'.join(layer.prefixes)} input size per rank {layer.inp} is not a multiple of 16")
        return [("weight", (layer.out, layer.inp // 2), torch.uint8), ("input_scale", (layer.parts,), F32),
                ("weight_scale_2", (layer.parts,), F32),
                ("weight_scale", (layer.out, _per(layer.inp, group, layer)), FP8)]  # fmt: skip
    if algo == "FP8":
        return _w8_linear(layer, [("weight_scale", (layer.parts,), F32)], (layer.parts,))
    if algo == "FP8_PER_CHANNEL_PER_TOKEN":
        return _w8_linear(layer, [("weight_scale", (layer.out,), F32)], None)
    if algo == "FP8_PB_WO" and not (layer.out % 128 or layer.inp % 128):
        return _w8_linear(layer, [("weight_scale", (layer.out // 128, 1, layer.inp // 128, 1), F32)], None)
    raise _refuse(f"ModelOpt {algo} on {'/'.join(layer.prefixes)} ({layer.out} x {layer.inp} per rank) is not built "
                  "by vLLM 0.33 (FP8_PB_WO: 128 x 128 blocks)")  # fmt: skip


# The constants ModelOptNvFp4FusedMoE declares (``dummy_weight_value``) on the tensors it creates, which vLLM's dummy
# loader fills with them instead of drawing: dummy scales stay positive and the gate/up global scales identical.
_NVFP4_DECLARED = {
    f"{w}_{local}": value
    for w in ("w13", "w2")
    for local, value in (("weight_scale", 1.0), ("weight_scale_2", 1e-3), ("input_scale", 1e-2))
}


def modelopt_moe(scheme: QuantScheme, moe: Experts) -> Made:
    """FP8: ModelOptFp8MoEMethod. NVFP4 (ModelOptNvFp4FusedMoE): the rank's experts' ``input_scale`` (H200's
    backend has no global scale); its scales declare the constants of ``_NVFP4_DECLARED``."""
    if scheme.method != "modelopt_fp4":
        return _w8_experts(moe, moe.scalars("weight_scale"), True, [])
    group, u8 = _modelopt(scheme)[2], torch.uint8
    made = moe.each("weight", u8, lambda out, inp: (out, inp // 2))
    made += moe.each("weight_scale", FP8, lambda out, inp: (out, _per(inp, group, "experts")))
    return made + moe.scalars("weight_scale_2") + moe.scalars("input_scale")


# ---- mxfp4 (gpt-oss: vLLM mxfp4.py GptOssMxfp4MoEMethod; linear layers stay unquantized) -----------------
MXFP4_BLOCK = 32
MXFP4_PAD = 64  # H200: the Triton (OAI kernels) backend rounds the per-rank intermediate size up to 64


def mxfp4_padding_rows(held: int, full: int, moe_tp: int, moe_rank: int) -> int:
    """Intermediate rows of a rank's mxfp4 experts that no weight is loaded into: vLLM's gpt-oss loader
    (``_load_weights_mxfp4``) gives MoE rank r the rows [r x per, min((r + 1) x per, I)), per = cdiv(I / 32, tp) x 32;
    the rest of the rank's ``held`` (padded) rows is padding."""
    per = _cdiv(full // MXFP4_BLOCK, moe_tp) * MXFP4_BLOCK
    return held - max(0, min(per, full - moe_rank * per))


def mxfp4_linear(scheme: QuantScheme, layer: Linear) -> Made | None:
    return None  # vLLM: "MXFP4 linear layer is not implemented - falling back to UnquantizedLinearMethod"


def mxfp4_moe(scheme: QuantScheme, moe: Experts) -> Made:
    """Two fp4 per uint8 byte, UE8M0 scale bytes per 32; biases bfloat16; I padded per rank."""
    moe = dataclasses.replace(moe, inter=_cdiv(moe.inter, MXFP4_PAD) * MXFP4_PAD)
    weight = moe.each("weight", torch.uint8, lambda out, inp: (out, inp // 2))
    scale = moe.each("weight_scale", torch.uint8, lambda out, inp: (out, inp // MXFP4_BLOCK))
    return [weight[0], scale[0], weight[1], scale[1], *moe.biases(torch.bfloat16)]


# ---- the attention layer's KV-cache method (vLLM kv_cache.py BaseKVCacheMethod; compressed_tensors.py) ----------
ATTENTION, MLA = "attention", "mla"  # vLLM's ``Attention``, and ``MLAAttention`` (DeepSeek's latent attention)


def kv_cache_tensors(scheme: QuantScheme, kv_heads: int, mla: bool) -> tuple[Made, str, bool]:
    """(tensors, vLLM class, one per kv head) the KV-cache method's ``create_weights`` registers on one attention
    layer, whatever the config's ``kv_cache_scheme`` (null included). ``BaseKVCacheMethod``: four scalars
    ``q_scale``, ``k_scale``, ``v_scale``, ``prob_scale`` (``torch.tensor(-1.0)``: shape [], the model's dtype, the
    default dtype while vLLM builds the model). ``CompressedTensorsKVCacheMethod``: float32 ``k_scale``, ``v_scale``,
    ``q_scale`` [n] and ``k_zero_point``, ``v_zero_point``, ``q_zero_point`` [n] in the model's dtype, n the rank's kv
    heads under the ``attn_head`` strategy, else 1. ``kv_heads``: the rank's kv heads; ``mla``: latent attention."""
    if (MLA if mla else ATTENTION) not in METHODS[scheme.method].kv:
        return [], "", False
    if scheme.method != "compressed-tensors":
        scalars: Made = [(name, (), scheme.dtype) for name in ("q_scale", "k_scale", "v_scale", "prob_scale")]
        return scalars, "BaseKVCacheMethod", False
    kv_scheme = scheme.get("kv_cache_scheme")
    strategy = None
    if kv_scheme:  # CompressedTensorsKVCacheMethod.validate_kv_cache_scheme
        strategy = kv_scheme.get("strategy")
        if kv_scheme.get("type") != "float" or kv_scheme.get("num_bits") != 8:
            raise _refuse(f"compressed-tensors kv_cache_scheme {dict(kv_scheme)} is not num_bits 8, type float "
                          "(vLLM refuses it)")  # fmt: skip
        if strategy not in ("tensor", "attn_head") or not kv_scheme.get("symmetric"):
            raise _refuse(f"compressed-tensors kv_cache_scheme {dict(kv_scheme)} is not a symmetric tensor or "
                          "attn_head strategy (vLLM refuses it)")  # fmt: skip
    n = (kv_heads if strategy == "attn_head" else 1,)
    made: Made = [(f"{kv}_scale", n, F32) for kv in "kvq"]
    made += [(f"{kv}_zero_point", n, scheme.dtype) for kv in "kvq"]
    return made, "CompressedTensorsKVCacheMethod", strategy == "attn_head"


LinearRule = Callable[[QuantScheme, Linear], "Made | None"]
MoeRule = Callable[[QuantScheme, Experts], "Made | None"]


@dataclass(frozen=True)
class Method:
    """One checkpoint method as vLLM 0.33 reads and builds it."""

    linear: LinearRule  # a linear layer's tensors (None: left unquantized)
    moe: MoeRule  # a fused-MoE layer's tensors
    act_dtypes: tuple[torch.dtype, ...]  # get_supported_act_dtypes: the model's dtype must be one, else vLLM refuses
    skips: Callable[[QuantScheme], list[str]]  # the config's exclusions
    names: Callable[[str, str], bool]  # whether an exclusion names the module at a prefix
    aliases: tuple[str, ...] = ()  # what --quantization also accepts (its kernel variants build the same tensors)
    kv: tuple[str, ...] = ()  # the attention classes its get_quant_method gives a KV-cache method
    routers: bool = True  # it quantizes the routers of the architectures in _QUANTIZED_ROUTERS
    declared: Mapping[str, float] | None = None  # the constants its fused-MoE tensors declare, by local name


F16, BF16 = torch.float16, torch.bfloat16
_MODELOPT = Method(modelopt_linear, modelopt_moe, (BF16, F16), _modelopt_rules, _modelopt_names, kv=(ATTENTION, MLA))
METHODS: dict[str, Method] = {
    "fp8": Method(fp8_linear, fp8_moe, (BF16, F16), _listed("ignored_layers", "modules_to_not_convert"), operator.eq,
                  kv=(ATTENTION,)),
    "compressed-tensors": Method(ct_linear, ct_moe, (F32, F16, BF16), _listed("ignore"), _ct_names, kv=(ATTENTION,)),
    # routers: vLLM reads which layers are quantized from the checkpoint's files (``maybe_update_config``), where
    # GPTQ tools keep the router in 16 bits; a config alone does not say, so routers stay unquantized under it
    "gptq": Method(gptq_linear, gptq_moe, (F16, BF16), _listed("dynamic"), _gptq_names,
                   ("gptq_marlin", "auto_gptq", "marlin"), routers=False),
    "awq": Method(awq_linear, awq_moe, (F16, BF16), _listed("modules_to_not_convert"), operator.contains,
                  ("awq_marlin", "auto_awq", "marlin")),
    "mxfp4": Method(mxfp4_linear, mxfp4_moe, (BF16,), _listed("modules_to_not_convert"), operator.contains,
                    ("gpt_oss_mxfp4",)),
    "modelopt": _MODELOPT,
    "modelopt_fp4": dataclasses.replace(_MODELOPT, declared=_NVFP4_DECLARED),
}  # fmt: skip


# ---- what the dummy fill does to a quantized shard ---------------------------------------------------------
def fill_kinds(module: nn.Module) -> dict[str, int]:
    """Bytes per vLLM 0.33 fill rule (REFERENCE.md section 2), each storage once, and the float16 scratch (the
    largest one tensor's temporary: the fill draws one tensor at a time, so no two are alive together):
    ``fp8`` drawn through a float16 scratch; ``scale`` (UE8M0/uint8 scale bytes set to 120, and float scales
    drawn as floats); ``integer`` (int8, uint8 and fp4 random bytes); ``skipped`` (int32/int64 such as
    ``qweight``, ``qzeros``: visited, left as allocated off ROCm); ``float``; ``declared`` values."""
    kind = {RULE_UNIFORM_VIA_FP16: "fp8", RULE_SCALE: "scale", RULE_RANDOM_BYTES: "integer", RULE_SKIP: "skipped"}
    kind[RULE_DECLARED] = "declared"
    plan, seen = V033Initializer().plan, set()
    out = dict.fromkeys(FILL_KINDS, 0) | {FP16_SCRATCH: 0}
    for r in walk(module, remove_duplicate=True):
        if id(r.tensor) in seen:
            continue
        seen.add(id(r.tensor))
        rule, outcome = plan(r.tensor, r.local)
        out[kind.get(rule, "scale" if "scale" in r.local else "float")] += r.tensor.nbytes
        if rule == RULE_UNIFORM_VIA_FP16:  # one tensor's temporary at a time: freed before the next is drawn
            out[FP16_SCRATCH] = max(out[FP16_SCRATCH], outcome.scratch_bytes)
    return out


# ---- applying a scheme to a shard -----------------------------------------------------------
def _linear_module(name: str, weight: torch.Tensor, head: bool, router: bool) -> bool:
    """A linear vLLM builds with the quantization method: not an embedding, a norm or a shared expert's gate; a router
    only where ``router`` (the architecture builds it with the quant config); the head only for ModelOpt (``head``:
    its ``ParallelLMHead`` takes the linear method), and not when it is the embedding (tied)."""
    never = ("embed", "norm") if head else _NEVER
    if name == "shared_expert_gate" or (name in _ROUTERS and not router):
        return False
    return weight.dtype.is_floating_point and not any(w in name for w in never)


class ShardQuantizer:
    """Rewrites a rank's shard (module and entries) into the tensors vLLM creates for ``scheme``."""

    def __init__(self, scheme: QuantScheme) -> None:
        self.scheme, self.method = scheme, METHODS[scheme.method]

    def apply(self, shard: RankShard, layout: ParallelLayout, kv_heads: int | None = None) -> None:
        """``kv_heads``: the model's kv heads (the rank's attention layers hold max(1, kv_heads / tp))."""
        try:
            self._apply(shard, layout)
            self._attention(shard, max(1, (kv_heads or 1) // layout.tp))
        except (AttributeError, IndexError, KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            # a hand-edited quantization_config (a block_structure of one number, a group of text ...): one line
            what = f"{type(exc).__name__}: {exc}"
            raise _refuse(f"the config's quantization_config is not one vLLM 0.33 reads ({what})") from None

    def _apply(self, shard: RankShard, layout: ParallelLayout) -> None:
        self._tp = layout.tp
        self._tensors = shard.tensors
        self._index = {e.name: i for i, e in enumerate(shard.tensors)}
        self._out: dict[int, list[ShardTensor]] = {}  # entry index -> what replaces it
        embedded = {id(m._parameters.get("weight")) for p, m in shard.module.named_modules() if "embed" in p}
        router = self.method.routers and bool(_QUANTIZED_ROUTERS.intersection(self.scheme.architectures))
        for path, module in shard.module.named_modules():
            name = path.rpartition(".")[2]
            weight = module._parameters.get("weight")
            head = self.scheme.method.startswith("modelopt") and id(weight) not in embedded
            if weight is not None and weight.dim() == 2 and _linear_module(name, weight, head, router):
                self._linear(module, path, weight)
            experts = [k for k in _EXPERT_NAMES if isinstance(module._parameters.get(k), torch.Tensor)]
            if name == "experts" and len(experts) == 2:
                rank = 0 if layout.expert_parallel else shard.coord.moe_rank(layout.tp)  # within the MoE tp group
                self._experts(module, path, (layout.moe_tp, rank))
        shard.tensors[:] = [new for i, entry in enumerate(shard.tensors) for new in self._out.get(i, [entry])]

    def _attention(self, shard: RankShard, kv_heads: int) -> None:
        """Each attention layer's KV-cache method tensors, on an ``attn`` child as vLLM's ``Attention`` module holds
        them (``self_attn.attn.k_scale``), entered after the layer's other tensors."""
        for path, module in list(shard.module.named_modules()):
            if path.rpartition(".")[2] != "self_attn" or "attn" in module._modules:
                continue
            mla = any(m in module._modules for m in ("kv_b_proj", "fused_qkv_a_proj", "kv_a_proj_with_mqa"))
            made, style, per_head = kv_cache_tensors(self.scheme, kv_heads, mla)
            if not made:
                continue
            inside = [i for i, e in enumerate(shard.tensors) if e.name.startswith(path + ".")]
            if not inside:
                continue
            template = dataclasses.replace(shard.tensors[inside[-1]], rule=KV_COLUMN if per_head else REPLICATED,
                                           source=VLLM, style=style, padding_bytes=0)  # fmt: skip
            device = next(t.device for t in (*module.parameters(), *module.buffers()))
            module.add_module("attn", attn := nn.Module())
            entries = _register(attn, qualified_name(path, "attn"), made, device, template)
            shard.tensors[inside[-1] + 1 : inside[-1] + 1] = [
                dataclasses.replace(e, members=(e.name,)) for e in entries
            ]

    def _linear(self, module: nn.Module, path: str, weight: torch.Tensor) -> None:
        index = self._index[qualified_name(path, "weight")]
        entry = self._tensors[index]
        prefixes = tuple(m.rpartition(".")[0] for m in entry.members)
        if excluded(self.scheme, list(prefixes)):
            return
        layer = Linear(prefixes, int(weight.shape[0]), int(weight.shape[1]), entry.rule == "row")
        if self.scheme.method == "fp8":  # a merged layer's last part may end mid-block; a tp-split one may not
            _check_fp8_block(_fp8_block(self.scheme), path, layer, "column" in entry.rule)
        made = self.method.linear(self.scheme, layer)
        if made is None:
            return
        del module._parameters["weight"]
        out = self._out[index] = _register(module, path, made, weight.device, entry)
        for i, made_entry in enumerate(out):  # a padded vocabulary's rows (the head) stay padding
            if entry.padding_bytes and made_entry.shape[0] == layer.out:
                out[i] = dataclasses.replace(made_entry, padding_bytes=made_entry.nbytes * entry.padding_bytes
                                             // entry.nbytes)  # fmt: skip

    def _experts(self, module: nn.Module, path: str, moe: tuple[int, int]) -> None:
        """``moe``: (ranks splitting each expert's intermediate dimension, this rank among them)."""
        ct = self.scheme.method == "compressed-tensors"  # vLLM matches the unfused parts' names
        names = [f"{path}.0.{p}" for p in ("gate_proj", "up_proj", "down_proj")] if ct else [path]
        if excluded(self.scheme, names):
            return
        up = module._parameters["gate_up_proj"]
        assert up is not None and self.scheme.hidden
        experts, hidden = int(up.shape[0]), self.scheme.hidden
        # per rank gate_up holds [E, 2I, H] (gpt-oss's [E, H, 2I] turned as vLLM holds it)
        inter = up.numel() // (experts * 2 * hidden)
        biases = [b for b in ("gate_up_proj_bias", "down_proj_bias") if module._parameters.get(b) is not None]
        scheme = dataclasses.replace(self.scheme, layer=tuple(names), moe_tp=moe[0], tp=self._tp)
        made = self.method.moe(scheme, Experts(experts, inter, hidden, bool(biases)))
        if made is None:
            return
        padding = None
        if self.scheme.method == "mxfp4":
            held, (moe_tp, rank) = _cdiv(inter, MXFP4_PAD) * MXFP4_PAD, moe
            padding = (mxfp4_padding_rows(held, inter * moe_tp, moe_tp, rank), held)
        for local in (*_EXPERT_NAMES, *biases):
            del module._parameters[local]
            if local != "gate_up_proj":
                self._out[self._index[qualified_name(path, local)]] = []
        index = self._index[qualified_name(path, "gate_up_proj")]
        self._out[index] = _register(module, path, made, up.device, self._tensors[index], padding, self.method.declared)


def _register(
    module: nn.Module,
    path: str,
    made: Made,
    device: torch.device,
    template: ShardTensor,
    padding: Padding | None = None,
    declared: Mapping[str, float] | None = None,
) -> list[ShardTensor]:
    """The method's tensors registered on ``module`` (at ``path``), each an entry like ``template``; ``padding`` (rows,
    of held) of the experts' intermediate dimension, in every tensor that has it (all but ``w2_bias``); ``declared``:
    the constant the method declares on a tensor, by its local name."""
    entries = []
    for local, shape, dtype in made:
        tensor = nn.Parameter(torch.empty(shape, dtype=dtype, device=device), requires_grad=False)
        if declared and local in declared:
            tensor.dummy_weight_value = declared[local]  # type: ignore[attr-defined]
        module.register_parameter(local, tensor)
        pad = 0 if padding is None or local == "w2_bias" else tensor.nbytes * padding[0] // padding[1]
        name, dt = qualified_name(path, local), dtype_name(dtype)
        entries.append(
            dataclasses.replace(template, name=name, shape=shape, dtype=dt, nbytes=tensor.nbytes, padding_bytes=pad)
        )
    return entries
