"""A deployment (``--tp/--ep/--pp/--dp``, compare's ``--online-quant``): every rank's shard on meta with exact
counts (``deploy.count_deployment``), compare's measurement on each distinct shard, the node view.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from dummyprof.allocation.backings import next_power_of_two
from dummyprof.deploy import DeploymentCounts, RankCoord, Sharder, count_deployment
from dummyprof.deploy.plan import ROWS, ModelDims
from dummyprof.deploy.quant import quantizer_of
from dummyprof.deploy.shards import RankShard, empty_copy
from dummyprof.errors import UsageError
from dummyprof.loaders.counting import count_on_meta
from dummyprof.loaders.strategies import get_strategy
from dummyprof.measure import contention
from dummyprof.measure.budget import host_budget
from dummyprof.measure.memory import total_memory_bytes
from dummyprof.measure.projection import capability
from dummyprof.models.source import ModelSource
from dummyprof.results.common import Contention
from dummyprof.results.compare import CompareResult, StrategyResult
from dummyprof.results.deployment import (
    MEASURED,
    NO_CUDA_HERE,
    PROJECTED,
    DeploymentResult,
    HostFill,
    NodeEntry,
    RankStrategy,
    layout_text,
)
from dummyprof.results.session import Results
from dummyprof.results.whole import check_possible
from dummyprof.scenarios.compare.measure import measure
from dummyprof.scenarios.compare.options import CompareOptions
from dummyprof.scenarios.compare.runner import Progress
from dummyprof.scenarios.compare.sizing import counting_limit
from dummyprof.scenarios.deployment.online import online_quant_entries, plan_online_quant
from dummyprof.scenarios.deployment.options import LayoutGroup
from dummyprof.scenarios.model_choice import chosen_source
from dummyprof.scenarios.options import BuildGroups

META = torch.device("meta")
MAX_FILLED_SHARDS = 4  # distinct shards filled or projected; more (deep pipelines) would split the budget too thin
HOST_PROBE_BYTES = 64 << 20  # the host-resident part's probe fill (fresh memory), and its trials
HOST_PROBE_TRIALS = 5
Clock = Callable[[], float]


HOST, DEVICE = "host", "device"  # where a shard's tensor lives: CPU-offloaded tables on the host, the rest on the GPU


def _tensors(shard: RankShard) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = dict(shard.module.named_parameters(remove_duplicate=False))
    tensors.update(shard.module.named_buffers(remove_duplicate=False))
    return tensors


def residence(shard: RankShard) -> dict[str, str]:
    """Where each of the shard's tensors lives in the deployment: ``HOST`` for a CPU-offloaded table (Engram rows
    that declare their value: vLLM offloads those), else ``DEVICE``."""
    tensors = _tensors(shard)
    return {
        t.name: HOST
        if t.rule == ROWS and getattr(tensors.get(t.name), "dummy_weight_value", None) is not None
        else DEVICE
        for t in shard.tensors
    }


def fill_device(where: str, device: torch.device) -> torch.device:
    """The device a tensor living ``where`` is filled and timed on, for a deployment on ``device``: a host-resident
    table on this host's CPU, whatever the device; a device-resident tensor on the device."""
    return torch.device("cpu") if where == HOST else device


def pinned_host_memory() -> bool:
    """Host-resident tables go to pinned memory where CUDA is present (vLLM pins them), pageable otherwise."""
    return torch.cuda.is_available()


def _offloaded(shard: RankShard) -> list[int]:
    """Bytes of each CPU-offloaded table the shard holds."""
    where = residence(shard)
    return [t.nbytes for t in shard.tensors if where[t.name] == HOST]


def _host_tables(shard: RankShard) -> list[tuple[str, torch.Size, torch.dtype, float]]:
    """The shard's CPU-offloaded tables as (name, shape, dtype, declared value): what ``_offloaded`` counts."""
    tensors, where = _tensors(shard), residence(shard)
    return [
        (t.name, tensors[t.name].shape, tensors[t.name].dtype, float(tensors[t.name].dummy_weight_value))  # type: ignore[attr-defined]
        for t in shard.tensors
        if where[t.name] == HOST
    ]


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
    )


def _fill_figures(entry: RankStrategy, s: StrategyResult) -> None:
    """The filled shard's time (measured, or compare's projection) onto a rank's strategy; its peak the RSS growth
    over the RSS before the fill (the whole RSS also counts torch: 420 MiB for a 102 MiB shard)."""
    if s.timing.samples_s:
        entry.fill, entry.seconds, entry.samples_s = MEASURED, s.timing.median, list(s.timing.samples_s)
        entry.peak_bytes = s.memory.rss_growth_bytes
    elif s.projection is not None:
        p = s.projection
        entry.fill, entry.seconds = PROJECTED, p.seconds
        entry.low_s, entry.high_s, entry.floor_s = p.low_s, p.high_s, p.floor_s
        entry.peak_bytes = p.peak_rss_bytes - p.rss_before_bytes  # the bytes it writes + its largest temporary


def _replicated_extra(counts: DeploymentCounts) -> int:
    """Replicated tensors beyond their first copy in each stage: every rank of a stage holds them whole."""
    per_stage: dict[int, list[int]] = {}
    for r in counts.ranks:
        per_stage.setdefault(r.stage, []).extend([r.replicated_bytes] * r.copies)
    return sum(sum(v) - max(v) for v in per_stage.values())


def _node_view(result: DeploymentResult, offloaded: dict[int, list[int]], options: LayoutGroup) -> None:
    per_node = options.ranks_per_node or result.world
    host = options.host_memory if options.host_memory is not None else total_memory_bytes()
    result.ranks_per_node, result.device_memory_bytes = per_node, options.device_memory
    nodes: dict[int, NodeEntry] = {}
    for r in result.ranks:
        r.node = r.rank // per_node  # its first rank's node (a group of dp ranks may span nodes)
        # the pinned allocator rounds each allocation up to a power of two (vLLM #56410; docs/semantics.md)
        pinned = sum(next_power_of_two(n) for n in offloaded[r.counted_as])
        for rank in r.rank_numbers(result.tp):
            node = nodes.setdefault(rank // per_node, NodeEntry(node=rank // per_node, host_memory_bytes=host))
            node.ranks.append(rank)
            node.held_bytes += r.held_bytes
            node.offloaded_bytes += r.offloaded_bytes
            node.pinned_bytes += pinned
        if options.device_memory is not None:
            r.device_room_bytes = options.device_memory - r.device_bytes
            r.device_fits = r.device_room_bytes >= 0
    for node in nodes.values():
        node.ranks.sort()
        node.host_fits = node.pinned_bytes <= node.host_memory_bytes if node.offloaded_bytes else None
    result.nodes = [nodes[n] for n in sorted(nodes)]


def _span(s: RankStrategy) -> tuple[float, float]:
    """The figures' noise: a projection's interval, or the fastest to slowest measured round."""
    if s.fill == PROJECTED and s.low_s is not None and s.high_s is not None:
        return s.low_s, s.high_s
    readings = s.samples_s or [s.seconds or 0.0]
    return min(readings), max(readings)


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
    low = _span(slowest.strategy(name))[0]
    others = [_span(r.strategy(name))[1] for r in timed if r.filled_as != slowest.filled_as]
    result.slowest_within_noise = not others or low <= max(others)


def _target(options: CompareOptions) -> str:
    """ "cuda" for a GPU deployment (``--device cuda``, CUDA found by ``auto``, or ``--device-memory`` without
    ``--device cpu``), else "cpu": a CPU deployment (vLLM's CPU backend) is timed on the CPU."""
    spec = options.device.strip().lower()
    if spec.startswith("cuda") or (spec == "auto" and (torch.cuda.is_available() or options.device_memory)):
        return "cuda"
    return "cpu"


def run_deployment(
    options: BuildGroups,
    command: str,
    *,
    strategies: list[str],
    source: ModelSource | None = None,
    progress: Progress | None = None,
    clock: Clock = time.perf_counter,
) -> Results:
    """Per-rank answers for compare's, inspect's or audit's options (their model and layout groups); compare's
    own (``CompareOptions``: its budget, device, ``--online-quant``, ``--nproc``) also measure each distinct shard."""
    from dummyprof.measure.device import resolve_device
    from dummyprof.measure.environment import collect_environment

    layout = options.layout
    if getattr(options, "loaders", None):  # audit's and compare's fill group; inspect has none
        raise UsageError.for_field(
            "loaders", "a deployment (--tp/--ep/--pp/--dp) fills shards with the built-in strategies; drop --loader"
        )
    own = options if isinstance(options, CompareOptions) else None
    budget_s = own.time_budget if own is not None else None
    source = source or chosen_source(options, counting_limit(budget_s) if budget_s else None)
    t0 = clock()
    meta = source.whole() if source.whole is not None else source.build(META)
    build_s = clock() - t0
    # refuses a tp vLLM cannot split first
    sharder = Sharder(meta, layout, ModelDims.of(meta, source.options), quantizer_of(source.options))
    quant_plan = None
    if own is not None and own.online_quant and source.options.get("quantization"):
        raise UsageError.for_field(
            "online_quant",
            f"the checkpoint is already {source.options['quantization']}-quantized (vLLM quantizes online only an "
            "unquantized model); add --quantization none to run it on the model counted unquantized",
        )
    if own is not None and own.online_quant:
        firsts = [g.coord for g in sharder.groups()]  # each distinct shard once
        largest = max(firsts, key=lambda c: (sharder.build(c).nbytes, -c.rank))
        target = sharder.build(largest).module if layout.world > 1 else meta
        quant_plan = plan_online_quant(target, own)  # refuses first
        quant_target = f"rank {largest.rank}" if layout.world > 1 else "whole model"
    real = own is not None and bool(own.nproc)  # real ranks report one by one
    counts = count_deployment(
        meta, layout, options=source.options, strategies=strategies, clock=clock, grouped=not real
    )
    target_kind = _target(own) if own is not None else ""  # compare's
    here = target_kind != "cuda" or torch.cuda.is_available()  # the device the bytes are for is on this machine
    device = torch.device("cpu")
    if own is not None and target_kind and here:
        device = resolve_device("cuda" if target_kind == "cuda" and own.device == "auto" else own.device)
    result = DeploymentResult(
        command=command,
        source=source.source,
        description=source.description,
        device=str(device),
        **dataclasses.asdict(layout),  # tp, pp, dp, expert_parallel
        ep=layout.ep,
        world=layout.world,
        layer_count=counts.layer_count,
        heads=counts.heads,
        kv_heads=counts.kv_heads,
        model_bytes=counts.model_bytes,
        replicated_extra_bytes=_replicated_extra(counts),
        shards_walked=counts.shards_walked,
        count_s=counts.seconds,
        build_s=build_s,
        target=target_kind,
        not_timed="" if here else NO_CUDA_HERE,
    )
    coords = {r.rank: layout.coord(r.rank) for r in counts.ranks}  # each entry's first rank
    offloaded: dict[int, list[int]] = {}
    for r in counts.ranks:
        if r.counted_as not in offloaded:
            offloaded[r.counted_as] = _offloaded(sharder.build(coords[r.counted_as]))
        r.offloaded_bytes = sum(offloaded[r.counted_as])
    result.ranks = list(counts.ranks)
    notes = [*source.notes, *sharder.notices]
    notes += [
        f"not in the device bytes: the {what} (vLLM allocates it at load; its size is not modelled)"
        for what in counts.not_counted
    ]
    # A GPU deployment's bytes are timed where they live: the device-resident part on the device (where it is
    # here), the host-resident part (CPU-offloaded tables) on this host's CPU, each with its share of the budget.
    split = own is not None and target_kind == "cuda" and any(r.offloaded_bytes for r in result.ranks)
    host_s = _host_share(result, own.time_budget) if own is not None and split and here else 0.0
    if own is not None and here:
        notes += _fill_shards(result, source, sharder, coords, own, progress, own.time_budget - host_s, split=split)
    if own is not None and split:
        _fill_host(result, sharder, coords, own, strategies, clock, host_s or own.time_budget)
    if own is not None and own.nproc:
        _real_ranks(result, own, strategies)
    _slowest(result)
    _node_view(result, offloaded, options)
    if own is not None and quant_plan is not None:
        result.online_quant = online_quant_entries(quant_plan, own)
        result.online_quant_target = quant_target
    results = Results(command="deployment", environment=collect_environment(device), deployment=result)
    results.notices.extend(dict.fromkeys(notes))
    check_possible(results)  # an impossible figure is a bug caught here, never shown
    return results


def _fill_shards(
    result: DeploymentResult,
    source: ModelSource,
    sharder: Sharder,
    coords: dict[int, RankCoord],
    options: CompareOptions,
    progress: Progress | None,
    budget_s: float,
    *,
    split: bool = False,
) -> list[str]:
    """compare on each distinct shard, the largest first: measured where it fits, projected where not; ``split``:
    the device-resident part of each (its host-resident tables are timed on the host, ``_fill_host``)."""
    walked = [r for r in result.ranks if r.counted_as == r.rank]  # each distinct shard's first rank walked it
    distinct = sorted(walked, key=lambda r: (-r.held_bytes, r.rank))
    filled = distinct[:MAX_FILLED_SHARDS]
    share = budget_s / len(filled)
    single = dataclasses.replace(
        options, tp=1, ep=1, pp=1, dp=1, ranks_per_node=None, online_quant=None, nproc=None, time_budget=share
    )
    notes: list[str] = []
    memset: list[float] = []
    busy: list[Contention] = []
    fresh: list[float] = []  # each shard's fresh-page budget, where its own was short
    for rank in filled:
        nbytes = rank.held_bytes - rank.offloaded_bytes if split else rank.held_bytes
        shard = shard_source(source, sharder, coords[rank.rank], nbytes, layout_text(result), split=split)
        run = measure(single, source=shard, progress=progress)
        assert run.compare is not None
        notes += run.notices
        part: CompareResult = run.compare
        by_name = {x.name: x for x in part.strategies}
        if part.size.memset_bytes_per_s:
            memset.append(part.size.memset_bytes_per_s)
        busy += [c for c in (part.size.contention, part.contention) if c is not None]
        fresh += [part.size.fresh_budget_s] if part.size.fresh_budget_s is not None else []  # projected shards
        for entry in result.ranks:
            if entry.counted_as != rank.counted_as:
                continue
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
                s.rank_seconds = mine[s.strategy]["seconds"]
                s.rank_visits = mine[s.strategy]["visits"]
                s.rank_bytes_written = mine[s.strategy]["bytes_written"]


def deployment_fresh_budget(shard_s: float, shards: int, time_budget_s: float, shards_s: float) -> float:
    """The --time-budget whose shards' share gives each filled shard ``shard_s``: the shards share ``shards_s`` of
    ``time_budget_s`` (the host-resident part takes the rest, in proportion to the budget: ``_host_share``)."""
    return shards * shard_s * time_budget_s / shards_s


def _host_share(result: DeploymentResult, budget_s: float) -> float:
    """The host-resident part's share of the time budget where the device part is filled too: by bytes, each side
    at least a fifth."""
    walked = [r for r in result.ranks if r.counted_as == r.rank]
    host, held = sum(r.offloaded_bytes for r in walked), sum(r.held_bytes for r in walked)
    return budget_s * min(0.8, max(0.2, host / held if held else 0.0))


def _fill_host_tables(
    tables: list[tuple[str, torch.Size, torch.dtype, float]], clock: Clock, *, pinned: bool = False
) -> float:
    """Allocate the tables in fresh host memory (pinned where CUDA is present, as vLLM pins offloaded tables;
    pageable otherwise) and fill each with its declared value: the seconds it took."""
    made = [torch.empty(shape, dtype=dtype, pin_memory=pinned) for _, shape, dtype, _ in tables]
    t0 = clock()
    for tensor, (_, _, _, value) in zip(made, tables, strict=True):
        tensor.fill_(value)
    return clock() - t0


def _fill_host(
    result: DeploymentResult,
    sharder: Sharder,
    coords: dict[int, RankCoord],
    options: CompareOptions,
    strategies: list[str],
    clock: Clock,
    budget_s: float,
) -> None:
    """A GPU deployment's host-resident bytes (CPU-offloaded tables), timed on this host's CPU (pinned memory where
    CUDA is present, ``pinned_host_memory``), with or without the device-resident rest timed on the device.

    Each distinct shard's offloaded tables (the largest first, at most ``MAX_FILLED_SHARDS``, the time budget
    shared) are filled for real in fresh host memory where they fit ``--max-memory`` and a probe predicts they
    fit the budget (the median of up to ``--repeat`` rounds), projected from the probe otherwise (its fastest
    quartile, the interval from its fastest to its slowest trial). Each strategy's exact visits and bytes of
    those tables are counted on the shard; a strategy that writes them more than once is scaled by its bytes
    (projected). The device-resident rest stays not timed.
    """
    walked = [r for r in result.ranks if r.counted_as == r.rank and r.offloaded_bytes]
    distinct = sorted(walked, key=lambda r: (-r.offloaded_bytes, r.rank))[:MAX_FILLED_SHARDS]
    share = budget_s / len(distinct)
    pinned = pinned_host_memory()
    room = host_budget(options.max_memory)
    window = contention.Window(clock=clock)
    for rank in distinct:
        shard = sharder.build(coords[rank.rank])
        tables = _host_tables(shard)
        names = {name for name, *_ in tables}
        nbytes = rank.offloaded_bytes
        probe = min(nbytes, HOST_PROBE_BYTES)
        with window.measure():
            trials = [
                _fill_host_tables([("probe", torch.Size([probe]), torch.uint8, 1.0)], clock, pinned=pinned)
                for _ in range(HOST_PROBE_TRIALS)
            ]
            rates = [probe / max(t, 1e-9) for t in trials]
            rate = probe / max(capability(trials), 1e-9)
            samples: list[float] = []
            if nbytes <= room and nbytes / rate <= share:
                start = clock()
                for _ in range(max(1, options.repeat)):
                    samples.append(_fill_host_tables(tables, clock, pinned=pinned))
                    if clock() - start + samples[-1] > share:
                        break
        counted = {}
        for name in strategies:
            records = count_on_meta(shard.module, get_strategy(name)).recorder.records.values()
            mine = [x for x in records if names & set(x.names)]
            counted[name] = (sum(x.visits for x in mine), sum(x.bytes_written for x in mine))
        median = statistics.median(samples) if samples else None
        for entry in result.ranks:
            if entry.counted_as != rank.counted_as:
                continue
            for s in entry.strategies:
                visits, written = counted.get(s.strategy, (0, 0))
                scale = written / nbytes
                if median is not None:
                    s.host = HostFill(visits, written, MEASURED if written == nbytes else PROJECTED, median * scale)
                    s.host.samples_s = [x * scale for x in samples]
                else:
                    s.host = HostFill(visits, written, PROJECTED, written / rate)
                    s.host.low_s, s.host.high_s = written / max(rates), written / min(rates)
                s.host.pinned = pinned
    result.host_contention = window.result()
