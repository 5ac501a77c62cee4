"""dummyprof: a start-up profiler for PyTorch dummy weight loading.

``import dummyprof`` is light (no torch): the entry points below load on first use.
"""

from __future__ import annotations

from typing import Any

from dummyprof._version import __version__

_LAZY = {
    "CompareOptions": "dummyprof.scenarios.compare.options",
    "compare": ("dummyprof.scenarios.compare.run", "run"),
    "TreeSpec": "dummyprof.models.synthetic",
    "build_tree": "dummyprof.models.synthetic",
    "Strategy": "dummyprof.loaders.strategies",
    "register_strategy": "dummyprof.loaders.strategies",
    "run_strategy": "dummyprof.loaders.strategies",
    "VisitRecorder": "dummyprof.measure.recorder",
    "Results": "dummyprof.results.session",
    "load_results": "dummyprof.results.store",
    "save_results": "dummyprof.api",
    "load_model": "dummyprof.api",
    "build_preset": "dummyprof.api",
    "render": "dummyprof.api",
    "trace_writes": "dummyprof.measure.write_tracer",
    "WriteTracer": "dummyprof.measure.write_tracer",
    "AuditOptions": "dummyprof.scenarios.audit.options",
    "audit": ("dummyprof.scenarios.audit.run", "run"),
    "InspectOptions": "dummyprof.scenarios.inspect.options",
    "inspect": ("dummyprof.scenarios.inspect.run", "run"),
    "EngramOptions": "dummyprof.scenarios.engram.options",
    "engram": ("dummyprof.scenarios.engram.run", "run"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'dummyprof' has no attribute {name!r}")
    module_name, attr = target if isinstance(target, tuple) else (target, name)
    import importlib

    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value
