"""Models from anywhere: ``package.module:callable``, ``./file.py:callable`` or a preset.

A user's callable has no size estimate, so it is first called under
``torch.device("meta")``: shapes and dtypes cost nothing there, and the bytes of
its parameters and buffers are checked against the memory budget before it is
ever built for real. A callable that itself returns meta tensors is
materialized on the run's device with ``to_empty`` (ties re-made), and the
report says so.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from dummyprof.anatomy import (
    PARAMETER,
    has_meta,
    largest_low_precision_elements,
    model_bytes,
    registered_tensors,
    storage_key,
    walk,
)
from dummyprof.errors import UsageError
from dummyprof.measure.budget import device_budget, ensure_fits
from dummyprof.models.source import ModelSource

SPEC_FORMS = "package.module:callable or ./file.py:callable"


def parse_model_args(items: Iterable[str], *, flag: str = "--model-arg") -> dict[str, Any]:
    """``key=value`` pairs; values are Python literals (``4``, ``1e-3``, ``'bf16'``, ``[1, 2]``), else plain strings."""
    parsed: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise UsageError(flag, f"expected key=value with a Python name as key, got {item!r}; e.g. {flag} layers=4")
        if key in parsed:
            raise UsageError(flag, f"{key!r} is given twice")
        try:
            parsed[key] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            parsed[key] = text.strip()  # bare words such as bfloat16 stay strings
    return parsed


def _file_module(target: str, flag: str) -> Any:
    path = Path(target)
    if not path.is_file():
        raise UsageError(flag, f"no such file {target!r}; give {SPEC_FORMS}")
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    name = f"_dummyprof_user_{resolved.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise UsageError(flag, f"cannot import {str(path)!r} as Python source; give {SPEC_FORMS}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a module up by name while it executes
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise UsageError(flag, f"importing {str(path)!r} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _package_module(name: str, flag: str) -> Any:
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # as ``python -m`` would: modules next to the user resolve
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise UsageError(flag, f"cannot import module {name!r}: {exc}; check the name or PYTHONPATH") from exc
    except Exception as exc:
        raise UsageError(flag, f"importing module {name!r} failed: {type(exc).__name__}: {exc}") from exc


def resolve_callable(spec: str, *, flag: str = "--model") -> Callable[..., Any]:
    """Import ``module:attr`` or ``file.py:attr`` (``attr`` may be dotted) and return the callable."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise UsageError(flag, f"expected {SPEC_FORMS}, got {spec!r}")
    is_file = target.endswith(".py") or "/" in target or os.sep in target
    module = _file_module(target, flag) if is_file else _package_module(target, flag)
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            public = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n, None)))
            hint = f"; it defines: {', '.join(public[:12])}" if public else ""
            raise UsageError(flag, f"{target!r} has no attribute {attr!r}{hint}")
        value = getattr(value, part)
    if not callable(value):
        raise UsageError(flag, f"{spec!r} is a {type(value).__name__}, not a callable")
    return value


def call_model_builder(fn: Callable[..., Any], args: dict[str, Any], *, spec: str, flag: str = "--model") -> nn.Module:
    try:
        model = fn(**args)
    except Exception as exc:
        raise UsageError(flag, f"{spec} raised {type(exc).__name__}: {exc}") from exc
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


def _meta_probe(fn: Callable[..., Any], args: dict[str, Any], spec: str, flag: str) -> nn.Module:
    try:
        with torch.device("meta"):
            model = fn(**args)
    except Exception as exc:
        raise UsageError(
            flag,
            f"{spec} raised {type(exc).__name__}: {exc} (it was called under torch.device('meta') first, to size "
            "the model before allocating it: avoid .item()/.tolist() on new tensors)",
        ) from exc
    if not isinstance(model, nn.Module):
        raise UsageError(flag, f"{spec} returned {type(model).__name__}, not a torch.nn.Module")
    return model


def callable_source(
    spec: str,
    fn: Callable[..., Any],
    args: dict[str, Any],
    *,
    source: str,
    description: str,
    flag: str = "--model",
    options: dict[str, Any] | None = None,
) -> ModelSource:
    """A ModelSource for any callable returning an ``nn.Module``, sized on the meta device first."""
    probe = _meta_probe(fn, args, spec, flag)
    estimated = model_bytes(probe)
    scratch = 3 * largest_low_precision_elements(probe)  # the v0.29 fp8 path: fp16 copy + fp8 copy
    del probe
    notes: list[str] = []

    def build(device: torch.device) -> nn.Module:
        with torch.device(device):
            model = call_model_builder(fn, args, spec=spec, flag=flag)
        if has_meta(model) and device.type != "meta":
            made = materialize(model, device)
            if not notes:
                notes.extend(made)
        return model

    return ModelSource(
        source=source,
        description=description,
        build=build,
        estimated_bytes=estimated,
        options=dict(args) if options is None else dict(options),
        notes=notes,
        largest_scratch_bytes=scratch,
    )


def model_source(spec: str, args: dict[str, Any] | None = None, *, flag: str = "--model") -> ModelSource:
    """The ModelSource for ``--model SPEC`` with ``--model-arg`` values ``args``."""
    args = dict(args or {})
    fn = resolve_callable(spec, flag=flag)
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return callable_source(spec, fn, args, source=spec, description=f"{spec}({shown})", flag=flag)


def resolve_source(*, model: str | None, preset: str | None, model_args: dict[str, Any] | None) -> ModelSource | None:
    """The source named by ``--model`` or ``--preset``; None means: the synthetic tree."""
    if model and preset:
        raise UsageError("--model", "give either --model or --preset, not both")
    if preset:
        from dummyprof.models.presets import preset_source

        return preset_source(preset, model_args or {})
    if model:
        return model_source(model, model_args or {})
    if model_args:
        raise UsageError("--model-arg", "needs --model or --preset; the synthetic tree takes --depth, --hidden...")
    return None


def check_source_fits(source: ModelSource, device: torch.device, max_memory: int | None, *, flag: str) -> None:
    """Refuse before building when one model plus the biggest temporary would not fit."""
    if source.estimated_bytes is None or device.type == "meta":
        return
    budget, where = device_budget(device, max_memory)
    if source.fit_hint is not None:
        fix = source.fit_hint(budget)
    else:
        fix = "pass smaller --model-arg values (fewer layers, smaller hidden) or raise --max-memory"
    needed = source.estimated_bytes + source.largest_scratch_bytes
    ensure_fits(needed, budget, flag=flag, what=f"{source.description} ({where})", fix=fix)
