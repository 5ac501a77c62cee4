"""Results of ``dummyprof inspect``: the module hierarchy with sizes and visits per strategy."""

from __future__ import annotations

from msgspec import field

from dummyprof.results.common import Count, Record
from dummyprof.results.compare import ModelSummary


class ModuleNode(Record):
    """One module. A storage counts toward the module of its canonical (first persistent) name only."""

    path: str = ""
    type: str = ""
    depth: Count = 0
    own_tensors: Count = 0  # registered names on this module (a tied weight's second owner included)
    own_bytes: Count = 0  # storages whose canonical owner is this module
    subtree_bytes: Count = 0  # distinct storages owned in this subtree
    shared: list[str] = []  # own names whose storage belongs elsewhere: "name = other"
    visits: dict[str, Count] = {}  # per strategy, storages canonically owned here
    redundant: dict[str, Count] = {}
    subtree_visits: dict[str, Count] = {}
    subtree_redundant: dict[str, Count] = {}
    children: Count = 0


class InspectResult(Record):
    model: ModelSummary = field(default_factory=ModelSummary)
    strategies: list[str] = []
    nodes: list[ModuleNode] = []  # pre-order, pruned as asked
    max_depth: Count | None = None
    min_bytes: Count = 0
    hidden_modules: Count = 0  # pruned by --max-depth / --min-bytes (their bytes and visits still count above)
    real_device_tensors: Count = 0  # tensors the model's callable put on a real device itself (device=)
