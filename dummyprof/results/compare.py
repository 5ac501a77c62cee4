"""Results of ``dummyprof compare``: strategies side by side on one model."""

from __future__ import annotations

from typing import Any

from msgspec import field

from dummyprof.results.common import Contention, Count, MemoryUse, NoiseWarning, Record, Timing, named
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
    """Fresh tensors of one dtype filled by one initializer rule at a few sizes, timed: the cost of a visit."""

    initializer: str = ""
    rule: str = ""  # uniform, uniform-via-fp16, declared, scale-byte, random-bytes
    dtype: str = ""
    sizes_bytes: list[Count] = []
    samples_s: list[list[float]] = []  # per size, every trial
    small_call_s: float = 0.0  # one fill of a tiny tensor, fastest quartile: the per-visit floor
    fit: LinearFit = field(default_factory=LinearFit)  # seconds vs bytes, fastest quartile per size (capability)
    fit_low: LinearFit = field(default_factory=LinearFit)  # the least steep trial line (sizing.slope_bounds)
    fit_high: LinearFit = field(default_factory=LinearFit)  # the steepest trial line
    rss_growth_per_byte: float | None = None  # files before issue #25 (no longer measured: peaks are need-bound)
    # Its tensors pass FRESH_BYTES but it was calibrated below it, the budget leaving it less than these seconds
    # (sizing.calibration_step); None when it was calibrated there or needed not be.
    fresh_room_s: float | None = None


class Projection(Record):
    """A strategy's full-size fill, projected from exact meta counts and this run's calibration fills."""

    seconds: float = 0.0
    low_s: float = 0.0  # every visit at its fastest calibration trial
    high_s: float = 0.0  # every visit at its slowest
    floor_s: float = 0.0  # the bytes it writes at the memset rate measured in this run; never faster
    walk_s: float = 0.0  # the traversal itself, measured on the meta model with a no-op fill
    peak_rss_bytes: Count = 0  # RSS now + model pages first-touched + largest temporary: never above fill + scratch
    floor_bound: bool = False  # the floor, not the calibration, set ``seconds``
    rss_before_bytes: Count = 0  # the RSS ``peak_rss_bytes`` starts from (0 in files before issue #25)


class SizeDecision(Record):
    """Why the run was measured or projected, with the figures the decision used."""

    mode: str = "measured"  # measured | projected
    reason: str = ""  # fits | memory | time (which budget a full measured run would exceed)
    needed_bytes: Count = 0  # one model + the largest temporary
    budget_bytes: Count = 0
    predicted_s: float | None = None  # predicted wall time of the measured rounds
    time_budget_s: float = 0.0
    memset_bytes_per_s: float | None = None
    memset_fresh_pages: bool = (
        False  # the floor timed on fresh pages (as the largest class was calibrated), else touched
    )
    calibration_s: float = 0.0  # wall time the calibration fills took
    counting_s: float = 0.0  # wall time of the meta build and counting passes
    calibration: list[CalibrationClass] = []
    contention: Contention | None = None  # how busy the machine was while the calibration fills ran
    fresh_budget_s: float | None = None  # the --time-budget that calibrates every class on fresh pages, if short


class StrategyResult(Record):
    name: str = ""
    description: str = ""
    initializer: str = ""
    timing: Timing = field(default_factory=Timing)
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
    projection: Projection | None = None  # set when the model was too big (or slow) to fill here

    @property
    def seconds(self) -> float | None:
        """The measured median, or the projected time when nothing was measured."""
        if self.timing.samples_s:
            return self.timing.median
        return self.projection.seconds if self.projection is not None else None

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
    timing: Timing = field(default_factory=Timing)
    generator_bound_share: float = 0.0  # a strategy under this share of the floor is flagged generator-bound

    @property
    def bytes_per_s(self) -> float | None:
        """The fastest round: a floor is the best the machine did, and a sub-millisecond memset of a small
        model is easily preempted on a shared machine, which only ever makes a reading slower."""
        fastest = self.timing.min
        return self.bytes_written / fastest if fastest and self.bytes_written else None


class CompareResult(Record):
    model: ModelSummary = field(default_factory=ModelSummary)
    repeat: Count = 0
    warmup: Count = 1
    strategies: list[StrategyResult] = []
    tensors: dict[str, TensorResult] = {}  # keyed by qualified name
    baseline_strategy: str = "legacy"
    floor: FloorResult | None = None  # None in files written before the floor was measured
    counts: str = "recorded"  # recorded (real fills) | exact-meta (counting pass on the meta model)
    size: SizeDecision = field(default_factory=SizeDecision)
    noise: list[NoiseWarning] = []  # cold starts, outliers, uncertain speedups
    repeats_requested: Count = 0  # --repeat N when the time budget cut it to ``repeat`` (0: not cut)
    # Why the rounds stopped before --repeat: tight | budget | max under --repeat auto; budget also when a fixed
    # --repeat N ran out of --time-budget (repeats_requested then holds N). '' when every round ran.
    auto_stop: str = ""
    contention: Contention | None = None  # how busy the machine was during the timed rounds

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
