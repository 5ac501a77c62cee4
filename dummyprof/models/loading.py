"""Models from a user's callable (``package.module:callable``, ``./file.py:callable``), sized on meta first.

A user's callable has no size estimate, so it is first called under
``torch.device("meta")``: shapes and dtypes cost nothing there, and the bytes of
its parameters and buffers are checked against the memory budget before it is
ever built for real. A callable that itself returns meta tensors is
materialized on the run's device with ``to_empty`` (ties re-made), and the
report says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from dummyprof.anatomy import (
    PARAMETER,
    dtype_name,
    has_meta,
    largest_low_precision_elements,
    model_bytes,
    registered_tensors,
    storage_key,
    walk,
)
from dummyprof.errors import UsageError, running_user_code
from dummyprof.models.meta_bounds import BuildLimits, BuildStopped, within
from dummyprof.models.source import ModelSource
from dummyprof.usercode import resolve_callable

# Why a factory failed the first time it is called: it was on meta, where values cannot be read.
META_NOTE = (
    " (it was called under torch.device('meta') first, to size the model before allocating it: "
    "avoid .item()/.tolist() on new tensors)"
)


def call_model_builder(
    fn: Callable[..., Any], args: dict[str, Any], *, spec: str, flag: str = "--model", note: str = ""
) -> nn.Module:
    with running_user_code(flag, spec, note, passes=(BuildStopped,)):  # a bounded build's stop: the bound says so
        model = fn(**args)
    if not isinstance(model, nn.Module):
        raise UsageError(flag, f"{spec} returned {type(model).__name__}, not a torch.nn.Module")
    return model


def materialize(model: nn.Module, device: torch.device) -> list[str]:
    """``to_empty`` on ``device``, re-tying shared tensors; returns notes for the report.

    ``to_empty`` gives each owner a fresh tensor, which silently unties an
    embedding from its lm_head. Tensors that were the same object are re-tied
    here; views of another tensor's storage cannot be, and the note says so.
    """
    groups: dict[int, list[tuple[dict[str, Any], str]]] = {}  # id(tensor) -> (registry, local name) of each owner
    storages_before: set[int] = set()
    for entry in walk(model, remove_duplicate=True):
        registry = entry.module._parameters if entry.kind == PARAMETER else entry.module._buffers
        groups.setdefault(id(entry.tensor), []).append((registry, entry.local))
        storages_before.add(storage_key(entry.tensor))
    model.to_empty(device=device)
    for owners in groups.values():
        first_registry, first_name = owners[0]
        shared = first_registry[first_name]
        for registry, name in owners[1:]:
            registry[name] = shared
    storages_after = {storage_key(t) for t in registered_tensors(model)}
    notes = [
        f"the model was built on the meta device and materialized on {device} with to_empty (uninitialized memory)"
    ]
    split = len(storages_after) - len(storages_before)
    if split > 0:
        notes.append(
            f"to_empty gave {split} aliased view(s) their own storage: aliasing present on meta is not "
            "reproduced in the materialized model"
        )
    return notes


def materialize_meta(model: nn.Module, device: torch.device, notes: list[str]) -> nn.Module:
    """``model``, its meta tensors materialized on ``device`` (not meta); ``notes`` gets the first build's notes."""
    if has_meta(model) and device.type != "meta":
        made = materialize(model, device)
        if not notes:
            notes.extend(made)
    return model


def refuse_non_dense(model: nn.Module, spec: str, *, flag: str) -> None:
    """A sparse (or nested) parameter or buffer has no storage to fill: refused, naming it, before any fill.

    Refused rather than skipped: its bytes would be missing from every count and time, silently.
    """
    for kind, named in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
        for name, tensor in named:
            layout = str(tensor.layout).removeprefix("torch.")
            if tensor.layout != torch.strided or tensor.is_nested:
                what = "nested" if tensor.is_nested else layout
                raise UsageError(
                    flag,
                    f"{spec}: {kind} {name!r} is a {what} tensor; dummyprof fills dense (strided) tensors only: "
                    "register it dense, or leave it out of the model it profiles",
                )


@contextmanager
def default_dtype(dtype: torch.dtype | None) -> Iterator[None]:
    """torch's default float dtype set to ``dtype`` while a model is built (None: left as it is), as vLLM builds a
    model under ``set_default_torch_dtype``: floats made without an explicit dtype take it."""
    before = torch.get_default_dtype()
    if dtype is not None:
        torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def callable_source(
    spec: str,
    fn: Callable[..., Any],
    args: dict[str, Any],
    *,
    source: str,
    description: str,
    flag: str = "--model",
    options: dict[str, Any] | None = None,
    limits: BuildLimits | None = None,
    dtype: torch.dtype | None = None,
) -> ModelSource:
    """A ModelSource for any callable returning an ``nn.Module``, sized on the meta device first (within ``limits``);
    ``dtype`` (``--dtype``): torch's default dtype while it builds (:func:`default_dtype`), said in a notice."""
    with within(limits, flag=flag, what=spec), torch.device("meta"), default_dtype(dtype):
        probe = call_model_builder(fn, args, spec=spec, flag=flag, note=META_NOTE)
    refuse_non_dense(probe, spec, flag=flag)
    estimated = model_bytes(probe)
    scratch = 3 * largest_low_precision_elements(probe)  # the v0.29 fp8 path: fp16 copy + fp8 copy
    del probe
    notes: list[str] = []
    if dtype is not None:
        name = dtype_name(dtype)
        notes.append(f"--dtype {name}: built with torch's default dtype set to {name}, as vLLM builds a model; "
                     "tensors the code makes in an explicit dtype keep it")  # fmt: skip

    def build(device: torch.device) -> nn.Module:
        with torch.device(device), default_dtype(dtype):
            model = call_model_builder(fn, args, spec=spec, flag=flag)
        return materialize_meta(model, device, notes)

    return ModelSource(
        source=source,
        description=description,
        build=build,
        estimated_bytes=estimated,
        options=dict(args) if options is None else dict(options),
        notes=notes,
        largest_scratch_bytes=scratch,
        size_flag=flag,
    )


def model_source(
    spec: str,
    args: dict[str, Any] | None = None,
    *,
    flag: str = "--model",
    limits: BuildLimits | None = None,
    dtype: str = "auto",
) -> ModelSource:
    """The ModelSource for ``--model SPEC`` with ``--model-arg`` values ``args``; ``dtype`` (``--dtype``, not auto):
    torch's default dtype while the code builds the model."""
    args = dict(args or {})
    fn = resolve_callable(spec, flag=flag)
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
    float_dtype = None if dtype == "auto" else getattr(torch, dtype)
    return callable_source(spec, fn, args, source=spec, description=f"{spec}({shown})", flag=flag, limits=limits,
                           dtype=float_dtype)  # fmt: skip
