"""What every model source gives: a description, a size estimate and a way to build it on a device.

Strategies only ever see the built ``nn.Module``; this is how commands stay the
same whether the model is synthetic, a preset or the user's own. Each source is one
module (``synthetic``, ``presets``, ``loading`` for a user's callable, ``huggingface``);
``scenarios/model_choice.py`` picks one (``--model`` values by prefix in its ``SOURCES``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


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


@dataclass(frozen=True)
class Quantization:
    """A checkpoint's quantization: its ``quantization_config``, the config fields its rules read, and the method
    the engine builds (``deploy.engine.engine_source`` resolves ``--quantization``; None: not applied)."""

    config: dict[str, Any]
    hidden: int | None = None  # the model's hidden size: which dimension of a fused expert tensor is hidden
    architectures: tuple[str, ...] = ()
    method: str | None = None


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
    # The dtype its floating tensors are built in where the source decides it (hf:, vLLM's --dtype resolved);
    # None: the model's code decides.
    dtype: torch.dtype | None = None
    quantization: Quantization | None = None  # a checkpoint's quantization (hf:), applied or not

    def recorded_options(self) -> dict[str, Any]:
        """What the Results record it was built with: its options, its dtype and the quantization it was built
        with (the method and the checkpoint's ``quantization_config``)."""
        recorded = dict(self.options)
        if self.dtype is not None:
            recorded.setdefault("dtype", str(self.dtype).removeprefix("torch."))
        if self.quantization is not None:
            recorded["quantization_config"] = self.quantization.config
            if self.quantization.method is not None:
                recorded["quantization"] = self.quantization.method
        return recorded
