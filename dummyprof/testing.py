"""Assertions a project can put in its own pytest suite.

Example::

    from dummyprof.testing import assert_each_tensor_filled_once

    def test_dummy_loader_fills_each_weight_once():
        assert_each_tensor_filled_once(build_my_model, my_dummy_loader)
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from dummyprof.measure.write_tracer import TraceResult, trace_writes

MAX_LISTED = 20
_NEVER_FILLED_DTYPES = (torch.int16, torch.int32, torch.int64, torch.bool, torch.uint16, torch.uint32, torch.uint64)


def trace_loader(
    model: nn.Module | Callable[[], nn.Module], loader: Callable[..., Any] | str, **loader_args: Any
) -> tuple[nn.Module, TraceResult]:
    """``loader`` (a callable or a strategy name) run on ``model`` (or ``model()``) under the tracer."""
    target = model if isinstance(model, nn.Module) else model()
    if isinstance(loader, str):  # a built-in strategy by name
        from dummyprof.loaders.strategies import get_strategy, run_strategy

        strategy = get_strategy(loader)
        return target, trace_writes(target, lambda built: run_strategy(built, strategy))

    def fill(built: nn.Module) -> None:
        with torch.no_grad():
            loader(built, **loader_args)

    return target, trace_writes(target, fill)


def assert_each_tensor_filled_once(
    model: nn.Module | Callable[[], nn.Module],
    loader: Callable[..., Any] | str,
    *,
    allow_unwritten: Iterable[str] = (),
    **loader_args: Any,
) -> TraceResult:
    """Fail unless ``loader`` writes every registered parameter and persistent buffer (a tied or aliased storage
    once) exactly once and no non-persistent buffer. What vLLM's initializer never fills may stay unwritten (meta
    tensors, integers other than int8/uint8), and names matching the fnmatch patterns of ``allow_unwritten``.
    Returns the trace."""
    from dummyprof.anatomy import NON_PERSISTENT, buffer_persistence, dtype_name, storage_owners

    target, trace = trace_loader(model, loader, **loader_args)
    patterns = list(allow_unwritten)
    storages = storage_owners(target, buffer_persistence(target))
    problems: list[str] = []
    for key, entries in storages.items():
        names = [e.name for e in entries]
        label = " = ".join(names)
        record = trace.records.get(key)
        writes = record.visits if record is not None else 0
        tensor = entries[0].tensor
        if all(e.kind == NON_PERSISTENT for e in entries):
            if writes:
                problems.append(f"{label}: non-persistent buffer written {writes} time(s); it should be left alone")
            continue
        if writes == 1:
            continue
        if writes > 1:
            problems.append(f"{label}: written {writes} times")
            continue
        may_skip = tensor.device.type == "meta" or tensor.dtype in _NEVER_FILLED_DTYPES
        if not may_skip and not any(fnmatch.fnmatchcase(n, p) for n in names for p in patterns):
            problems.append(f"{label}: never written ({dtype_name(tensor.dtype)})")
    if trace.replaced:
        problems += [f"{name}: replaced instead of written in place" for name in trace.replaced]
    if problems:
        shown = problems[:MAX_LISTED]
        more = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise AssertionError(f"{len(problems)} tensor(s) not filled exactly once:\n  " + "\n  ".join(shown) + more)
    return trace
