"""The model a scenario runs on: ``--model``, ``--preset`` or the synthetic tree, and whether it fits.

Here, not in ``models``, because it ties model sources (``models``) to the
memory budget (``measure``): models stay free of instruments, and no model
module needs another to find a preset.
"""

from __future__ import annotations

from typing import Any

import torch

from dummyprof.deploy.quant import engine_source
from dummyprof.errors import UsageError
from dummyprof.measure.budget import device_available, device_budget, ensure_fits, host_budget
from dummyprof.models.huggingface import hf_source, is_hf_spec
from dummyprof.models.loading import model_source
from dummyprof.models.meta_bounds import BYTES_PER_META_OBJECT, BuildLimits
from dummyprof.models.presets import preset_source
from dummyprof.models.source import FitHint, ModelSource, synthetic_source
from dummyprof.models.synthetic import TreeSpec
from dummyprof.results.compare import ModelSummary
from dummyprof.units import format_bytes

# Building on meta with no --time-budget to bound it (inspect, audit): DeepSeek-V3 builds in about 4 s.
DEFAULT_META_BUILD_S = 60.0


def meta_build_limits(seconds: float | None = None) -> BuildLimits:
    """Bounds on building a model on meta: ``seconds`` (the counting share of the time budget, which names
    ``time_budget`` when it stops the build; default a fixed bound), and host memory as objects.

    Not --max-memory: that bounds the model's tensors; the meta objects are the interpreter's own memory.
    """
    return BuildLimits(
        seconds=DEFAULT_META_BUILD_S if seconds is None else seconds,
        max_objects=max(1, host_budget() // BYTES_PER_META_OBJECT),
        time_field="" if seconds is None else "time_budget",
    )


def resolve_source(
    *,
    model: str | None,
    preset: str | None,
    model_args: dict[str, Any] | None,
    trust_remote_code: bool = False,
    limits: BuildLimits | None = None,
    quantization: str = "auto",
) -> ModelSource | None:
    """The source named by ``--model`` or ``--preset``; None means: the synthetic tree.

    A model built on meta to size it is built within ``limits`` (default: :func:`meta_build_limits`).
    """
    if (model or preset) and limits is None:
        limits = meta_build_limits()
    if model and preset:
        raise UsageError.for_field("model", "give either --model or --preset, not both")
    if trust_remote_code and not is_hf_spec(model):
        raise UsageError.for_field("trust_remote_code", "only applies to --model hf:...; drop it or give an hf: model")
    if quantization != "auto" and not is_hf_spec(model):
        raise UsageError.for_field("quantization", "only applies to --model hf:...; drop it or give an hf: model")
    if model and is_hf_spec(model):
        source = hf_source(model, model_args or {}, trust_remote_code=trust_remote_code, limits=limits)
        return engine_source(source, quantization)
    if preset:
        return preset_source(preset, model_args or {}, limits=limits)
    if model:
        return model_source(model, model_args or {}, limits=limits)
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
    limits: BuildLimits | None = None,
    quantization: str = "auto",
) -> ModelSource:
    """The source named by ``--model`` or ``--preset``, else the synthetic tree ``tree``."""
    source = resolve_source(
        model=model,
        preset=preset,
        model_args=model_args,
        trust_remote_code=trust_remote_code,
        limits=limits,
        quantization=quantization,
    )
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


def fit_words(hint: FitHint) -> str:
    """A model source's FitHint as advice (flags named as the CLI spells them)."""
    if hint.model_arg:
        value = hint.fits if hint.fits is not None else "N"
        return f"pass --model-arg {hint.field}={value} (smaller)"
    also = "/".join(f"--{name}" for name in hint.also)
    if hint.fits is None:
        return f"lower --{hint.field}" + (f" or {also}" if also else "")
    return f"--{hint.field} {hint.fits} fits" + (
        f" at this {' and '.join(hint.also)} (or lower {also})" if also else ""
    )


def check_source_fits(source: ModelSource, device: torch.device, max_memory: int | None, *, flag: str) -> None:
    """Refuse before building when one model plus the biggest temporary would not fit."""
    if source.estimated_bytes is None or device.type == "meta":
        return
    budget, where = device_budget(device, max_memory)
    needed = source.estimated_bytes + source.largest_scratch_bytes
    if needed <= budget:
        return
    smaller = fit_words(source.fit_hint(budget)) if source.fit_hint is not None else None
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
