"""Put user loaders into a compare run: untraced runs for time, one traced run for writes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from torch import nn

from dummyprof.loaders.user_loader import LOADER_INITIALIZER, TRACING_NOTE, UserLoader, load_loader
from dummyprof.measure.write_tracer import TraceResult, trace_writes
from dummyprof.results.compare import CompareResult
from dummyprof.scenarios.compare.runner import add_to_tensor_table, summarize_records
from dummyprof.scenarios.options import loader_names


def load_loaders(specs: Sequence[str], args: dict[str, Any], taken: Sequence[str]) -> list[UserLoader]:
    """Each ``--loader`` imported, its name checked first (``options.loader_names``: no clash with ``taken``)."""
    loader_names(specs, taken)
    return [load_loader(spec, args) for spec in specs]


Traced = tuple[UserLoader, TraceResult]


def trace_loaders(loaders: Sequence[UserLoader], build: Callable[[], nn.Module]) -> list[Traced]:
    """Each loader traced once on a fresh model, before the timed rounds (its time inside the budget)."""
    return [(loader, trace_writes(build(), loader)) for loader in loaders]


def apply_traces(result: CompareResult, traced: Sequence[Traced]) -> list[str]:
    notes = []
    for loader, trace in traced:
        entry = result.strategy(loader.name)
        summarize_records(entry, trace.records.values())
        entry.initializer = LOADER_INITIALIZER
        entry.recording_overhead_s = None
        add_to_tensor_table(result.tensors, loader.name, trace.records.values())
        notes.append(TRACING_NOTE.format(name=loader.name, spec=loader.spec))
        if trace.untraced:
            shown = ", ".join(trace.records[k].name for k in trace.untraced[:5])
            notes.append(
                f"loader {loader.name} changed {len(trace.untraced)} tensor(s) without any operator writing them "
                f"(numpy views or raw pointers), each counted as one write: {shown}"
            )
        if trace.replaced:
            shown = ", ".join(trace.replaced[:5]) + (" ..." if len(trace.replaced) > 5 else "")
            notes.append(
                f"loader {loader.name} replaced {len(trace.replaced)} tensor(s) instead of writing them: {shown}"
            )
    return notes
