"""The one budgeted measurement: a fill too large or too slow for the budgets is sampled at sizes s, 2s, 3s, 4s
(trials interleaved across the sizes within a deadline, the median trial the point), a line fitted with the least
and steepest slope of its trials, and projected to full size with an interval, never under the memset floor and
the first touch of fresh pages measured in the same run, inside one contention window. compare's calibration,
engram's sampled figures (rows sized by ``sample_sizes``, timed by ``timed_trials`` with a fill per rows count
that allocates, touches and fills) and a deployment's host-resident tables all run on it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import torch

from dummyprof.measure import contention, first_touch
from dummyprof.measure.device import synchronize
from dummyprof.measure.projection import fit_line, fit_proportional, rate_interval
from dummyprof.results.common import Contention, Estimate, FirstTouch
from dummyprof.results.engram import LinearFit

Clock = Callable[[], float]
Fill = Callable[[int], float]  # bytes -> the seconds of one timed fill of that many bytes
R = TypeVar("R")

SIZE_POINTS = 4  # sizes s, 2s, 3s, 4s: evenly spread points pin a line better than a geometric run
SIZE_UNITS = SIZE_POINTS * (SIZE_POINTS + 1) // 2  # steps s written by one pass over the sizes
TRIALS = 5  # per size, interleaved; the median is the point
MIN_STEP = 256 << 10
MAX_STEP = 64 << 20
PROBE_BYTES = 16 << 20  # the first fill, which sizes the step: big enough to leave the caches
SMALL_CALLS = 15  # tiny fills whose median is the cost of one call


def fit_time(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Seconds against bytes; through the origin when noise leaves the line no positive slope.

    Writing more bytes never takes less time: a flat or falling line would price big tensors as free.
    """
    fit = fit_line(xs, ys)
    return fit if fit.slope > 0 else fit_proportional(xs, ys)


def slope_bounds(sizes: Sequence[float], samples: Sequence[Sequence[float]]) -> tuple[LinearFit, LinearFit]:
    """The least and the steepest of the lines through each trial across the sizes (trials are interleaved, so
    each is one pass over the machine's state), through each size's fastest and slowest reading, and through
    the median: the slope's spread from one pass to the next within this run. Lines through the fastest and
    slowest readings alone can both lie on one side of the median's (a line's intercept absorbs part of the
    noise). With one reading per size, the lines leaving out one size each and the interval of the mean per-byte
    rate (:func:`rate_interval`), which the lines alone understate when the readings happen to lie on one. A
    second run can still land outside (BENCHMARKS.md, reproducibility on a quiet machine)."""
    lines = [
        fit_time(sizes, [statistics.median(s) for s in samples]),
        fit_time(sizes, [min(s) for s in samples]),
        fit_time(sizes, [max(s) for s in samples]),
    ]
    for trial in range(min(len(s) for s in samples)):
        lines.append(fit_time(sizes, [s[trial] for s in samples]))
    if max(len(s) for s in samples) == 1 and len(sizes) > 2:
        ys = [s[0] for s in samples]
        lines += [fit_time([*sizes[:i], *sizes[i + 1 :]], [*ys[:i], *ys[i + 1 :]]) for i in range(len(sizes))]
        lines += [
            LinearFit(slope=max(0.0, rate), points=len(sizes), x_max=max(sizes), model="b x")
            for rate in rate_interval(sizes, ys)
        ]
    return min(lines, key=lambda f: f.slope), max(lines, key=lambda f: f.slope)


def step_bytes(largest: int, rate: float, share_s: float, element: int = 1) -> int:
    """Bytes between the sizes (s, 2s, 3s, 4s) of a fill whose full size writes ``largest`` bytes at ``rate``
    bytes/s: as large as ``share_s`` allows for every trial, up to MAX_STEP and a quarter of ``largest``."""
    step = int(
        min(MAX_STEP, max(MIN_STEP, share_s * rate / (SIZE_UNITS * TRIALS)), max(MIN_STEP, largest // SIZE_POINTS))
    )
    return max(element, step - step % element)


class SamplingError(ValueError):
    """No sample size fits both the memory and the time budget; ``binding``: memory, time or table size."""

    def __init__(self, message: str, binding: str = "", *, needed_s: float | None = None) -> None:
        super().__init__(message)
        self.binding = binding
        self.needed_s = needed_s  # time binding: the seconds the smallest samples need


def sample_sizes(
    full_rows: int,
    *,
    seconds_per_row: float,
    bytes_per_row: float,
    fixed_bytes: int,
    memory_budget: int,
    time_budget: float,
) -> list[int]:
    """Rows per rank for SIZE_POINTS samples k*s (k = 1..SIZE_POINTS), each under the full table, that fit both
    budgets: together ``s * SIZE_UNITS * seconds_per_row`` seconds, the largest ``fixed_bytes + SIZE_POINTS * s *
    bytes_per_row`` bytes (``seconds_per_row``: every method, allocation and first touch over one row)."""
    limits = [(full_rows - 1) // SIZE_POINTS]
    if seconds_per_row > 0:
        limits.append(int(time_budget / (SIZE_UNITS * seconds_per_row)))
    if bytes_per_row > 0:
        limits.append(int((memory_budget - fixed_bytes) / (SIZE_POINTS * bytes_per_row)))
    step = min(limits)
    if step < 1:
        binding = "memory" if bytes_per_row > 0 and limits[-1] == step else "time"
        if step == limits[0]:
            binding = "table size"
        raise SamplingError(
            f"no sample of {SIZE_POINTS} sizes fits the {binding} budget (largest step {step} rows)",
            binding,
            needed_s=SIZE_UNITS * seconds_per_row if binding == "time" else None,
        )
    return [k * step for k in range(1, SIZE_POINTS + 1)]


@dataclass
class Sampled:
    """A fill timed at a few sizes: every trial, the line through each size's median and its slope bounds."""

    sizes: list[int]
    trials: list[list[float]]
    small_call_s: float = 0.0  # the median of tiny fills: one call's cost, whatever its bytes
    fit: LinearFit = field(default_factory=LinearFit)
    fit_low: LinearFit = field(default_factory=LinearFit)
    fit_high: LinearFit = field(default_factory=LinearFit)


def sample(
    fill: Fill,
    largest: int,
    *,
    seconds: float,
    element: int = 1,
    small_bytes: int = 0,
    clock: Clock = time.perf_counter,
) -> Sampled:
    """``fill`` timed at s, 2s, 3s, 4s bytes (a probe fill sizes s for ``seconds``), trial by trial across the sizes
    until TRIALS each or the deadline: running out of time still leaves a line through two sizes or more.
    ``small_bytes``: also the median of SMALL_CALLS fills of that size, the cost of a call."""
    small = statistics.median(fill(small_bytes) for _ in range(SMALL_CALLS)) if small_bytes else 0.0
    probe = max(MIN_STEP, min(PROBE_BYTES, largest))
    probe -= probe % element
    rate = probe / max(fill(probe), 1e-9)
    step = step_bytes(largest, rate, seconds, element)
    sizes = [k * step for k in range(1, SIZE_POINTS + 1)]
    deadline = clock() + seconds
    trials = timed_trials(sizes, fill, late=lambda _: clock() > deadline)
    kept = [i for i, t in enumerate(trials) if t]
    return fitted([sizes[i] for i in kept], [trials[i] for i in kept], small)


def timed_trials(
    sizes: Sequence[int], fill: Callable[[int], R], *, late: Callable[[int], bool], rounds: int = TRIALS, least: int = 2
) -> list[list[R]]:
    """``fill`` at every size, smallest first, ``rounds`` times over: the readings at each size. Once the ``least``
    smallest sizes have a reading, a size that ``late`` says would end past the deadline ends the round."""
    readings: list[list[R]] = [[] for _ in sizes]
    for _ in range(rounds):
        for i, n in enumerate(sizes):
            if i >= least and readings[least - 1] and late(n):
                break
            readings[i].append(fill(n))
    return readings


def fitted(sizes: Sequence[int], trials: Sequence[Sequence[float]], small_call_s: float = 0.0) -> Sampled:
    """Readings at each size (two sizes or more) as a :class:`Sampled`: the median line and its slope bounds."""
    low, high = slope_bounds(sizes, trials)
    line = fit_time(sizes, [statistics.median(t) for t in trials])
    return Sampled(list(sizes), [list(t) for t in trials], small_call_s, line, low, high)


class Line(Protocol):
    """What a projection reads of a sampled fill (:class:`Sampled`, or a results record that kept one)."""

    small_call_s: float
    fit: LinearFit
    fit_low: LinearFit
    fit_high: LinearFit


def cost(sampled: Line, nbytes: float, calls: int = 1) -> tuple[float, float, float]:
    """Seconds of ``calls`` fills writing ``nbytes`` in all (point, fastest, slowest): each call's cost plus the
    bytes at the median, least and steepest slope. Not the fitted intercepts: noise over MiB samples, times
    thousands of small tensors."""
    slopes = [max(0.0, f.slope) for f in (sampled.fit, sampled.fit_low, sampled.fit_high)]
    fixed = calls * sampled.small_call_s
    return fixed + slopes[0] * nbytes, fixed + min(slopes) * nbytes, fixed + max(slopes) * nbytes


@dataclass
class Floors:
    """What nothing in the run is faster than, measured in it: the memset rate on touched memory and the first
    touch of fresh host pages (None on a device whose memory takes no page faults, or pinned memory)."""

    memset_bytes: int = 1 << 20  # the memset's size: the sampling in ``measuring`` sets its largest sample
    memset_bytes_per_s: float = 0.0
    pages: FirstTouch | None = None
    contention: Contention | None = None  # over the sampling, the memset and the first-touch probe
    seconds: float = 0.0


@dataclass
class Budgeted:
    """A full-size figure projected from samples: its estimate, the first touch in it, whether the floor bound."""

    time: Estimate
    first_touch_s: float
    floor_bound: bool


def project(
    costs: tuple[float, float, float],
    written: int,
    floors: Floors,
    *,
    touched: int = 0,
    touch_threads: int = 1,
    fixed_s: float = 0.0,
    device: str = "",
) -> Budgeted:
    """``costs`` (point, low, high) of writing ``written`` bytes, plus ``fixed_s`` and the first touch of
    ``touched`` fresh bytes, never under ``written`` at the memset rate plus the first touch's cheapest pages.
    ``touch_threads``: the threads that take those faults together (the probe's price is one thread's)."""
    pages = floors.pages
    touch, touch_low, touch_high = pages.price(touched, touch_threads) if pages is not None else (0.0, 0.0, 0.0)
    rate = floors.memset_bytes_per_s
    floor = (written / rate if rate > 0 else 0.0) + touch_low
    point = fixed_s + costs[0] + touch
    low, high = max(fixed_s + costs[1] + touch_low, floor), max(fixed_s + costs[2] + touch_high, floor)
    known = floor if rate > 0 or pages is not None else None  # a floor measured, else none to show
    estimate = Estimate.projected(max(point, floor), low, high, floor=known, device=device)
    estimate.contention = floors.contention
    return Budgeted(estimate, touch, floor > point)


def memset_rate(nbytes: int, device: torch.device, clock: Clock = time.perf_counter) -> float:
    """Bytes per second of ``fill_`` over touched memory, the fastest of a few (first touch is priced apart)."""
    size = max(nbytes, 1 << 20)
    buffer = torch.empty(size, dtype=torch.uint8, device=device)
    buffer.fill_(0)
    best = float("inf")
    for value in range(1, TRIALS + 2):
        synchronize(device)
        t0 = clock()
        buffer.fill_(value)
        synchronize(device)
        best = min(best, clock() - t0)
    return size / max(best, 1e-9)


FIRST_TOUCH_SHARE = 0.25  # of the time budget, for the first-touch probe
FIRST_TOUCH_ROOM = 0.5  # of the memory budget, for the pages the probe holds


def probe_seconds(fresh_bytes: int, device: torch.device, time_budget_s: float) -> float:
    """The most ``measuring``'s first-touch probe takes of ``time_budget_s``: none where no pages are fresh host
    pages (nothing to touch, or a device whose memory takes no page faults)."""
    return time_budget_s * FIRST_TOUCH_SHARE if fresh_bytes and device.type == "cpu" else 0.0


@contextmanager
def measuring(
    floors: Floors,
    device: torch.device,
    *,
    fresh_bytes: int,
    memory_bytes: int,
    time_budget_s: float,
    chunk_bytes: int = first_touch.CHUNK_BYTES,
    spent_s: float = 0.0,
    clock: Clock = time.perf_counter,
) -> Iterator[Floors]:
    """A contention window around the sampling done in the ``with`` block, then the floors measured in it: the
    memset rate over ``floors.memset_bytes`` and, where ``fresh_bytes`` are fresh host pages, a first-touch probe
    of them in mappings of ``chunk_bytes`` (smaller where two do not fit) within FIRST_TOUCH_ROOM of ``memory_bytes``
    and :func:`probe_seconds` of ``time_budget_s``: what is left of a run's budget after ``spent_s``, which the
    budget the probe names for covering its pages adds back."""
    window = contention.Window()
    t0 = clock()
    with window.measure():
        yield floors
        floors.memset_bytes_per_s = memset_rate(floors.memset_bytes, device, clock)
        if seconds := probe_seconds(fresh_bytes, device, time_budget_s):
            floors.pages = first_touch.probe(
                fresh_bytes,
                memory_bytes=int(memory_bytes * FIRST_TOUCH_ROOM),
                seconds=seconds,
                clock=clock,
                chunk_bytes=chunk_bytes,
                share=FIRST_TOUCH_SHARE,
            )
            if floors.pages.budget_s is not None:
                floors.pages.budget_s = float(math.ceil(floors.pages.budget_s + spent_s))
    floors.seconds, floors.contention = clock() - t0, window.result()
