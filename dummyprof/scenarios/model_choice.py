"""The one place a model is chosen (``--model`` by prefix, ``--preset``, else the synthetic tree), for every
command, rank and the Python API, and whether it fits the memory budget: models stay free of instruments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from dummyprof.deploy.engine import engine_source
from dummyprof.deploy.quant import AUTO
from dummyprof.errors import UsageError
from dummyprof.measure.budget import device_available, device_budget, ensure_fits, host_budget, offered_seconds
from dummyprof.models.huggingface import PREFIX, hf_reads, hf_source
from dummyprof.models.loading import model_source
from dummyprof.models.meta_bounds import BYTES_PER_META_OBJECT, BuildLimits, within
from dummyprof.models.presets import preset_source
from dummyprof.models.source import FitHint, ModelSource
from dummyprof.models.synthetic import TreeSpec, synthetic_source
from dummyprof.results.compare import ModelSummary
from dummyprof.scenarios.options import ModelGroup
from dummyprof.units import format_bytes
from dummyprof.usercode import spec_reads

# Building on meta with no --time-budget to bound it (inspect, audit): DeepSeek-V3 builds in about 4 s.
DEFAULT_META_BUILD_S = 60.0


def meta_build_limits(seconds: float | None = None, share: float | None = None) -> BuildLimits:
    """Bounds on building on meta: ``seconds`` (``share`` of the time budget, else a fixed bound), and host memory
    as objects (the interpreter's own memory, not --max-memory's tensors). With ``share``, a refusal offers the
    time budget whose share holds the build."""
    return BuildLimits(
        seconds=DEFAULT_META_BUILD_S if seconds is None else seconds,
        max_objects=max(1, host_budget() // BYTES_PER_META_OBJECT),
        time_field="" if seconds is None else "time_budget",
        # the --time-budget whose share holds a build's seconds, with an offer's margin
        budget_for=None if seconds is None or share is None else lambda build_s: offered_seconds(build_s / share),
    )


@dataclass(frozen=True)
class SourceKind:
    """A kind of ``--model`` value: ``build(spec, args, *, limits, **given)`` (``given``: the options of ``takes``
    the user gave), and ``reads(spec)``, ``(what, path)`` per file it reads (``{flag}`` in ``what``: the flag)."""

    build: Callable[..., ModelSource]
    reads: Callable[[str], Iterator[tuple[str, Path]]]
    takes: tuple[str, ...] = ()


def _hf_as_the_engine_builds(spec: str, args: dict[str, Any], *, limits: BuildLimits, **given: Any) -> ModelSource:
    """``hf:``, as vLLM builds it (``--quantization``: a quantized checkpoint becomes the engine's model)."""
    trust = given.get("trust_remote_code", False)
    source = hf_source(spec, args, trust_remote_code=trust, dtype=given.get("dtype", AUTO), limits=limits)
    with within(limits, flag="--model", what=source.description):  # the engine's model is built on meta too
        return engine_source(source, given.get("quantization", AUTO))


# ``--model`` values by prefix; any other value is the user's code (``pkg.mod:fn`` or ``./file.py:fn``).
# ``--preset`` and the synthetic tree are chosen by their own options and read no file.
SOURCES = {PREFIX: SourceKind(_hf_as_the_engine_builds, hf_reads, takes=("trust_remote_code", "quantization", "dtype"))}
USER_CODE = SourceKind(model_source, spec_reads)


def source_kind(spec: str) -> SourceKind:
    """The source a ``--model`` value names, by its prefix."""
    return next((kind for prefix, kind in SOURCES.items() if spec.startswith(prefix)), USER_CODE)


def choose_source(
    *,
    model: str | None,
    preset: str | None,
    model_args: dict[str, Any] | None,
    tree: TreeSpec | None = None,
    trust_remote_code: bool = False,
    quantization: str = AUTO,
    dtype: str = AUTO,
    seconds: float | None = None,
    share: float | None = None,
) -> ModelSource:
    """``--model`` by its prefix, ``--preset``, else the synthetic ``tree``; every build on meta bounded."""
    limits = meta_build_limits(seconds, share)
    if model and preset:
        raise UsageError.for_field("model", "give either --model or --preset, not both")
    kind = source_kind(model) if model else None
    asked = {"trust_remote_code": trust_remote_code, "quantization": quantization, "dtype": dtype}
    given = {key: value for key, value in asked.items() if value not in (False, AUTO)}
    for key in [key for key in given if key != "dtype"]:  # --dtype builds every source (docs/models-and-loaders.md)
        if key not in (kind.takes if kind else ()):
            raise UsageError.for_field(key, "only applies to --model hf:...; drop it or give an hf: model")
    if model_args and not (model or preset):
        raise UsageError.for_field(
            "model_args", "needs --model or --preset; the synthetic tree takes --depth, --hidden..."
        )
    args = dict(model_args or {})
    if model and kind is not None:
        source = kind.build(model, args, limits=limits, **given)
    else:
        source = (
            preset_source(preset, args, limits=limits, dtype=dtype) if preset else synthetic_source(tree or TreeSpec())
        )
    return bounded(source, limits)


def chosen_source(options: ModelGroup, seconds: float | None = None, share: float | None = None) -> ModelSource:
    """The model an options object's model group names (``model``, ``preset``, ``model_args``, the tree's fields)."""
    return choose_source(
        model=options.model,
        preset=options.preset,
        model_args=options.model_args,
        trust_remote_code=options.trust_remote_code,
        quantization=options.quantization,
        dtype=options.dtype,
        tree=options.tree_spec(),
        seconds=seconds,
        share=share,
    )


def bounded(source: ModelSource, limits: BuildLimits) -> ModelSource:
    """``source`` whose builds on meta (``build(meta)``, ``construct()``) run within ``limits``; a build on a
    device is bounded by the memory check instead."""
    fix = fit_words(source.fit_hint(0)) if source.fit_hint is not None else ""  # the smallest it can be

    def within_limits(build: Callable[[], nn.Module]) -> nn.Module:
        with within(limits, flag=source.size_flag, what=source.description, fix=fix):
            return build()

    build, construct = source.build, source.construct
    return replace(
        source,
        build=lambda device: within_limits(lambda: build(device)) if device.type == "meta" else build(device),
        construct=None if construct is None else lambda: within_limits(construct),
    )


def model_summary(
    source: ModelSource, device: str, *, modules: int, tensors: int, names: int, nbytes: int
) -> ModelSummary:
    return ModelSummary(
        source=source.source,
        description=source.description,
        device=device,
        modules=modules,
        tensors=tensors,
        names=names,
        bytes=nbytes,
        options=source.recorded_options(),
        notes=list(source.notes),
    )


def fit_words(hint: FitHint) -> str:
    if hint.model_arg:
        value = hint.fits if hint.fits is not None else "N"
        return f"pass --model-arg {hint.field}={value} (smaller)"
    also = "/".join(f"--{name}" for name in hint.also)
    if hint.fits is None:
        return f"lower --{hint.field}" + (f" or {also}" if also else "")
    return f"--{hint.field} {hint.fits} fits" + (
        f" at this {' and '.join(hint.also)} (or lower {also})" if also else ""
    )


def check_source_fits(source: ModelSource, device: torch.device, max_memory: int | None) -> None:
    """Refuse before building when one model plus the biggest temporary would not fit, naming the flag that sizes
    the model (its ``size_flag``: ``--preset``, ``--model``, the tree's ``--hidden``)."""
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
    ensure_fits(needed, budget, flag=source.size_flag, what=what, fix=smaller)
