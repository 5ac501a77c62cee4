"""The results data model (torch-free) and its JSON storage."""

from __future__ import annotations

from dummyprof.results.common import Environment, Estimate, MemoryUse
from dummyprof.results.compare import CompareResult, ModelSummary, StrategyResult, TensorResult
from dummyprof.results.session import SCHEMA_VERSION, Results
from dummyprof.results.store import load_results, results_from_dict, results_to_json

__all__ = [
    "SCHEMA_VERSION",
    "CompareResult",
    "Environment",
    "Estimate",
    "MemoryUse",
    "ModelSummary",
    "Results",
    "StrategyResult",
    "TensorResult",
    "load_results",
    "results_from_dict",
    "results_to_json",
]
