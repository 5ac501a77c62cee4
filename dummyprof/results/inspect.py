"""Results of ``dummyprof inspect``: the module hierarchy with sizes and visits per strategy."""

from __future__ import annotations

from dataclasses import dataclass, field

from dummyprof.results.compare import ModelSummary


@dataclass
class ModuleNode:
    """One module. A storage counts toward the module of its canonical (first persistent) name only."""

    path: str = ""
    type: str = ""
    depth: int = 0
    own_tensors: int = 0  # registered names on this module (a tied weight's second owner included)
    own_bytes: int = 0  # storages whose canonical owner is this module
    subtree_bytes: int = 0  # distinct storages owned in this subtree
    shared: list[str] = field(default_factory=list)  # own names whose storage belongs elsewhere: "name = other"
    visits: dict[str, int] = field(default_factory=dict)  # per strategy, storages canonically owned here
    redundant: dict[str, int] = field(default_factory=dict)
    subtree_visits: dict[str, int] = field(default_factory=dict)
    subtree_redundant: dict[str, int] = field(default_factory=dict)
    children: int = 0


@dataclass
class InspectResult:
    model: ModelSummary = field(default_factory=ModelSummary)
    strategies: list[str] = field(default_factory=list)
    nodes: list[ModuleNode] = field(default_factory=list)  # pre-order, pruned as asked
    max_depth: int | None = None
    min_bytes: int = 0
    hidden_modules: int = 0  # pruned by --max-depth / --min-bytes (their bytes and visits still count above)
    real_device_tensors: int = 0  # tensors the model's callable put on a real device itself (device=)
