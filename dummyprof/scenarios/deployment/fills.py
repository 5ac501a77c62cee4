"""compare on a deployment: the counts (``run.py``), then compare's measurement on each distinct shard (a GPU
deployment's device-resident part on the device, its CPU-offloaded tables filled on the host), the real ranks of
``--nproc``, the online fp8 passes of ``--online-quant``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import torch
from torch import nn

from dummyprof.deploy import RankCoord, Sharder
from dummyprof.deploy.shards import RankShard, empty_copy
from dummyprof.errors import UsageError
from dummyprof.loaders.counting import count_on_meta
from dummyprof.loaders.strategies import get_strategy
from dummyprof.measure import contention, engine
from dummyprof.measure.budget import host_budget, offered_seconds
from dummyprof.measure.memory import rss_bytes
from dummyprof.models.source import ModelSource
from dummyprof.results.common import MEASURED, PROJECTED, Contention, Estimate
from dummyprof.results.compare import CompareResult, StrategyResult
from dummyprof.results.deployment import (
    NO_CUDA_HERE,
    DeploymentResult,
    HostFill,
    RankEntry,
    RankStrategy,
    layout_text,
)
from dummyprof.results.session import Results
from dummyprof.scenarios.compare.measure import measure
from dummyprof.scenarios.compare.options import CompareOptions
from dummyprof.scenarios.compare.runner import Progress
from dummyprof.scenarios.compare.sizing import COUNTING_SHARE, counting_limit
from dummyprof.scenarios.deployment.online import OnlinePlan, online_quant_entries, plan_online_quant
from dummyprof.scenarios.deployment.run import (
    DEVICE,
    HOST,
    Clock,
    Counted,
    count,
    fill_device,
    refuse_loaders,
    residence,
    shard_model,
    shard_tensors,
)
from dummyprof.scenarios.model_choice import chosen_source

MAX_FILLED_SHARDS = 4  # distinct shards filled or projected; more (deep pipelines) would split the budget too thin
SAMPLE_SHARE = 0.15  # of a shard's host share, for the engine's samples of its tables' fill
HostTable = tuple[str, torch.Size, torch.dtype, float]  # a CPU-offloaded table: name, shape, dtype, declared value


def pinned_host_memory() -> bool:
    """Host-resident tables go to pinned memory where CUDA is present (vLLM pins them), pageable otherwise."""
    return torch.cuda.is_available()


def _host_tables(shard: RankShard) -> list[HostTable]:
    """The shard's CPU-offloaded tables: what ``_offloaded`` counts."""
    tensors, where = shard_tensors(shard), residence(shard)
    tables = []
    for entry in (t for t in shard.tensors if where[t.name] == HOST):
        tensor = tensors[entry.name]
        value = float(tensor.dummy_weight_value)  # type: ignore[attr-defined]
        tables.append((entry.name, tensor.shape, tensor.dtype, value))
    return tables


def device_part(shard: RankShard, device: torch.device) -> nn.Module:
    """The shard's module (built on meta) with its host-resident tables taken out and every other tensor allocated,
    unfilled, on ``device`` (``fill_device``): what the device-side fill fills. Tied tensors stay tied; the host
    tables are never allocated on the device."""
    where = residence(shard)
    made: dict[int, torch.Tensor] = {}
    for path, module in shard.module.named_modules(remove_duplicate=False):
        for store in (module._parameters, module._buffers):
            for local, tensor in list(store.items()):
                if tensor is None:
                    continue
                name = f"{path}.{local}" if path else local
                if where.get(name, DEVICE) == HOST:
                    del store[local]
                    continue
                if id(tensor) not in made:
                    made[id(tensor)] = empty_copy(tensor, tuple(tensor.shape), fill_device(DEVICE, device))
                store[local] = made[id(tensor)]
    return shard.module


def shard_source(
    whole: ModelSource, sharder: Sharder, coord: RankCoord, nbytes: int, layout: str, *, split: bool = False
) -> ModelSource:
    """Rank ``coord``'s shard as a model source: compare builds, counts and fills it. ``split`` (a GPU deployment
    filled on its device): the device-resident part only (``device_part``), ``nbytes`` its bytes."""

    def build(device: torch.device) -> nn.Module:
        return device_part(sharder.build(coord), device) if split else sharder.build(coord, device).module

    return ModelSource(
        source=whole.source,
        description=f"{whole.description}, rank {coord.rank} of {layout}" + (", device-resident part" if split else ""),
        build=build,
        estimated_bytes=nbytes,
        options=dict(whole.options),
        largest_scratch_bytes=whole.largest_scratch_bytes,
        size_flag=whole.size_flag,
        dtype=whole.dtype,
        quantization=whole.quantization,
    )


def _fill_figures(entry: RankStrategy, s: StrategyResult) -> None:
    """The filled shard's time (measured, or compare's projection) onto a rank's strategy; its peak the RSS growth
    over the RSS before the fill (the whole RSS also counts torch: 420 MiB for a 102 MiB shard)."""
    if s.time.samples:
        entry.time = s.time
        entry.peak_bytes = s.memory.rss_growth_bytes
    elif s.projection is not None:
        p = s.projection
        entry.time = p.time
        entry.peak_bytes = p.peak_rss_bytes - p.rss_before_bytes  # the bytes it writes + its largest temporary


def _distinct(result: DeploymentResult, held: Callable[[RankEntry], int]) -> list[RankEntry]:
    """Each distinct shard's first rank (it walked the shard) holding ``held`` bytes, the largest first, at most
    ``MAX_FILLED_SHARDS``."""
    walked = [r for r in result.ranks if r.counted_as == r.rank and held(r)]
    return sorted(walked, key=lambda r: (-held(r), r.rank))[:MAX_FILLED_SHARDS]


def _copies(result: DeploymentResult, rank: RankEntry) -> list[RankEntry]:
    return [entry for entry in result.ranks if entry.counted_as == rank.counted_as]


def _noise(time: Estimate | None) -> tuple[float, float]:
    """The figures' noise: a projection's interval, or the fastest to slowest measured round."""
    value = time.value if time is not None and time.value is not None else 0.0
    return time.span or (value, value) if time is not None else (value, value)


def _slowest(result: DeploymentResult) -> None:
    """The rank whose fill takes longest (per-layer first), within noise unless its figures lie above every
    other shard's (a stage with 3% more bytes once got a 70% larger projection from noisy calibration fills)."""
    timed = [r for r in result.ranks if any(s.seconds is not None for s in r.strategies)]
    if not timed:
        return
    names = [s.strategy for s in timed[0].strategies if s.seconds is not None]
    name = "per-layer" if "per-layer" in names else names[0]
    slowest = max(timed, key=lambda r: (r.strategy(name).seconds or 0.0, -r.rank))
    result.slowest_rank, result.slowest_strategy = slowest.rank, name
    low = _noise(slowest.strategy(name).time)[0]
    others = [_noise(r.strategy(name).time)[1] for r in timed if r.filled_as != slowest.filled_as]
    result.slowest_within_noise = not others or low <= max(others)


def _target(options: CompareOptions) -> str:
    """ "cuda" for a GPU deployment (``--device cuda``, CUDA found by ``auto``, or ``--device-memory`` without
    ``--device cpu``), else "cpu": a CPU deployment (vLLM's CPU backend) is timed on the CPU."""
    spec = options.device.strip().lower()
    if spec.startswith("cuda") or (spec == "auto" and (torch.cuda.is_available() or options.device_memory)):
        return "cuda"
    return "cpu"


def _online_plan(
    options: CompareOptions, source: ModelSource, meta: nn.Module, sharder: Sharder
) -> tuple[OnlinePlan, str] | None:
    """``--online-quant``'s plan on the largest distinct shard (the whole model on one rank), and what it ran on;
    refused before anything is counted."""
    if not options.online_quant:
        return None
    applied = source.quantization.method if source.quantization is not None else None
    if applied:
        raise UsageError.for_field(
            "online_quant",
            f"the checkpoint is already {applied}-quantized (vLLM quantizes online only an "
            "unquantized model); add --quantization none to run it on the model counted unquantized",
        )
    layout = options.layout
    firsts = [g.coord for g in sharder.groups()]  # each distinct shard once
    largest = max(firsts, key=lambda c: (sharder.build(c).nbytes, -c.rank))
    target = sharder.build(largest).module if layout.world > 1 else meta
    plan = plan_online_quant(target, options)  # refuses first
    return plan, f"rank {largest.rank}" if layout.world > 1 else "whole model"


def measure_deployment(
    options: CompareOptions,
    *,
    strategies: list[str],
    source: ModelSource | None = None,
    progress: Progress | None = None,
    clock: Clock = time.perf_counter,
) -> Results:
    """compare's per-rank answers: the counts, then each distinct shard measured within the time budget, the
    real ranks (``--nproc``) and the online fp8 passes (``--online-quant``)."""
    from dummyprof.measure.device import resolve_device

    refuse_loaders(options)
    budget = options.time_budget
    source = source or chosen_source(options, counting_limit(budget) if budget else None, COUNTING_SHARE)
    shards = shard_model(options, source, clock)
    online = _online_plan(options, source, shards.model, shards.sharder)
    counted = count(options, "compare", source, shards, strategies=strategies, clock=clock, grouped=not options.nproc)
    result = counted.result
    result.target = _target(options)
    here = result.target != "cuda" or torch.cuda.is_available()  # the device the bytes are for is on this machine
    device = torch.device("cpu")
    if here:
        device = resolve_device("cuda" if result.target == "cuda" and options.device == "auto" else options.device)
    result.device, result.not_timed = str(device), "" if here else NO_CUDA_HERE
    _fill(counted, options, strategies, progress, clock, here=here)
    if options.nproc:
        _real_ranks(result, options, strategies)
    _slowest(result)
    if online is not None:
        result.online_quant = online_quant_entries(online[0], options)
        result.online_quant_target = online[1]
    return counted.results(options, device)


def _fill(
    counted: Counted,
    options: CompareOptions,
    strategies: list[str],
    progress: Progress | None,
    clock: Clock,
    *,
    here: bool,
) -> None:
    """A GPU deployment's bytes are timed where they live: the device-resident part on the device (where it is
    here), the host-resident part (CPU-offloaded tables) on this host's CPU, each with its share of the budget."""
    result = counted.result
    split = result.target == "cuda" and any(r.offloaded_bytes for r in result.ranks)
    host_s = _host_share(result, options.time_budget) if split and here else 0.0
    if here:
        counted.notes += _fill_shards(counted, options, progress, options.time_budget - host_s, split=split)
    if split:
        _fill_host(counted, options, strategies, clock, host_s or options.time_budget)


def _fill_shards(
    counted: Counted, options: CompareOptions, progress: Progress | None, budget_s: float, *, split: bool = False
) -> list[str]:
    """compare on each distinct shard, the largest first: measured where it fits, projected where not; ``split``:
    the device-resident part of each (its host-resident tables are timed on the host, ``_fill_host``)."""
    result = counted.result
    filled = _distinct(result, lambda r: r.held_bytes)
    share = budget_s / len(filled)
    single = dataclasses.replace(
        options, tp=1, ep=1, pp=1, dp=1, ranks_per_node=None, online_quant=None, nproc=None, time_budget=share
    )
    notes: list[str] = []
    memset: list[float] = []
    busy: list[Contention] = []
    fresh: list[float] = []  # each projected shard's first-touch budget, where its probe ran out of time
    for rank in filled:
        nbytes = rank.held_bytes - rank.offloaded_bytes if split else rank.held_bytes
        coord = counted.coords[rank.rank]
        shard = shard_source(counted.source, counted.sharder, coord, nbytes, layout_text(result), split=split)
        run = measure(single, source=shard, progress=progress)
        assert run.compare is not None
        notes += run.notices
        part: CompareResult = run.compare
        by_name = {x.name: x for x in part.strategies}
        if part.size.memset_bytes_per_s:
            memset.append(part.size.memset_bytes_per_s)
        busy += [c for c in (part.calibration_contention, part.contention) if c is not None]
        pages = part.size.first_touch if part.size.mode == "projected" else None
        fresh += [pages.budget_s] if pages is not None and pages.budget_s is not None else []
        for entry in _copies(result, rank):
            entry.filled_as = rank.rank
            for s in entry.strategies:
                if s.strategy in by_name:
                    _fill_figures(s, by_name[s.strategy])
    result.shards_filled = len(filled)
    result.memset_bytes_per_s = max(memset) if memset else None
    result.contention = contention.combine(busy)
    if fresh:
        result.fresh_budget_s = deployment_fresh_budget(max(fresh), len(filled), options.time_budget, budget_s)
    return notes


def _real_ranks(result: DeploymentResult, options: CompareOptions, strategies: list[str]) -> None:
    """Every rank as a process, filling its shard at once with the others; its own figures onto its entry."""
    from dummyprof.ranks.world import RanksFailed
    from dummyprof.scenarios.deployment.ranks import BACKEND, run_ranks

    assert options.nproc is not None  # run with --nproc only
    try:
        figures = run_ranks(options, strategies, options.time_budget)
    except RanksFailed as failed:  # what the ranks that finished measured is kept, and the report says which
        figures, result.ranks_failure = failed.values, str(failed)
    result.nproc, result.backend = options.nproc, BACKEND
    result.ranks_finished = sorted(figures)
    for entry in result.ranks:
        if entry.rank not in figures:
            continue
        mine = figures[entry.rank]["strategies"]
        for s in entry.strategies:
            if s.strategy in mine:
                s.rank_time = Estimate(mine[s.strategy]["seconds"], device=result.device)
                s.rank_visits = mine[s.strategy]["visits"]
                s.rank_bytes_written = mine[s.strategy]["bytes_written"]


def deployment_fresh_budget(shard_s: float, shards: int, time_budget_s: float, shards_s: float) -> float:
    """The --time-budget whose shards' share gives each filled shard ``shard_s``: the shards share ``shards_s`` of
    ``time_budget_s`` (the host-resident part takes the rest, in proportion to the budget: ``_host_share``)."""
    return float(offered_seconds(shards * shard_s, share=shards_s / time_budget_s, margin=1.0))


def _host_share(result: DeploymentResult, budget_s: float) -> float:
    """The host-resident part's share of the time budget where the device part is filled too: by bytes, each side
    at least a fifth."""
    walked = [r for r in result.ranks if r.counted_as == r.rank]
    host, held = sum(r.offloaded_bytes for r in walked), sum(r.held_bytes for r in walked)
    return budget_s * min(0.8, max(0.2, host / held if held else 0.0))


def _fill_host_tables(tables: list[HostTable], clock: Clock, *, pinned: bool = False, touched: bool = False) -> float:
    """Allocate the tables in fresh host memory (pinned where CUDA is present, as vLLM pins offloaded tables;
    pageable otherwise; ``touched``: written once first) and fill each with its declared value: the seconds it took."""
    made = [torch.empty(shape, dtype=dtype, pin_memory=pinned) for _, shape, dtype, _ in tables]
    for tensor in made if touched else ():
        tensor.view(torch.uint8).fill_(0)
    t0 = clock()
    for tensor, (_, _, _, value) in zip(made, tables, strict=True):
        tensor.fill_(value)
    return clock() - t0


def _host_sampled(
    tables: list[HostTable], nbytes: int, room: int, share: float, clock: Clock
) -> tuple[engine.Sampled, engine.Floors]:
    """The tables' fill sampled by the engine (their largest table's dtype and value, in memory touched first)
    within SAMPLE_SHARE of ``share``, and the floors: the memset rate, and the first touch of ``nbytes`` fresh
    pages where they are pageable (pinned pages are mapped when allocated), within ``room`` (the engine's share)."""
    pinned = pinned_host_memory()
    _, _, dtype, value = max(tables, key=lambda t: t[1].numel() * t[2].itemsize)
    element = dtype.itemsize

    def fill(size: int) -> float:
        return _fill_host_tables(
            [("probe", torch.Size([size // element]), dtype, value)], clock, pinned=pinned, touched=True
        )

    cpu, fresh = torch.device("cpu"), 0 if pinned else nbytes
    with engine.measuring(engine.Floors(), cpu, fresh_bytes=fresh, memory_bytes=room, time_budget_s=share) as floors:
        sampled = engine.sample(fill, nbytes, seconds=share * SAMPLE_SHARE, element=element, clock=clock)
        floors.memset_bytes = sampled.sizes[-1]
    return sampled, floors


def _table_counts(shard: RankShard, names: set[str], strategies: list[str]) -> dict[str, tuple[int, int]]:
    """Each strategy's exact visits and bytes written of the tables ``names`` on the shard, counted on meta."""
    counted = {}
    for name in strategies:
        records = count_on_meta(shard.module, get_strategy(name)).recorder.records.values()
        mine = [x for x in records if names & set(x.names)]
        counted[name] = (sum(x.visits for x in mine), sum(x.bytes_written for x in mine))
    return counted


def _fill_host(counted: Counted, options: CompareOptions, strategies: list[str], clock: Clock, budget_s: float) -> None:
    """A GPU deployment's host-resident bytes (CPU-offloaded tables), timed on this host's CPU (pinned memory where
    CUDA is present, ``pinned_host_memory``), with or without the device-resident rest timed on the device.

    Each distinct shard's offloaded tables (the largest first, at most ``MAX_FILLED_SHARDS``, the time budget
    shared) are sampled by the engine (``_host_sampled``) and filled for real in fresh host memory where they fit
    ``--max-memory`` and the engine's projection fits what the sampling left of the budget (the median of up to
    ``--repeat`` rounds); projected by the engine otherwise. Each strategy's exact visits and bytes of those tables
    are counted on the shard; a strategy that writes them more than once is scaled by its bytes (projected). The
    device-resident rest stays not timed.
    """
    result = counted.result
    distinct = _distinct(result, lambda r: r.offloaded_bytes)
    share = budget_s / len(distinct)
    room = host_budget(options.max_memory)
    window = contention.Window(clock=clock)
    for rank in distinct:
        shard = counted.sharder.build(counted.coords[rank.rank])
        tables = _host_tables(shard)
        names = {name for name, *_ in tables}
        nbytes = rank.offloaded_bytes
        with window.measure():
            sampled, floors = _host_sampled(tables, nbytes, max(0, room - rss_bytes()), share, clock)
            whole = engine.project(engine.cost(sampled, nbytes, len(tables)), nbytes, floors, touched=nbytes)
            samples: list[float] = []
            if nbytes <= room and (whole.time.value or 0.0) <= share - floors.seconds:
                start = clock()
                for _ in range(max(1, options.repeat)):
                    samples.append(_fill_host_tables(tables, clock, pinned=pinned_host_memory()))
                    if clock() - start + samples[-1] > share - floors.seconds:
                        break
        per_strategy = _table_counts(shard, names, strategies)
        for entry in _copies(result, rank):
            for s in entry.strategies:
                visits, written = per_strategy.get(s.strategy, (0, 0))
                if samples:
                    scaled = [x * written / nbytes for x in samples]
                    fill_time = Estimate.measured(scaled, device="cpu")
                    fill_time.how = MEASURED if written == nbytes else PROJECTED  # scaled by the bytes written again
                else:
                    costs = engine.cost(sampled, written, visits)
                    fill_time = engine.project(costs, written, floors, touched=nbytes, device="cpu").time
                s.host = HostFill(visits, written, fill_time, pinned_host_memory())
    machine = window.result()
    for r in result.ranks:
        for s in r.strategies:
            if s.host is not None:
                s.host.time.contention = machine
