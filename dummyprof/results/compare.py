"""Results of ``dummyprof compare``: strategies side by side on one model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dummyprof.results.common import MemoryUse, Timing


@dataclass
class ModelSummary:
    """The scenario: what was filled, and where."""

    source: str = "synthetic"  # synthetic, preset:NAME or a user's PATH
    description: str = ""
    device: str = "cpu"
    modules: int = 0
    tensors: int = 0  # distinct storages reachable through registered tensors
    names: int = 0  # registered names (a tied weight has two)
    bytes: int = 0
    options: dict[str, Any] = field(default_factory=dict)  # depth, width, hidden, dtype...
    notes: list[str] = field(default_factory=list)


@dataclass
class StrategyResult:
    name: str = ""
    description: str = ""
    initializer: str = ""
    timing: Timing = field(default_factory=Timing)
    visits: int = 0
    distinct_tensors: int = 0
    redundant_visits: int = 0
    max_visits: int = 0
    bytes_written: int = 0
    redundant_bytes_written: int = 0
    peak_scratch_bytes: int = 0
    memory: MemoryUse = field(default_factory=MemoryUse)
    recording_overhead_s: float | None = None

    @property
    def gb_per_s(self) -> float | None:
        median = self.timing.median
        return self.bytes_written / median / 1e9 if median else None


@dataclass
class TensorResult:
    """One storage: its names and how each strategy treated it."""

    names: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    module: str = ""
    depth: int = 0
    shape: list[int] = field(default_factory=list)
    dtype: str = ""
    nbytes: int = 0
    visits: dict[str, int] = field(default_factory=dict)
    bytes_written: dict[str, int] = field(default_factory=dict)

    def redundant(self, strategy: str) -> int:
        return max(0, self.visits.get(strategy, 0) - 1)


@dataclass
class FloorResult:
    """The memset floor of this run: every distinct storage of a freshly built model zeroed once, per round.

    Timed in the same interleaved rounds as the strategies, page faults of fresh memory included, so a
    strategy's rate over this one is its share of what the memory system did here.
    """

    bytes_written: int = 0
    timing: Timing = field(default_factory=Timing)
    generator_bound_share: float = 0.0  # a strategy under this share of the floor is flagged generator-bound

    @property
    def bytes_per_s(self) -> float | None:
        median = self.timing.median
        return self.bytes_written / median if median and self.bytes_written else None


@dataclass
class CompareResult:
    model: ModelSummary = field(default_factory=ModelSummary)
    repeat: int = 0
    warmup: int = 1
    strategies: list[StrategyResult] = field(default_factory=list)
    tensors: dict[str, TensorResult] = field(default_factory=dict)  # keyed by qualified name
    baseline_strategy: str = "legacy"
    floor: FloorResult | None = None  # None in files written before the floor was measured

    def share_of_floor(self, name: str) -> float | None:
        """A strategy's rate (bytes it wrote over its median time) over the floor's rate; None when unknown."""
        floor = self.floor.bytes_per_s if self.floor is not None else None
        mine = self.strategy(name).gb_per_s
        return mine * 1e9 / floor if floor and mine else None

    def generator_bound(self, name: str) -> bool | None:
        share = self.share_of_floor(name)
        return None if share is None or self.floor is None else share < self.floor.generator_bound_share

    def strategy(self, name: str) -> StrategyResult:
        for s in self.strategies:
            if s.name == name:
                return s
        raise KeyError(name)

    def speedup(self, name: str) -> float | None:
        """Median time of the baseline strategy over this one's (a ratio of medians)."""
        try:
            base = self.strategy(self.baseline_strategy).timing.median
        except KeyError:
            return None
        mine = self.strategy(name).timing.median
        return base / mine if base and mine else None
