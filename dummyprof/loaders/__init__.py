"""Fill strategies, per-tensor initializers and visit accounting."""

from __future__ import annotations

from dummyprof.loaders.initializers import (
    INITIALIZERS,
    FillOutcome,
    Initializer,
    V029Initializer,
    V033Initializer,
    get_initializer,
)
from dummyprof.loaders.recorder import StorageRecord, VisitRecorder, index_model, storage_key
from dummyprof.loaders.strategies import (
    STRATEGIES,
    Strategy,
    get_strategy,
    register_strategy,
    run_strategy,
    unregister_strategy,
)

__all__ = [
    "INITIALIZERS",
    "STRATEGIES",
    "FillOutcome",
    "Initializer",
    "StorageRecord",
    "Strategy",
    "V029Initializer",
    "V033Initializer",
    "VisitRecorder",
    "get_initializer",
    "get_strategy",
    "index_model",
    "register_strategy",
    "run_strategy",
    "storage_key",
    "unregister_strategy",
]
