"""How busy the machine is while a run times something (CPU pressure, steal, this process's CPU share), measured
over the timed window so every time can say so; ``/proc`` is a parameter so tests give fake readings."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dummyprof.measure.cgroup import _text
from dummyprof.measure.memory import cpu_count
from dummyprof.results.common import CPU_PRESSURE, CPU_STEAL, LOAD_ABOVE_CORES, Contention

PROC = Path("/proc")
# Above these a time is flagged "contended". A quiet machine reads well under 1% pressure and 0 steal;
# 10% of the window with a task waiting already moves a calibrated rate by more than its own spread.
PRESSURE_LIMIT = 0.10
LOAD_LIMIT = 1.0  # runnable tasks per usable core, 1-minute average (a coarse stand-in where there is no PSI)
STEAL_LIMIT = 0.05


@dataclass(frozen=True)
class Reading:  # cumulative counters at one instant; two give a window
    wall_s: float
    process_cpu_s: float
    pressure_us: int | None  # PSI "some" total, microseconds
    steal_ticks: int | None
    total_ticks: int | None


def _pressure_us(proc: Path) -> int | None:
    match = re.search(r"^some .*\btotal=(\d+)", _text(proc / "pressure" / "cpu"), re.MULTILINE)
    return int(match.group(1)) if match else None


def _cpu_ticks(proc: Path) -> tuple[int | None, int | None]:
    """(steal, total) jiffies of the machine's "cpu" line; None where /proc/stat has no such line."""
    match = re.search(r"^cpu\s+([\d ]+)$", _text(proc / "stat"), re.MULTILINE)
    if not match:
        return None, None
    ticks = [int(x) for x in match.group(1).split()]
    # user nice system idle iowait irq softirq steal [guest guest_nice, already counted in user and nice]
    return (ticks[7] if len(ticks) > 7 else 0), sum(ticks[:8])


def _process_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def read(
    proc: Path | None = None, clock: Callable[[], float] = time.monotonic, cpu: Callable[[], float] = _process_cpu_s
) -> Reading:
    proc = proc or PROC  # read at call time: tests point PROC at a fake /proc
    steal, total = _cpu_ticks(proc)
    return Reading(clock(), cpu(), _pressure_us(proc), steal, total)


def _load_average(proc: Path) -> float | None:
    parts = _text(proc / "loadavg").split()
    try:
        return float(parts[0])
    except (IndexError, ValueError):
        return None


def _judge(found: Contention) -> Contention:
    limits = (
        (found.pressure, PRESSURE_LIMIT, CPU_PRESSURE),
        (found.load_per_core, LOAD_LIMIT, LOAD_ABOVE_CORES),
        (found.steal, STEAL_LIMIT, CPU_STEAL),
    )
    found.reasons = [code for value, limit, code in limits if value is not None and value > limit]
    return found


def between(start: Reading, end: Reading, proc: Path | None = None, cores: int | None = None) -> Contention:
    proc = proc or PROC
    wall = max(end.wall_s - start.wall_s, 1e-9)
    found = Contention(wall_s=end.wall_s - start.wall_s, cores=cores or cpu_count())
    found.process_cpu_share = max(0.0, end.process_cpu_s - start.process_cpu_s) / wall
    if start.pressure_us is not None and end.pressure_us is not None:
        found.pressure = min(1.0, max(0, end.pressure_us - start.pressure_us) / 1e6 / wall)
    elif (load := _load_average(proc)) is not None:
        found.load_per_core = load / found.cores
    ticks = (end.total_ticks or 0) - (start.total_ticks or 0)
    if start.steal_ticks is not None and end.steal_ticks is not None and ticks > 0:
        found.steal = max(0, end.steal_ticks - start.steal_ticks) / ticks
    return _judge(found)


class Window:
    """Contention over the blocks run inside ``measure()``, combined."""

    def __init__(self, proc: Path | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.proc, self.clock = proc, clock
        self.parts: list[Contention] = []

    @contextmanager
    def measure(self) -> Iterator[None]:
        start = read(self.proc, self.clock)
        try:
            yield
        finally:
            self.parts.append(between(start, read(self.proc, self.clock), self.proc))

    def result(self) -> Contention | None:
        return combine(self.parts)


def combine(parts: list[Contention]) -> Contention | None:
    """Several windows as one, each share weighted by its wall time."""
    if not parts:
        return None

    def mean(name: str) -> float | None:
        known = [(getattr(p, name), max(p.wall_s, 1e-9)) for p in parts if getattr(p, name) is not None]
        return sum(v * w for v, w in known) / sum(w for _, w in known) if known else None

    joined = Contention(wall_s=sum(p.wall_s for p in parts), cores=parts[0].cores)
    joined.pressure, joined.load_per_core = mean("pressure"), mean("load_per_core")
    joined.steal, joined.process_cpu_share = mean("steal"), mean("process_cpu_share")
    return _judge(joined)
