"""Memory figures: process RSS and its peak, pinned host memory, GPU memory; one not measurable here has a reason."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import psutil
import torch

from dummyprof.results.common import Estimate, MemoryUse

_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"

# glibc serves a request of 32 MiB or more (the ceiling of its dynamic mmap threshold on 64-bit) with freshly
# mapped pages, whatever the process did before; a smaller one may come back from memory an earlier allocation
# freed, already touched. Fresh pages cost a page fault each on the first write (a memset of them can run an order
# of magnitude slower than one of touched pages), so a floor and the fills it is compared with are timed on the
# same kind.
MMAP_THRESHOLD = 32 << 20
# glibc's starting threshold. Fixed there (``map_afresh``), a model's every allocation past it is mapped afresh and
# unmapped when freed, so a model built again for the next measured round first-touches its pages as the engine's
# does; its fill's temporaries reuse a kept heap (``heap_reused``), as the engine's do once its threshold has risen.
FRESH_MAP_BYTES = 128 << 10
_M_MMAP_THRESHOLD = -3  # mallopt's parameter numbers (malloc.h)
_M_TRIM_THRESHOLD = -1
_mapped_afresh = False


def map_afresh(device: torch.device) -> bool:
    """Fix glibc's mmap threshold at :data:`FRESH_MAP_BYTES` for the rest of the process (it stops growing as
    allocations are freed) when ``device`` is the CPU; False where the C library is not glibc, or on a GPU."""
    global _mapped_afresh
    if device.type != "cpu":
        return False
    if not _mapped_afresh:
        try:
            libc = ctypes.CDLL(None)
            _mapped_afresh = bool(libc.mallopt(_M_MMAP_THRESHOLD, FRESH_MAP_BYTES))
        except (OSError, AttributeError):
            return False
    return _mapped_afresh


def engine_maps_afresh(nbytes: int) -> bool:
    """Whether an engine's worker (glibc's defaults, one fill) maps a temporary of ``nbytes`` afresh at every visit:
    past :data:`MMAP_THRESHOLD`; a smaller one comes back from the heap an earlier visit's freed, touched."""
    return nbytes >= MMAP_THRESHOLD


KEPT_HEAP_BYTES = 96 << 20  # a sampled tensor and its temporary, both under MMAP_THRESHOLD, with room to spare


def _grow_heap(libc: ctypes.CDLL, kept_bytes: int) -> None:
    """Grow the heap by ``kept_bytes`` (whole blocks of half the mmap threshold) of touched memory, kept when freed:
    a sampled fill's allocations then land on touched pages wherever the allocator places them, not only where a
    freed block fits."""
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    block_bytes = MMAP_THRESHOLD // 2
    blocks = [libc.malloc(block_bytes) for _ in range(-(-kept_bytes // block_bytes))]
    for block in blocks:
        if block:
            ctypes.memset(block, 0, block_bytes)
    for block in blocks:
        libc.free(block)


@contextlib.contextmanager
def heap_reused(device: torch.device, *, grown: bool = True, kept_bytes: int = KEPT_HEAP_BYTES) -> Iterator[None]:
    """Temporaries under :data:`MMAP_THRESHOLD` served from a heap kept across frees, as an engine's smaller scratches
    are after their first visit: a calibration fill's (``grown``: on ``kept_bytes`` touched on entry) or a measured
    fill's (its first visit on fresh pages, as the engine's). Afterwards the threshold is ``map_afresh``'s where that
    was fixed, else glibc's ceiling (what the dynamic threshold reaches), and the free heap goes back to the kernel:
    glibc serves an allocation from free heap past any threshold, so a model built next (or a probe) would
    otherwise land on these touched pages."""
    if device.type != "cpu":
        yield
        return
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_TRIM_THRESHOLD, KEPT_HEAP_BYTES + MMAP_THRESHOLD)
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    except (OSError, AttributeError):
        yield
        return
    if grown:
        _grow_heap(libc, kept_bytes)
    try:
        yield
    finally:
        if _mapped_afresh:
            libc.mallopt(_M_MMAP_THRESHOLD, FRESH_MAP_BYTES)
        libc.malloc_trim(0)


def fresh_pages(nbytes: int, device: torch.device) -> bool:
    """Whether an allocation of ``nbytes`` on ``device`` is first written on fresh pages whatever came before
    (CPU, at or past glibc's mmap threshold: :data:`FRESH_MAP_BYTES` once ``map_afresh`` fixed it, else
    :data:`MMAP_THRESHOLD`); below it, or on a GPU, its pages' kind is not the allocation's."""
    return device.type == "cpu" and nbytes >= (FRESH_MAP_BYTES if _mapped_afresh else MMAP_THRESHOLD)


def rss_bytes() -> int:
    return int(psutil.Process().memory_info().rss)


def _read_hwm() -> int | None:
    try:
        with open(_STATUS, encoding="ascii") as handle:
            match = re.search(r"VmHWM:\s+(\d+) kB", handle.read())
    except OSError:
        return None
    return int(match.group(1)) * 1024 if match else None


def _reset_hwm() -> bool:  # Linux resets the peak-RSS counter when "5" is written to clear_refs
    try:
        with open(_CLEAR_REFS, "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        return False
    return _read_hwm() is not None


@dataclass
class PeakReading:
    before: int
    peak: int
    method: str


class PeakRss:
    """Peak RSS over a block: the kernel's VmHWM where it can be reset, else a sampling thread."""

    def __init__(self, interval_s: float = 0.002) -> None:
        self.interval_s = interval_s
        self.reading: PeakReading | None = None

    @contextlib.contextmanager
    def measure(self) -> Iterator[PeakRss]:
        before = rss_bytes()
        if _reset_hwm():
            yield self
            hwm = _read_hwm()
            peak = max(hwm if hwm is not None else before, before, rss_bytes())
            self.reading = PeakReading(before, peak, "VmHWM (reset per run)")
            return
        stop = threading.Event()
        peak_box = [before]

        def sample() -> None:
            process = psutil.Process()
            while not stop.wait(self.interval_s):
                peak_box[0] = max(peak_box[0], int(process.memory_info().rss))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            yield self
        finally:
            stop.set()
            sampler.join()
        peak = max(peak_box[0], rss_bytes())
        self.reading = PeakReading(before, peak, f"psutil sampled every {self.interval_s * 1e3:.0f} ms")


def pinned_memory_figure() -> Estimate:
    if not torch.cuda.is_available():
        return Estimate.missing("no CUDA (pinned memory needs CUDA)")
    stats_fn = getattr(torch.cuda, "host_memory_stats", None)
    if stats_fn is None:
        return Estimate.missing(f"torch {torch.__version__} has no torch.cuda.host_memory_stats()")
    stats = stats_fn()
    for key in ("allocated_bytes.current", "reserved_bytes.current", "allocations.current"):
        if key in stats:
            return Estimate(float(stats[key]))
    return Estimate.missing("host_memory_stats() reports no byte counts")


@functools.cache
def _nvml_init() -> str | None:
    """None once NVML is initialized (tried once), else why there are no GPU figures."""
    try:
        import pynvml
    except ImportError:
        return "pynvml not installed (pip install nvidia-ml-py)"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError has many subclasses; any means no figures
        return f"no GPU (nvmlInit: {exc})"
    return None


def gpu_used_figure(device: torch.device) -> Estimate:
    """Device memory in use (all processes) from NVML."""
    index = device.index if device.type == "cuda" and device.index is not None else 0
    error = _nvml_init()
    if error is not None:
        return Estimate.missing(error)
    import pynvml

    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception as exc:
        return Estimate.missing(f"nvml has no device {index} ({exc})")
    return Estimate(float(pynvml.nvmlDeviceGetMemoryInfo(handle).used))


def gpu_allocator_peak_figure(device: torch.device) -> Estimate:
    if device.type != "cuda":
        return Estimate.missing("tensors on CPU" if torch.cuda.is_available() else "no GPU")
    return Estimate(float(torch.cuda.max_memory_allocated(device)))


def memory_use(device: torch.device, reading: PeakReading | None = None) -> MemoryUse:
    """Pinned and GPU memory as they stand now, beside a peak RSS ``reading`` where there is one."""
    used = MemoryUse(
        pinned_bytes=pinned_memory_figure(),
        gpu_used_bytes=gpu_used_figure(device),
        gpu_allocator_peak_bytes=gpu_allocator_peak_figure(device),
    )
    if reading is not None:
        used.rss_before_bytes, used.rss_peak_bytes, used.rss_peak_method = reading.before, reading.peak, reading.method
    return used


def reset_gpu_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def available_memory_bytes() -> int:
    return int(psutil.virtual_memory().available)


def total_memory_bytes() -> int:
    return int(psutil.virtual_memory().total)


def gpu_free_bytes(device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    free, _total = torch.cuda.mem_get_info(device)
    return int(free)


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    import platform

    return platform.processor() or platform.machine()


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
