"""compare ``--online-quant fp8``: vLLM's online path per layer next to whole-model materialization, both
accounted on meta (``deploy/online_quant.py``) and each run for real where it fits both budgets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from dummyprof.deploy.online_quant import PER_LAYER, WHOLE_MODEL, OnlineQuantResult, online_quantize
from dummyprof.errors import UsageError
from dummyprof.measure.budget import DEFAULT_SHARE, HostMemory, host_budget, host_memory
from dummyprof.measure.memory import PeakRss
from dummyprof.results.common import copied
from dummyprof.results.deployment import OnlineQuantEntry
from dummyprof.units import format_bytes

if TYPE_CHECKING:
    from dummyprof.scenarios.compare.options import CompareOptions

PROBE_SHAPE = (512, 1024)  # one bf16 linear quantized to time the path per byte
SAFETY = 1.25
MIB = 1 << 20
PROBE_TRIALS = 3


@dataclass
class OnlinePlan:
    model: nn.Module
    budget: int
    accounted: dict[str, OnlineQuantResult]
    bytes_per_s: float  # high-precision bytes through the whole path (fill + quantize) per second, probed


def _probe_rate(scale: str, initializer: str) -> float:
    probe = nn.Module()
    probe.proj = nn.Linear(PROBE_SHAPE[1], PROBE_SHAPE[0], bias=False, device="meta", dtype=torch.bfloat16)
    # the first pass pays one-time costs (the initializer's set-up): keep the fastest
    runs = [online_quantize(probe, scale=scale, initializer=initializer)[0] for _ in range(PROBE_TRIALS)]  # per layer
    return runs[-1].high_precision_bytes / max(min(done.seconds for done in runs), 1e-9)


def plan_online_quant(model: nn.Module, options: CompareOptions, *, memory: HostMemory | None = None) -> OnlinePlan:
    """Account both passes on meta; refuse when the per-layer peak does not fit the budget, offering a
    ``--max-memory`` only where that value would pass, else naming the machine as the limit."""
    initializer = options.initializer or "v0.33"
    accounted = {
        mode: online_quantize(
            model, mode=mode, scale=options.online_quant_scale, initializer=initializer, execute=False
        )[0]
        for mode in (PER_LAYER, WHOLE_MODEL)
    }
    memory = memory or host_memory()
    budget = host_budget(options.max_memory, memory=memory)
    peak = accounted[PER_LAYER].peak_bytes
    if peak > budget:
        what = (
            f"online fp8 per layer peaks at {format_bytes(peak)} (exact accounting, at {accounted[PER_LAYER].peak_at})"
        )
        offer = -(-peak // MIB) * MIB
        if offer <= memory.available_bytes and host_budget(offer, memory=memory) >= peak:
            given = (
                f"the --max-memory of {format_bytes(budget)}"
                if options.max_memory
                else (f"the default budget of {format_bytes(budget)} ({DEFAULT_SHARE:.0%} of {memory.describe()})")
            )
            raise UsageError.for_field("max_memory", f"{what}, over {given}; give --max-memory {offer // MIB}MiB")
        raise UsageError.for_field(
            "online_quant",
            f"{what}, over this machine's memory ({memory.describe()}): the machine is the limit, not --max-memory; "
            "run it on a larger host or shrink the model",
        )
    return OnlinePlan(model, budget, accounted, _probe_rate(options.online_quant_scale, initializer))


def _entry(done: OnlineQuantResult, **extra: Any) -> OnlineQuantEntry:
    entry = copied(OnlineQuantEntry, done, **extra)
    if not done.executed:
        entry.fill_s = entry.quantize_s = entry.seconds = None
    return entry


def online_quant_entries(plan: OnlinePlan, options: CompareOptions) -> list[OnlineQuantEntry]:
    """Each pass run where its peak fits the budget and the probe predicts it fits the time budget."""
    entries = []
    for mode, accounted in plan.accounted.items():
        predicted = SAFETY * accounted.high_precision_bytes / plan.bytes_per_s
        if accounted.peak_bytes > plan.budget or predicted > options.time_budget:
            why = "memory" if accounted.peak_bytes > plan.budget else "time"
            entries.append(_entry(accounted, not_run=why, predicted_s=predicted))
            continue
        sampler = PeakRss()
        with sampler.measure():
            done, model = online_quantize(
                plan.model, mode=mode, scale=options.online_quant_scale, initializer=options.initializer or "v0.33"
            )
            del model
        reading = sampler.reading
        entries.append(_entry(done, rss_growth_bytes=reading.peak - reading.before if reading is not None else None))
    return entries
