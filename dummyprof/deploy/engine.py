"""A model source as the engine builds it: a quantized checkpoint's one-rank model, and the sharder of a source.

The quantization rules (``quant.py``) rewrite a shard once it is cut (``shards.py``); this module puts the two
together for a source, so neither of them imports the other's caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from dummyprof.anatomy import largest_low_precision_elements, model_bytes
from dummyprof.deploy.plan import ModelDims
from dummyprof.deploy.quant import ACT_DTYPES, AUTO, METHODS, QuantScheme, ShardQuantizer, resolve_method
from dummyprof.deploy.shards import Sharder
from dummyprof.errors import UsageError
from dummyprof.layout import ParallelLayout
from dummyprof.models.source import ModelSource


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

    method, notice = resolve_method(source.options.get("quantization_config"), flag)
    if notice:
        source.notes.append(notice)
    if method is None:
        return source
    options = {**source.options, "quantization": method}
    dtype = str(options.get("dtype"))
    supported = [str(d).removeprefix("torch.") for d in ACT_DTYPES[method]]
    if dtype not in supported:
        raise UsageError.for_field("dtype", f"vLLM refuses {method} with {dtype}: it supports {', '.join(supported)}")
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
