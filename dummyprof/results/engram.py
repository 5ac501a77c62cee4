"""Results of ``dummyprof engram``: table sizes per rank, and fill methods measured at full size or projected from
smaller samples (``samples``, ``time_fit``); every :class:`Estimate` says which."""

from __future__ import annotations

from msgspec import field

from dummyprof.results.common import MEASURED as MEASURED  # a method's mode: these two as an Estimate says them
from dummyprof.results.common import PROJECTED as PROJECTED
from dummyprof.results.common import Contention, Count, Estimate, FirstTouch, Int64, MemoryUse, Record, named
from dummyprof.results.verdict import Verdict

PLANNED = "planned"  # dry run: nothing ran

# Why a method was projected (or, in a dry run, how it is planned): ``MethodResult.reason``.
FOR_MEMORY = "memory"  # it does not fit in memory (projected, or planned to be)
FOR_TIME = "time"  # one full-size fill would overrun the time budget (``one_fill_s``)
FITS = "fits"  # planned: it fits and will be measured in full unless calibration says it is too slow

# Why an engram figure is unavailable (``Estimate.reason``); reports/format.py says each. A code
# followed by ``:KIND`` names the backing used.
DRY_RUN = "dry-run"  # nothing was allocated
NOT_ALLOCATED = "not-allocated"  # the full tables were not allocated (the run projected them)
NOT_ALLOCATED_COMPUTED = "not-allocated-computed"  # ... and the computed figure stands beside this one
NOT_ALLOCATED_PROJECTED = "not-allocated-projected"  # pinned and GPU figures of a projected run
NO_RESERVED_FIGURE = "no-reserved-figure"  # :KIND; only torch's CUDA caching host allocator reports them
NO_HUGE_PAGES_ASKED = "no-huge-pages-asked"  # :KIND
NO_HOST_MEMORY_STATS = "no-host-memory-stats"  # torch.cuda.host_memory_stats() reported no bytes
NO_ANON_HUGE_PAGES = "no-anon-huge-pages"  # /proc/self/smaps_rollup has no AnonHugePages
# A fill measured faster than the fastest memset floor of the same run: physically impossible, so the floor's
# reading was the slow one (preempted); no share is shown (it would pass 100%). Also compare's noise code.
FASTER_THAN_FLOOR = "faster-than-floor"


class RankPart(Record):
    rank: Count = 0
    first_head: Count = 0
    heads: Count = 0
    part_rows: Count = 0  # rows of one table on this rank
    table_bytes: Count = 0  # all tables on this rank, weights + scales, as requested


class EngramLayout(Record):
    rows: Count = 0  # rows of one table, all ranks
    dim: Count = 0
    block_size: Count = 0
    tables: Count = 0
    heads: Count = 0
    tp: Count = 1
    dp: Count = 1
    rank: Count = 0  # the rank this run builds
    part_rows: Count = 0  # rows of one table on that rank
    weight_bytes_per_table: Count = 0  # on that rank
    scale_bytes_per_table: Count = 0
    table_bytes_per_rank: Count = 0  # requested: all tables, weights + scales
    reserved_bytes_per_rank: Count = 0  # after the backing's rounding, computed per allocation
    total_bytes: Count = 0  # every rank together
    ranks: list[RankPart] = []


class BackingInfo(Record):
    requested: str = ""  # pinned, pageable, hugepages, shm or device
    used: str = ""
    device: str = "cpu"
    note: str = ""
    rounding: str = ""
    reserved_measured_bytes: Estimate = field(default_factory=Estimate)  # pinned: host_memory_stats()
    huge_page_bytes: Estimate = field(default_factory=Estimate)  # hugepages: read back after first touch


class Budget(Record):
    memory_bytes: Count = 0
    memory_source: str = ""
    time_s: float = 0.0
    deadline_s: float | None = None
    # What bounded memory_bytes: "--max-memory", "psutil", "cgroup v1", "cgroup v2", "/dev/shm", "disk" or "GPU"
    limit: str = ""
    cgroup_version: Count | None = None  # the container's memory cgroup, when it has a limit
    cgroup_limit_bytes: Count | None = None
    cgroup_free_bytes: Count | None = None  # limit less what is charged (inactive file cache not counted)
    cgroup_file: str = ""


class LinearFit(Record):
    """Least-squares ``y = intercept + slope * x`` over the sample points."""

    intercept: float = 0.0
    slope: float = 0.0
    r_squared: float = 0.0
    points: Count = 0
    x_max: float = 0.0  # largest sample, to say how far a projection reaches
    model: str = "a + b x"  # "b x" when fitted through the origin, "a" for a size-independent median
    residual_s: float = 0.0  # standard error of the residuals (y units), for the prediction interval
    mean_x: float = 0.0
    sxx: float = 0.0  # sum of squared x deviations (about the mean; about 0 for "b x")

    def predict(self, x: float) -> float:
        return self.intercept + self.slope * x


# Why a projection did not use the least-squares line (``TimeProjection.fallback``).
FALLBACK_FLAT = "flat"  # the line's slope was zero or negative: more bytes would take less time
FALLBACK_POOR_FIT = "poor-fit"  # R² under the threshold: the samples are noise around a line


class TimeProjection(Record):
    """How a full-size time was projected (``measure/engine.py``, ``scenarios/engram/runner.project_samples``): the
    time, and how it was had."""

    # low/high: from the least and steepest slope of the trials' lines ("slopes"), or for a step that did not grow
    # with size the fastest and slowest reading ("readings"); floor: the full bytes at the ceiling's rate
    time: Estimate = field(default_factory=Estimate)
    interval: str = "slopes"  # or "readings"
    line: LinearFit | None = None  # the least-squares line, always fitted (its R² says how good it was)
    fallback: str = ""  # "" (the line was used), FALLBACK_FLAT or FALLBACK_POOR_FIT
    min_r_squared: float = 0.0  # the threshold the line was held to
    rate_bytes: Count = 0  # the sample the through-origin rate came from (fallback only; 0 for a median)
    ceiling_bytes_per_s: float | None = None  # the fastest rate this run measured for what bounds it: never faster
    ceiling_name: str = ""  # "memset" or "first touch"
    bounded: bool = False  # the point was raised to the ceiling
    extrapolation: float = 0.0  # full size / largest sample
    fresh_bytes: Count = 0  # temporaries the full size maps afresh: their first touch added (off the samples')
    first_touch_s: float = 0.0  # what that first touch added to the time (the probe's price)


class SamplePoint(Record):
    """One smaller table size a method was measured at."""

    part_rows: Count = 0
    bytes_written: Count = 0
    needed_bytes: Count = 0  # computed tables + scratch at this size
    time: Estimate = field(default_factory=Estimate)  # every round at this size
    rss_growth_bytes: Int64 | None = None  # peak RSS during the fill minus RSS before the tables existed
    scratch_bytes: Count = 0  # temporaries the method reported


class ValueStats(Record):
    sampled: Count = 0
    weight_zero_share: float = 0.0
    weight_distinct: Count = 0
    scale_values: list[Count] = []
    scale_distinct: Count = 0
    weight_min: float | None = None
    weight_max: float | None = None


class PhaseResult(Record):
    """Allocation or first touch of the full tables: measured once, or projected from samples."""

    name: str = ""
    mode: str = MEASURED
    bytes: Count = 0
    time: Estimate = field(default_factory=Estimate)
    samples: list[SamplePoint] = []
    time_fit: LinearFit | None = None
    projection: TimeProjection | None = None


class MethodResult(Record):
    name: str = ""
    origin: str = ""
    description: str = ""
    mode: str = MEASURED  # measured, projected or planned
    reason: str = ""  # FOR_MEMORY, FOR_TIME or FITS; empty when measured
    one_fill_s: float | None = None  # FOR_TIME: one full-size fill as calibrated at start-up
    fits_in_memory: bool = True
    needed_bytes: Count = 0  # per rank: reserved tables + peak scratch, computed before allocating
    peak_scratch_bytes: Count = 0  # per rank at full size, computed from the shapes
    bytes_written: Count = 0  # per rank at full size
    measured_scratch_bytes: Count | None = None  # what the fill reported at full size (measured mode)
    time: Estimate = field(default_factory=Estimate)  # the fill: full-size rounds, or the projection's time
    memory: MemoryUse = field(default_factory=MemoryUse)
    samples: list[SamplePoint] = []
    time_fit: LinearFit | None = None  # the model used: the line, or the rate through the origin
    projection: TimeProjection | None = None
    memory_fit: LinearFit | None = None  # RSS growth against computed need, over the samples
    gb_per_s: Estimate = field(default_factory=Estimate)
    percent_of_floor: Estimate = field(default_factory=Estimate)  # floor time / this time x 100
    peak_rss_bytes: Estimate = field(default_factory=Estimate)
    startup: Estimate = field(default_factory=Estimate)  # allocation + first touch + fill; a projection's: summed
    startup_dominant: str = ""  # the largest term: "allocate", "first touch" or "fill"
    startup_dominant_share: float | None = None  # its share of the start-up
    over_deadline: bool | None = None  # the verdict's code is ``missed`` (files without ``deadline``: the point's)
    deadline: Verdict | None = None  # the start-up's interval against --deadline (None: no deadline, or no time)
    generator_bound: bool | None = None  # under GENERATOR_BOUND_PERCENT of the memset floor
    values: ValueStats | None = None


class SampleGroupInfo(Record):
    """Methods projected from the same sample sizes: memory-bound ones large and repeated, generator-bound small."""

    memory_bound: bool = True
    methods: list[str] = []
    rows: list[Count] = []  # per table, smallest first
    rounds: Count = 1  # readings per method at each size (median kept)


class RoundsCut(Record):
    """Fewer full-size rounds than asked for, because the time budget did not hold them."""

    rounds: Count = 0
    repeat: Count = 0
    methods: list[str] = []  # the costly methods the cut applies to
    round_s: float = 0.0  # one round of them, as calibrated
    time_budget_s: float = 0.0


class SampleOverrun(Record):
    """Sampling ended past the time budget: the sizes a line needs (three per group) are measured however late."""

    over_s: float = 0.0  # seconds past the time budget when sampling ended, measured
    time_budget_s: float = 0.0
    predicted_after_rows: Count | None = None  # the first sample size after which the overrun was predicted
    predicted_over_s: float | None = None  # ... and by how much (None: it was not predicted)


class EngramResult(Record):
    layout: EngramLayout = field(default_factory=EngramLayout)
    backing: BackingInfo = field(default_factory=BackingInfo)
    budget: Budget = field(default_factory=Budget)
    repeat: Count = 0
    rounds_measured: Count = 0  # full-size rounds actually run (the time budget may allow fewer)
    chunk_elements: Count = 0
    dry_run: bool = False
    phases: list[PhaseResult] = []
    methods: list[MethodResult] = []
    floor_method: str = "memset"
    run_peak_rss_bytes: Count | None = None  # worst peak RSS seen in any measured step of this run
    gpu: MemoryUse = field(default_factory=MemoryUse)
    rounds_cut: RoundsCut | None = None
    huge_pages_from_sample: bool = False  # huge-page bytes read back on the largest sample, not the full table
    sample_groups: list[SampleGroupInfo] = []  # empty when nothing was projected
    sample_sizes_cut: list[Count] = []  # planned sample rows left out: past the time budget
    sample_overrun: SampleOverrun | None = None  # sampling ended past the time budget (None: within it)
    first_touch: FirstTouch | None = None  # the probe of fresh pages that priced the projections' fresh scratch

    @property
    def contention(self) -> Contention | None:
        """How busy the machine was while this run calibrated, filled and sampled (its times carry it)."""
        return next((t.contention for t in (*(p.time for p in self.phases), *(m.time for m in self.methods))
                     if t.contention is not None), None)  # fmt: skip

    def method(self, name: str) -> MethodResult:
        return named(self.methods, name)

    def floor(self) -> MethodResult | None:
        return next((m for m in self.methods if m.name == self.floor_method), None)
