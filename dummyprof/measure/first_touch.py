"""What the first write to memory the process never touched costs: a page fault per page, which the kernel (and
under a hypervisor, the host) pays before the fill's own work. An engine's worker fills its weights once, into
memory it has just allocated, so its start-up pays it for every byte; a refill, or a calibration fill that reuses
memory freed a moment ago, does not. The probe holds fresh chunks, in order, until it has as many bytes as the fill
first-touches or its share of a budget ends: the first chunks often come from pages freed moments ago and cost a
tenth of the rest, so a small sample would price the cheap ones alone. Each chunk is its own anonymous mapping of
the size the fill's tensors are mapped at (a page fault per page, whatever the allocator holds: glibc would serve a
chunk from free heap the run touched before), so the probe pays what the fill's own mappings pay."""

from __future__ import annotations

import mmap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

from dummyprof.measure.budget import offered_seconds
from dummyprof.measure.memory import FRESH_MAP_BYTES
from dummyprof.results.common import FirstTouch

CHUNK_BYTES = 64 << 20  # the largest chunk: a fill of bigger tensors pays per page alike, and the probe needs two
MIN_CHUNKS = 2  # a rest priced from one chunk would be priced from the cheapest pages alone


@contextmanager
def _one_thread() -> Iterator[None]:
    """Faults taken on one thread, as vLLM's ``uniform_`` (single-threaded on a CPU) takes them; a fill on every
    core can take them faster, so this prices its first touch at most, never below."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def chunk_within(chunk_bytes: int, memory_bytes: int) -> int:
    """The probe's mapping size: ``chunk_bytes``, or the largest power of two of which :data:`MIN_CHUNKS` fit
    ``memory_bytes``, never under what glibc maps afresh. A page faults alike in a mapping of 16 or 64 MiB, so a
    tight memory budget costs the probe its sample size, not its sample."""
    fitting = memory_bytes // MIN_CHUNKS
    if fitting >= chunk_bytes:
        return chunk_bytes
    return max(1 << max(fitting.bit_length() - 1, 0), FRESH_MAP_BYTES)


def probe(
    needed_bytes: int,
    *,
    memory_bytes: int,
    seconds: float,
    clock: Callable[[], float] = time.perf_counter,
    chunk_bytes: int = CHUNK_BYTES,
    share: float = 1.0,
) -> FirstTouch:
    """Fresh mappings of ``chunk_bytes`` (:func:`chunk_within` ``memory_bytes``) held until they cover
    ``needed_bytes``, ``memory_bytes`` would be passed, or ``seconds`` are spent (after :data:`MIN_CHUNKS`); each
    memset on its fresh pages, then again touched. Stopped by time, it names the budget whose ``share`` covers every
    needed page the room holds, the rest at its dearest chunk's cost."""
    chunk_bytes = chunk_within(chunk_bytes, memory_bytes)
    room = memory_bytes - memory_bytes % chunk_bytes
    result = FirstTouch(chunk_bytes=chunk_bytes, needed_bytes=needed_bytes, room_bytes=room)
    held: list[tuple[mmap.mmap, torch.Tensor]] = []
    deadline = clock() + seconds
    with _one_thread():
        while result.sampled_bytes < needed_bytes:
            if result.sampled_bytes + chunk_bytes > memory_bytes:
                result.binding = "memory"
                break
            if len(held) >= MIN_CHUNKS and clock() > deadline:
                result.binding = "time"
                break
            mapping = mmap.mmap(-1, chunk_bytes)
            chunk = torch.frombuffer(mapping, dtype=torch.uint8)
            t0 = clock()
            chunk.fill_(0)
            t1 = clock()
            chunk.fill_(1)
            result.fresh_s.append(t1 - t0)
            result.touched_s.append(clock() - t1)
            held.append((mapping, chunk))
    if result.binding == "time":
        # Pages further in can cost more (a hypervisor backing them): the rest at the dearest chunk's, as seen so far.
        costs = [f + t for f, t in zip(result.fresh_s, result.touched_s, strict=True)]
        rest = max(0, min(needed_bytes, room) - result.sampled_bytes) / chunk_bytes
        result.budget_s = float(offered_seconds(sum(costs) + rest * max(costs), share=share, margin=1.0))
    return result
