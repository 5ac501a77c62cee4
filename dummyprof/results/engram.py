"""Results of ``dummyprof engram``: Engram table sizes per rank, fill methods, measured and projected.

Measured and projected figures are kept apart: a method is either ``measured``
at full size (``timing`` holds its samples) or ``projected`` from smaller
samples (``samples`` and ``time_fit`` say how). Every :class:`Figure` carries
its own ``projected`` flag. Byte counts the CI gate checks are plain ints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dummyprof.results.common import Figure, MemoryUse, Timing

MEASURED = "measured"
PROJECTED = "projected"
PLANNED = "planned"  # dry run: nothing ran


@dataclass
class RankPart:
    rank: int = 0
    first_head: int = 0
    heads: int = 0
    part_rows: int = 0  # rows of one table on this rank
    table_bytes: int = 0  # all tables on this rank, weights + scales, as requested


@dataclass
class EngramLayout:
    rows: int = 0  # rows of one table, all ranks
    dim: int = 0
    block_size: int = 0
    tables: int = 0
    heads: int = 0
    tp_size: int = 1
    dp_size: int = 1
    rank: int = 0  # the rank this run builds
    part_rows: int = 0  # rows of one table on that rank
    weight_bytes_per_table: int = 0  # on that rank
    scale_bytes_per_table: int = 0
    table_bytes_per_rank: int = 0  # requested: all tables, weights + scales
    reserved_bytes_per_rank: int = 0  # after the backing's rounding, computed per allocation
    total_bytes: int = 0  # every rank together
    ranks: list[RankPart] = field(default_factory=list)


@dataclass
class BackingInfo:
    requested: str = ""  # pinned, pageable, hugepages, shm or device
    used: str = ""
    device: str = "cpu"
    note: str = ""
    rounding: str = ""
    reserved_measured_bytes: Figure = field(default_factory=Figure)  # pinned: host_memory_stats()
    huge_page_bytes: Figure = field(default_factory=Figure)  # hugepages: read back after first touch


@dataclass
class Budget:
    memory_bytes: int = 0
    memory_source: str = ""
    time_s: float = 0.0
    deadline_s: float | None = None


@dataclass
class LinearFit:
    """Least-squares ``y = intercept + slope * x`` over the sample points."""

    intercept: float = 0.0
    slope: float = 0.0
    r_squared: float = 0.0
    points: int = 0
    x_max: float = 0.0  # largest sample, to say how far a projection reaches
    model: str = "a + b x"  # or "b x" when fitted through the origin

    def predict(self, x: float) -> float:
        return self.intercept + self.slope * x


@dataclass
class SamplePoint:
    """One smaller table size a method was measured at."""

    part_rows: int = 0
    bytes_written: int = 0
    needed_bytes: int = 0  # computed tables + scratch at this size
    seconds: float = 0.0
    rss_growth_bytes: int | None = None  # peak RSS during the fill minus RSS before the tables existed
    scratch_bytes: int = 0  # temporaries the method reported


@dataclass
class ValueStats:
    sampled: int = 0
    weight_zero_share: float = 0.0
    weight_distinct: int = 0
    scale_values: list[int] = field(default_factory=list)
    scale_distinct: int = 0
    weight_min: float | None = None  # None in files written before these were recorded
    weight_max: float | None = None


@dataclass
class PhaseResult:
    """Allocation or first touch of the full tables: measured once, or projected from samples."""

    name: str = ""
    mode: str = MEASURED
    bytes: int = 0
    seconds: Figure = field(default_factory=Figure)
    timing: Timing = field(default_factory=Timing)
    samples: list[SamplePoint] = field(default_factory=list)
    time_fit: LinearFit | None = None


@dataclass
class MethodResult:
    name: str = ""
    origin: str = ""
    description: str = ""
    mode: str = MEASURED  # measured, projected or planned
    reason: str = ""  # why projected (memory or time)
    fits_in_memory: bool = True
    needed_bytes: int = 0  # per rank: reserved tables + peak scratch, computed before allocating
    peak_scratch_bytes: int = 0  # per rank at full size, computed from the shapes
    bytes_written: int = 0  # per rank at full size
    measured_scratch_bytes: int | None = None  # what the fill reported at full size (measured mode)
    timing: Timing = field(default_factory=Timing)  # full-size rounds (measured mode only)
    memory: MemoryUse = field(default_factory=MemoryUse)
    samples: list[SamplePoint] = field(default_factory=list)
    time_fit: LinearFit | None = None
    memory_fit: LinearFit | None = None  # RSS growth against computed need, over the samples
    seconds: Figure = field(default_factory=Figure)  # median fill time, measured or projected
    gb_per_s: Figure = field(default_factory=Figure)
    percent_of_floor: Figure = field(default_factory=Figure)  # floor time / this time x 100
    peak_rss_bytes: Figure = field(default_factory=Figure)
    startup_seconds: Figure = field(default_factory=Figure)  # allocation + first touch + fill
    over_deadline: bool | None = None
    values: ValueStats | None = None


@dataclass
class EngramResult:
    layout: EngramLayout = field(default_factory=EngramLayout)
    backing: BackingInfo = field(default_factory=BackingInfo)
    budget: Budget = field(default_factory=Budget)
    repeat: int = 0
    rounds_measured: int = 0  # full-size rounds actually run (the time budget may allow fewer)
    chunk_elements: int = 0
    dry_run: bool = False
    phases: list[PhaseResult] = field(default_factory=list)
    methods: list[MethodResult] = field(default_factory=list)
    floor_method: str = "memset"
    run_peak_rss_bytes: int | None = None  # worst peak RSS seen in any measured step of this run
    gpu: MemoryUse = field(default_factory=MemoryUse)
    plan_notes: list[str] = field(default_factory=list)

    def method(self, name: str) -> MethodResult:
        for m in self.methods:
            if m.name == name:
                return m
        raise KeyError(name)

    def phase(self, name: str) -> PhaseResult:
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(name)
