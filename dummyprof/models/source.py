"""Where a model comes from: a description, a size estimate and a way to build it on a device.

Strategies only ever see the built ``nn.Module``; this is how commands stay the
same whether the model is synthetic, a preset or the user's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch
from torch import nn

from dummyprof.models.synthetic import (
    SCALE_BLOCK,
    SyntheticModel,
    TreeSpec,
    tree_bytes,
    tree_tensor_count,
    validate_spec,
)


@dataclass(frozen=True)
class FitHint:
    """How a model that does not fit a budget could: data, worded by the scenario that refuses it.

    ``field`` is an options field (``hidden``) or, with ``model_arg``, a --model-arg key
    (``num_hidden_layers``); ``fits`` the largest value that fits (None: no value of it alone does);
    ``also`` other fields that lowering helps.
    """

    field: str
    fits: int | None = None
    also: tuple[str, ...] = ()
    model_arg: bool = False


@dataclass
class ModelSource:
    source: str
    description: str
    build: Callable[[torch.device], nn.Module]
    estimated_bytes: int | None  # None when the size is only known after building
    options: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    largest_scratch_bytes: int = 0  # biggest per-tensor temporary any initializer may need
    # What would make it fit a budget of N bytes (None: nothing known beyond smaller --model-arg values).
    fit_hint: Callable[[int], FitHint] | None = None
    size_flag: str = "--model"  # the flag an error about size should name
    # The constructor run afresh on meta, where build(meta) copies a model built once (hf:); None: build(meta) is.
    construct: Callable[[], nn.Module] | None = None
    # The model before the engine rewrites it (a quantized checkpoint: transformers' unquantized meta model),
    # which deployments cut into shards; None: ``build(meta)`` is that model.
    whole: Callable[[], nn.Module] | None = None


def synthetic_source(spec: TreeSpec) -> ModelSource:
    validate_spec(spec)
    notes = []
    if not spec.fp8:
        notes.append("this torch build has no float8_e4m3fn: fp8 weights and their scales are left out")
    # The legacy initializer widens the biggest fp8 tensor to fp16 and narrows it back: 3 bytes/element.
    fp8_elements = max(spec.hidden * spec.hidden if spec.fp8 else 0, spec.engram_rows * spec.hidden)
    return ModelSource(
        source="synthetic",
        description=(
            f"synthetic tree: depth {spec.depth}, width {spec.width}, hidden {spec.hidden}, {spec.dtype}"
            + (", meta tensor" if spec.meta else "")
            + (f", engram {spec.engram_rows} rows" if spec.engram_rows else "")
        ),
        build=lambda device: SyntheticModel(spec, device),  # checked once above, not again each round
        estimated_bytes=tree_bytes(spec),
        options={**asdict(spec), "blocks": spec.blocks, "expected_tensors": tree_tensor_count(spec)},
        notes=notes,
        largest_scratch_bytes=3 * fp8_elements,
        fit_hint=lambda budget: _tree_fit_hint(spec, budget),
        size_flag="--hidden",
    )


def _tree_fit_hint(spec: TreeSpec, budget: int) -> FitHint:
    """The largest power-of-two multiple of the scale block that fits as ``hidden``; else lower width or depth."""
    fitting = None
    hidden = SCALE_BLOCK
    while hidden <= spec.hidden and tree_bytes(replace(spec, hidden=hidden)) + 3 * hidden * hidden <= budget:
        fitting = hidden
        hidden *= 2
    if fitting is None:
        return FitHint("width", also=("depth",))
    return FitHint("hidden", fitting, also=("width", "depth"))
