"""A model source as the engine builds it: a quantized checkpoint's one-rank model, and the sharder of a source.

The quantization rules (``quant.py``) rewrite a shard once it is cut (``shards.py``, which takes any rewrite
through its ``ShardRewrite`` protocol and imports no rule); this module joins the two for a model source.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from dummyprof.anatomy import largest_low_precision_elements, model_bytes
from dummyprof.deploy.plan import ModelDims
from dummyprof.deploy.quant import AUTO, METHODS, QuantScheme, ShardQuantizer, resolve_method
from dummyprof.deploy.quant_config import check_config
from dummyprof.deploy.shards import Sharder
from dummyprof.errors import UsageError
from dummyprof.layout import ParallelLayout
from dummyprof.models.source import ModelSource


def quantizer_of(source: ModelSource) -> ShardQuantizer | None:
    """What rewrites each shard of a quantized source (its quantization, once :func:`engine_source` resolved the
    method); None: unquantized."""
    found = source.quantization
    if found is None or found.method not in METHODS:
        return None
    dtype = source.dtype or torch.bfloat16
    return ShardQuantizer(QuantScheme(found.method, found.config, dtype, found.hidden, found.architectures))


def source_sharder(source: ModelSource, model: nn.Module, layout: ParallelLayout) -> Sharder:
    """Each rank's shard of ``model`` (``source`` built on meta) under ``layout``, as the engine builds it: split by
    the model's heads (a preset's options name them), each shard rewritten by the source's quantization."""
    return Sharder(model, layout, ModelDims.of(model, source.options), quantizer_of(source))


def engine_source(source: ModelSource, flag: str = AUTO) -> ModelSource:
    """``source`` as vLLM builds it with ``--quantization flag``: a quantized checkpoint becomes the engine's
    one-rank model (fused linears holding the method's tensors); deployments cut its ``whole`` model per rank.

    Unquantized (no ``quantization_config``, or ``none``), the source is returned as it is (with a notice for
    ``none`` on a quantized checkpoint).
    """
    found = source.quantization
    method, notice = resolve_method(None if found is None else found.config, flag)
    if notice:
        source.notes.append(notice)
    if method is None or found is None:
        return source
    check_config(method, found.config or {})
    dtype = str(source.dtype).removeprefix("torch.")
    supported = [str(d).removeprefix("torch.") for d in METHODS[method].act_dtypes]
    if dtype not in supported:
        raise UsageError.for_field("dtype", f"vLLM refuses {method} with {dtype}: it supports {', '.join(supported)}")
    engine = dataclasses.replace(source, quantization=dataclasses.replace(found, method=method))
    whole = source.build(torch.device("meta"))
    one = ParallelLayout()
    sharder = source_sharder(engine, whole, one)
    model = sharder.build(one.coords()[0]).module
    return dataclasses.replace(
        engine,
        description=f"{source.description}, {method} as vLLM builds it",
        build=lambda device: sharder.build(one.coords()[0], device).module,
        estimated_bytes=model_bytes(model),
        largest_scratch_bytes=3 * largest_low_precision_elements(model),
        whole=lambda: whole,
    )
