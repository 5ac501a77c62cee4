"""The model a scenario runs on: ``--model``, ``--preset`` or the synthetic tree, and whether it fits.

Here, not in ``models``, because it ties model sources (``models``) to the
memory budget (``measure``): models stay free of instruments, and no model
module needs another to find a preset.
"""

from __future__ import annotations

from typing import Any

import torch

from dummyprof.errors import UsageError
from dummyprof.measure.budget import device_available, device_budget, ensure_fits
from dummyprof.models.huggingface import hf_source, is_hf_spec
from dummyprof.models.loading import model_source
from dummyprof.models.presets import preset_source
from dummyprof.models.source import ModelSource, synthetic_source
from dummyprof.models.synthetic import TreeSpec
from dummyprof.results.compare import ModelSummary
from dummyprof.units import format_bytes


def resolve_source(
    *,
    model: str | None,
    preset: str | None,
    model_args: dict[str, Any] | None,
    trust_remote_code: bool = False,
) -> ModelSource | None:
    """The source named by ``--model`` or ``--preset``; None means: the synthetic tree."""
    if model and preset:
        raise UsageError.for_field("model", "give either --model or --preset, not both")
    if trust_remote_code and not is_hf_spec(model):
        raise UsageError.for_field("trust_remote_code", "only applies to --model hf:...; drop it or give an hf: model")
    if model and is_hf_spec(model):
        return hf_source(model, model_args or {}, trust_remote_code=trust_remote_code)
    if preset:
        return preset_source(preset, model_args or {})
    if model:
        return model_source(model, model_args or {})
    if model_args:
        raise UsageError.for_field(
            "model_args", "needs --model or --preset; the synthetic tree takes --depth, --hidden..."
        )
    return None


def source_or_tree(
    *,
    model: str | None,
    preset: str | None,
    model_args: dict[str, Any] | None,
    tree: TreeSpec,
    trust_remote_code: bool = False,
) -> ModelSource:
    """The source named by ``--model`` or ``--preset``, else the synthetic tree ``tree``."""
    source = resolve_source(model=model, preset=preset, model_args=model_args, trust_remote_code=trust_remote_code)
    return source if source is not None else synthetic_source(tree)


def model_summary(
    source: ModelSource, device: str, *, modules: int, tensors: int, names: int, nbytes: int
) -> ModelSummary:
    """What the report says about the model: the source's own words and options, and what was counted."""
    return ModelSummary(
        source=source.source,
        description=source.description,
        device=device,
        modules=modules,
        tensors=tensors,
        names=names,
        bytes=nbytes,
        options=dict(source.options),
        notes=list(source.notes),
    )


def check_source_fits(source: ModelSource, device: torch.device, max_memory: int | None, *, flag: str) -> None:
    """Refuse before building when one model plus the biggest temporary would not fit."""
    if source.estimated_bytes is None or device.type == "meta":
        return
    budget, where = device_budget(device, max_memory)
    needed = source.estimated_bytes + source.largest_scratch_bytes
    if needed <= budget:
        return
    smaller = source.fit_hint(budget) if source.fit_hint is not None else None
    smaller = smaller or "pass smaller --model-arg values (fewer layers, smaller hidden)"
    available = device_available(device)
    what = f"{source.description} ({where})"
    if max_memory is not None and max_memory <= available:
        # The user's own limit is what stops it: name that flag, and raising it would help.
        fix = f"raise --max-memory to {format_bytes(needed)} or {smaller}"
        ensure_fits(needed, budget, flag="--max-memory", what=what, fix=fix)
    if max_memory is not None:  # asked for more than there is: say so, never "raise --max-memory"
        free = format_bytes(available)
        smaller = f"--max-memory {format_bytes(max_memory)} cannot help, only {free} is free here; {smaller}"
    elif needed <= available:
        smaller += f" (or --max-memory {format_bytes(needed)}: the default leaves a share of memory free)"
    ensure_fits(needed, budget, flag=flag, what=what, fix=smaller)
