"""Result pieces shared by every command; every piece is a :class:`Record` (a msgspec Struct)."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import field

T = TypeVar("T")

INT64_MAX = 2**63 - 1
# Counts and sizes are int64 wherever they came from; a byte count or a counter is never negative.
Int64 = Annotated[int, msgspec.Meta(ge=-INT64_MAX - 1, le=INT64_MAX)]
Count = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]


class Record(msgspec.Struct, forbid_unknown_fields=True):
    """A piece of a results file. A key it does not declare is refused: a typo in an edited file must not pass."""


def named(items: Iterable[T], name: str, key: str = "name") -> T:
    for item in items:
        if getattr(item, key) == name:
            return item
    raise KeyError(name)


def field_names(kind: Any) -> tuple[str, ...]:
    if isinstance(kind, msgspec.Struct) or (isinstance(kind, type) and issubclass(kind, msgspec.Struct)):
        return kind.__struct_fields__
    return tuple(f.name for f in dataclasses.fields(kind))


def copied(cls: type[T], source: Any, /, **given: Any) -> T:
    """A ``cls`` of ``given`` and, for each of its other fields, ``source``'s field of the same name."""
    shared = set(field_names(source)) - given.keys()
    return cls(**given, **{name: getattr(source, name) for name in field_names(cls) if name in shared})


class Environment(Record):
    """Where a run happened; the fingerprint that makes two runs comparable."""

    dummyprof_version: str = ""
    torch_version: str = ""
    python_version: str = ""
    platform: str = ""
    device: str = "cpu"
    device_name: str = ""
    cpu_model: str = ""
    cpu_count: Count = 0
    torch_threads: Count = 0
    cuda_available: bool = False
    cuda_version: str | None = None
    total_memory_bytes: Count = 0
    random_fast_engine: str = ""  # "kernel" or "numpy" when the run used random-fast, else empty


class NoiseWarning(Record):
    """A reason not to trust a timing as it stands (codes in ``measure/noise.py``; reporters say why)."""

    code: str = ""
    subject: str = ""  # the strategy (or method) it concerns
    count: Count = 0  # how many samples
    value: float | None = None  # first-round-slow: its time over the median; outliers: median with / without them
    low: float | None = None  # speedup-uncertain: the interval
    high: float | None = None


# Contention reason codes (reporters own the words).
CPU_PRESSURE = "cpu-pressure"  # runnable tasks waited for a CPU a large share of the window (PSI "some")
LOAD_ABOVE_CORES = "load-above-cores"  # no PSI: the 1-minute load average was above the cores this process may use
CPU_STEAL = "cpu-steal"  # the hypervisor ran other guests on this machine's CPUs


class Contention(Record):
    """How busy the machine was over the window a run timed (``measure/contention.py``)."""

    wall_s: float = 0.0
    cores: Count = 0
    pressure: float | None = None  # share of the window some runnable task waited for a CPU (PSI "some")
    load_per_core: float | None = None  # without PSI: the 1-minute load average over the usable cores
    steal: float | None = None  # share of all CPU time the hypervisor gave to other guests
    process_cpu_share: float | None = None  # this process's CPU seconds over the wall seconds (2.0: two cores)
    reasons: list[str] = []  # the codes above their thresholds

    @property
    def contended(self) -> bool:
        return bool(self.reasons)


How = Literal["measured", "projected", "unavailable"]
MEASURED: How = "measured"  # timed in full in this run: ``samples`` are its rounds, ``value`` their median
PROJECTED: How = "projected"  # derived from smaller fills or a probe of this run: ``low``/``high`` its interval
UNAVAILABLE: How = "unavailable"  # not had: ``reason`` is a code (reports/format.py says each) or a probe's message


class Estimate(Record):
    """Every figure dummyprof reports, a time above all: measured, projected, or not available, and where from.

    The one shape of a number with its range: a measured time keeps every round (``samples``, their fastest and
    slowest as ``low``/``high``), a projected one its interval; neither is ever faster than ``floor``.
    """

    value: float | None = None  # the median measured, or the projected point; None: not available
    how: How = MEASURED
    reason: str = ""  # UNAVAILABLE: why, as a code
    samples: list[float] = []  # MEASURED: every timed round, warm-up excluded
    low: float | None = None  # the fastest round, or the projection's low end
    high: float | None = None  # the slowest round, or the projection's high end
    floor: float | None = None  # the same bytes at the memset rate measured in the same run; nothing is faster
    device: str = ""  # where it was taken ("cpu", "cuda"); '' where the run's device says it
    contention: Contention | None = None  # how busy the machine was while it was taken

    @classmethod
    def measured(cls, samples: list[float], **given: Any) -> Estimate:
        """The median of ``samples`` (empty: no value yet), their fastest and slowest as the range."""
        if not samples:
            return cls(samples=list(samples), **given)
        return cls(statistics.median(samples), samples=list(samples), low=min(samples), high=max(samples), **given)

    @classmethod
    def projected(cls, value: float, low: float | None = None, high: float | None = None, **given: Any) -> Estimate:
        return cls(value, PROJECTED, low=low, high=high, **given)

    @classmethod
    def missing(cls, reason: str, **given: Any) -> Estimate:
        return cls(None, UNAVAILABLE, reason, **given)

    def add(self, sample: float) -> None:
        """One more measured round."""
        self.samples.append(sample)
        self.value, self.low, self.high = statistics.median(self.samples), min(self.samples), max(self.samples)

    @property
    def available(self) -> bool:
        return self.value is not None

    @property
    def is_projected(self) -> bool:
        return self.how == PROJECTED and self.value is not None

    @property
    def stdev(self) -> float | None:  # of the rounds; None under two
        return statistics.stdev(self.samples) if len(self.samples) >= 2 else None

    @property
    def cv(self) -> float | None:  # sample standard deviation over mean
        mean = statistics.fmean(self.samples) if self.samples else 0.0
        return self.stdev / mean if self.stdev is not None and mean > 0 else None

    @property
    def span(self) -> tuple[float, float] | None:
        """The range a whisker draws: the projection's interval, or the fastest and slowest of two rounds or more."""
        if self.low is None or self.high is None or (self.how == MEASURED and len(self.samples) < 2):
            return None
        return self.low, self.high


class MemoryUse(Record):
    """Memory seen while one strategy or method ran (worst round)."""

    rss_before_bytes: Count | None = None
    rss_peak_bytes: Count | None = None
    rss_peak_method: str = ""
    pinned_bytes: Estimate = field(default_factory=Estimate)
    gpu_used_bytes: Estimate = field(default_factory=Estimate)
    gpu_allocator_peak_bytes: Estimate = field(default_factory=Estimate)

    @property
    def rss_growth_bytes(self) -> int | None:
        if self.rss_before_bytes is None or self.rss_peak_bytes is None:
            return None
        return max(0, self.rss_peak_bytes - self.rss_before_bytes)


class FirstTouch(Record):
    """Fresh pages written for the first time, chunk after chunk in the order the kernel handed them out, as an
    engine's worker writes its weights at start-up (``measure/first_touch.py``): each chunk's memset on its fresh
    pages (the page faults included) and the same memset again on them touched. The difference is what the first
    touch costs; the first chunks often come from memory freed moments ago and cost less than the rest."""

    chunk_bytes: Count = 0
    fresh_s: list[float] = []  # per chunk, in order: the first memset (its page faults included)
    touched_s: list[float] = []  # per chunk: the same memset on the same pages, touched
    needed_bytes: Count = 0  # the pages the fill first-touches
    room_bytes: Count | None = None  # the most the probe may hold (whole chunks); None in a file that did not say
    binding: str = ""  # what stopped the probe before ``needed_bytes``: "time", "memory"; "" it covered them
    budget_s: float | None = None  # time binding: the --time-budget whose share covers every needed page it holds

    @property
    def sampled_bytes(self) -> int:
        return self.chunk_bytes * len(self.fresh_s)

    def chunk_costs(self, hidden: float = 0.0) -> list[float]:
        """Seconds each chunk's first touch cost: its fresh memset less the part of its touched memset that a fill
        hiding ``hidden`` of its own writes' memory traffic behind its arithmetic does not pay twice (0: a fill at
        memory speed, fresh less touched; 1: a fill far slower than memory, the whole fresh memset)."""
        keep = 1.0 - min(1.0, max(0.0, hidden))
        return [max(0.0, fresh - touched * keep) for fresh, touched in zip(self.fresh_s, self.touched_s, strict=True)]

    def price(self, nbytes: int, threads: int = 1) -> tuple[float, float, float]:
        """Seconds (point, low, high) to first-touch ``nbytes``, the faults taken by ``threads`` threads at once (the
        probe's are one thread's): the sampled chunks in their order, exactly, then
        the rest at the last quarter's rate. The point and the low end price a page as a fill at memory speed pays
        it (fresh less touched: nearest what vLLM's ``uniform_`` paid, BENCHMARKS.md), the
        low end the rest at the cheapest chunk's; the high end as a fill hiding all its writes would (the whole
        fresh memset), the rest at the dearest chunk's."""
        if not self.fresh_s or nbytes <= 0 or self.chunk_bytes <= 0:
            return 0.0, 0.0, 0.0
        whole, part = divmod(nbytes, self.chunk_bytes)
        rest = max(0, nbytes - self.sampled_bytes) / self.chunk_bytes

        def priced(costs: list[float], rest_rate: float) -> float:
            sampled = sum(costs[:whole]) + (costs[whole] * part / self.chunk_bytes if whole < len(costs) else 0.0)
            return sampled + rest * rest_rate

        point, high = self.chunk_costs(0.0), self.chunk_costs(1.0)
        tail = point[-max(1, len(point) // 4) :]
        share = 1 / max(1, threads)
        return (
            priced(point, sum(tail) / len(tail)) * share,
            priced(point, min(point)) * share,
            priced(high, max(high)) * share,
        )
