"""Model trees to fill: the synthetic tree and Engram tables."""

from __future__ import annotations

from dummyprof.models.engram import EngramTable, engram_table_bytes
from dummyprof.models.synthetic import DTYPES, TreeSpec, build_tree, tree_bytes, tree_tensor_count, validate_spec

__all__ = [
    "DTYPES",
    "EngramTable",
    "TreeSpec",
    "build_tree",
    "engram_table_bytes",
    "tree_bytes",
    "tree_tensor_count",
    "validate_spec",
]
