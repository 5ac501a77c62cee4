"""Results of ``dummyprof compare``: strategies side by side on one model."""

from __future__ import annotations

from typing import Any

from msgspec import field

from dummyprof.results.common import Contention, Count, Estimate, FirstTouch, MemoryUse, NoiseWarning, Record, named
from dummyprof.results.engram import LinearFit
from dummyprof.results.trace import StrategyTrace


class ModelSummary(Record):
    """The scenario: what was filled, and where."""

    source: str = "synthetic"  # synthetic, preset:NAME or a user's PATH
    description: str = ""
    device: str = "cpu"
    modules: Count = 0
    tensors: Count = 0  # distinct storages reachable through registered tensors
    names: Count = 0  # registered names (a tied weight has two)
    bytes: Count = 0
    options: dict[str, Any] = {}  # depth, width, hidden, dtype...
    notes: list[str] = []


class CalibrationClass(Record):
    """Touched tensors of one dtype filled by one operation at a few sizes, timed: the cost of a visit (its first
    touch is priced apart, ``SizeDecision.first_touch``); one class per operation, whichever initializers share it."""

    initializer: str = ""
    rule: str = ""  # uniform, uniform-via-fp16, declared, scale-byte, random-bytes
    dtype: str = ""
    sizes_bytes: list[Count] = []
    trials: list[Estimate] = []  # per size, every trial
    small_call_s: float = 0.0  # one fill of a tiny tensor, the median: the per-visit cost before its bytes
    fit: LinearFit = field(default_factory=LinearFit)  # seconds vs bytes, through each size's median
    fit_low: LinearFit = field(default_factory=LinearFit)  # the least steep trial line (sizing.slope_bounds)
    fit_high: LinearFit = field(default_factory=LinearFit)  # the steepest trial line


class Projection(Record):
    """A strategy's full-size fill, projected from exact meta counts and this run's calibration fills."""

    time: Estimate = field(default_factory=Estimate)  # low/high: every visit at its fastest/slowest calibration trial
    walk_s: float = 0.0  # the traversal itself, measured on the meta model with a no-op fill
    first_touch_s: float = 0.0  # of the point: the first write to every page the fill touches (the probe's price)
    peak_rss_bytes: Count = 0  # RSS now + model pages first-touched + largest temporary: never above fill + scratch
    floor_bound: bool = False  # the floor, not the calibration, set the point
    rss_before_bytes: Count = 0  # the RSS ``peak_rss_bytes`` starts from


class SizeDecision(Record):
    """Why the run was measured or projected, with the figures the decision used."""

    mode: str = "measured"  # measured | projected
    reason: str = ""  # fits | memory | time (which budget a full measured run would exceed)
    needed_bytes: Count = 0  # one model + the largest temporary
    budget_bytes: Count = 0
    predicted_s: float | None = None  # predicted wall time of the measured rounds
    time_budget_s: float = 0.0
    memset_bytes_per_s: float | None = None  # fill_ over touched memory
    calibration_s: float = 0.0  # wall time the calibration fills took
    counting_s: float = 0.0  # wall time of the meta build and counting passes
    calibration: list[CalibrationClass] = []
    first_touch: FirstTouch | None = None  # the probe of fresh pages (CPU); None where no page faults are taken


class StrategyResult(Record):
    name: str = ""
    description: str = ""
    initializer: str = ""
    time: Estimate = field(default_factory=Estimate)  # measured rounds, or (nothing measured) the projection
    visits: Count = 0
    distinct_tensors: Count = 0
    redundant_visits: Count = 0
    max_visits: Count = 0
    bytes_written: Count = 0
    redundant_bytes_written: Count = 0
    peak_scratch_bytes: Count = 0
    memory: MemoryUse = field(default_factory=MemoryUse)
    recording_overhead_s: float | None = None
    speedup_interval: list[float] = []  # 95% bootstrap [low, high]; empty when unknown
    projection: Projection | None = None  # set when calibrated; ``time`` is then its time where nothing was measured

    @property
    def seconds(self) -> float | None:
        return self.time.value

    @property
    def gb_per_s(self) -> float | None:
        seconds = self.seconds
        return self.bytes_written / seconds / 1e9 if seconds else None


class TensorResult(Record):
    """One storage: its names and how each strategy treated it."""

    names: list[str] = []
    kinds: list[str] = []
    module: str = ""
    depth: Count = 0
    shape: list[Count] = []
    dtype: str = ""
    nbytes: Count = 0
    visits: dict[str, Count] = {}
    bytes_written: dict[str, Count] = {}


class FloorResult(Record):
    """The memset floor of this run: every distinct storage of a freshly built model zeroed once, after each fill.

    Timed in the same interleaved rounds as the strategies, page faults of fresh memory included, so a
    strategy's rate over this one is its share of what the memory system did here.
    """

    bytes_written: Count = 0
    touched_bytes: Count = 0  # of them, storages below the mmap threshold: touched before the timed memset
    time: Estimate = field(default_factory=Estimate)
    generator_bound_share: float = 0.0  # a strategy under this share of the floor is flagged generator-bound

    @property
    def bytes_per_s(self) -> float | None:
        """The fastest round: a floor is the best the machine did, and a sub-millisecond memset of a small
        model is easily preempted on a shared machine, which only ever makes a reading slower."""
        fastest = self.time.low
        return self.bytes_written / fastest if fastest and self.bytes_written else None


class CompareResult(Record):
    model: ModelSummary = field(default_factory=ModelSummary)
    repeat: Count = 0
    warmup: Count = 1
    strategies: list[StrategyResult] = []
    tensors: dict[str, TensorResult] = {}  # keyed by qualified name
    baseline_strategy: str = "legacy"
    floor: FloorResult | None = None  # None when nothing was filled at full size (projected)
    counts: str = "recorded"  # recorded (real fills) | exact-meta (counting pass on the meta model)
    size: SizeDecision = field(default_factory=SizeDecision)
    noise: list[NoiseWarning] = []  # cold starts, outliers, uncertain speedups
    repeats_requested: Count = 0  # --repeat N when the time budget cut it to ``repeat`` (0: not cut)
    # Why the rounds stopped before --repeat: tight | budget | max under --repeat auto; budget also when a fixed
    # --repeat N ran out of --time-budget (repeats_requested then holds N). '' when every round ran.
    auto_stop: str = ""

    @property
    def contention(self) -> Contention | None:
        """How busy the machine was during the timed rounds (the strategies' times carry it)."""
        return next((s.time.contention for s in self.strategies if s.time.samples), None)

    @property
    def calibration_contention(self) -> Contention | None:
        """How busy the machine was while the calibration fills ran (the projections carry it)."""
        return next((s.projection.time.contention for s in self.strategies if s.projection is not None), None)

    @property
    def nothing_to_fill(self) -> bool:
        """The model holds no bytes and no strategy wrote any (no tensors, or only meta ones): no speedup to form."""
        return bool(self.strategies) and self.model.bytes == 0 and all(s.bytes_written == 0 for s in self.strategies)

    def share_of_floor(self, name: str) -> float | None:
        """A strategy's rate (bytes it wrote over its median time) over the floor's rate; None when unknown."""
        floor = self.floor.bytes_per_s if self.floor is not None else None
        mine = self.strategy(name).gb_per_s
        return mine * 1e9 / floor if floor and mine else None

    def generator_bound(self, name: str) -> bool | None:
        share = self.share_of_floor(name)
        return None if share is None or self.floor is None else share < self.floor.generator_bound_share

    # compare --trace: one instrumented round per strategy, run apart from the timed rounds.
    trace: list[StrategyTrace] = []

    def strategy(self, name: str) -> StrategyResult:
        return named(self.strategies, name)

    def speedup(self, name: str) -> float | None:
        """Median time of the baseline strategy over this one's (a ratio of medians); None with nothing filled."""
        if self.nothing_to_fill:
            return None  # both times are the walk's overhead alone: their ratio says nothing about filling
        try:
            base = self.strategy(self.baseline_strategy).seconds
        except KeyError:
            return None
        mine = self.strategy(name).seconds
        return base / mine if base and mine else None
