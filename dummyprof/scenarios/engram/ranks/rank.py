"""One rank of a multi-rank ``engram`` run (under torchrun, or started by ``run.launch_ranks``): join, check,
the single-process run on its own shard in step with the others (``RankSync``), a contention check (the same
fill one rank at a time, then all at once), and on rank 0 the gathered records and their aggregate.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import zip_longest

import msgspec
import torch

from dummyprof.errors import DummyprofError, UsageError
from dummyprof.loaders.fp8_methods import FillMethod, get_method
from dummyprof.measure.budget import DEFAULT_SHARE
from dummyprof.measure.memory import available_memory_bytes, cpu_count
from dummyprof.models.engram import shard
from dummyprof.ranks.world import (
    LaunchEnv,
    RanksFailed,
    World,
    check_ranks,
    join,
    run_checked,
)
from dummyprof.results import verdict
from dummyprof.results.common import Figure, copied
from dummyprof.results.engram import MEASURED, EngramResult
from dummyprof.results.ranks import Contention, NodeMemory, PhaseCritical, RankFill, RankRecord, RanksAggregate
from dummyprof.results.session import Results
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.engram.plan import ALLOCATE, FIRST_TOUCH
from dummyprof.scenarios.engram.run import placement, run
from dummyprof.scenarios.engram.runner import Clock, Runner
from dummyprof.units import format_bytes

Samples = dict[str, tuple[list[float], list[float]]]  # method: (alone, together) seconds
Describe = Callable[[DummyprofError], str]  # an error as the edge names it (a flag, a config key)


@dataclass
class RankOutcome:
    rank: int
    results: Results | None = None
    gathered: Results | None = None
    error: str = ""  # rank 0: the one line; other ranks: only when rank 0 could not say it
    exit_code: int = 0


def run_rank(
    env: LaunchEnv,
    prepare: Callable[[World], EngramOptions],
    *,
    backend: str,
    timeout_s: float,
    describe: Describe = str,
    names: dict[str, str] | None = None,
    report: Callable[[str], None] | None = None,
    client: bool = False,
    threads_source: str = "",
) -> RankOutcome:
    """Join, check every rank's input (``prepare``) and ``names`` (values the ranks must share), run in step; a
    failure ends every rank with one exit code, rank 0 ``report``-ing it before the others may exit."""
    world = join(env, backend, timeout_s, client=client)
    try:
        error: str | None = None
        options: EngramOptions | None = None
        try:
            options = prepare(world)
        except DummyprofError as exc:
            error = describe(exc)
        check_ranks(world, error, names or {})
        assert options is not None
        own, gathered = run_checked(world, partial(run_ranks, options, world, threads_source=threads_source), describe)
    except RanksFailed as exc:
        if world.rank == 0:
            if report is not None:
                report(str(exc))
            world.reported()
            return RankOutcome(0, error=str(exc), exit_code=exc.exit_code)
        told = exc.quiet and world.wait_reported()
        return RankOutcome(world.rank, error="" if told else str(exc), exit_code=exc.exit_code)
    finally:
        world.close()
    return RankOutcome(world.rank, results=own, gathered=gathered)


def rank_options(options: EngramOptions, world: World, available: int) -> EngramOptions:
    """This rank's options: its rank from torch.distributed, its share of the node's ``max_memory``."""
    ranks = options.layout.world
    if ranks != world.world_size:
        raise UsageError.for_field(
            "tp",
            f"tp {options.tp} x dp {options.dp} = {ranks} ranks, but torch.distributed started "
            f"{world.world_size} processes; use tp {world.world_size} (with dp 1) or start {ranks} processes",
        )
    if options.rank not in (0, world.rank):
        raise UsageError.for_field(
            "rank", f"under torch.distributed the rank comes from the launcher (this is rank {world.rank}); drop it"
        )
    node = options.max_memory if options.max_memory is not None else int(available * DEFAULT_SHARE)
    device = options.device
    if not options.offload and device == "auto" and torch.cuda.is_available():
        device = f"cuda:{world.local_rank}"
    backing = options.backing
    if backing is not None and backing.startswith("mmap:") and world.world_size > 1:
        backing = f"{backing}.rank{world.rank}"  # one file per rank: each is created exclusively
    return dataclasses.replace(
        options,
        rank=world.rank,
        max_memory=max(1, node // world.local_world_size),
        device=device,
        backing=backing,
    )


def budget_source(plan_source: str, options: EngramOptions, world: World, available: int) -> str:
    """Where this rank's budget comes from: its share of the node's (the plan saw it as ``--max-memory``)."""
    if not plan_source.startswith("--max-memory"):
        return plan_source  # bounded by /dev/shm, the disk or the GPU: the plan's words are this rank's own
    node = (
        f"--max-memory {format_bytes(options.max_memory)}"
        if options.max_memory is not None
        else f"{DEFAULT_SHARE:.0%} of {format_bytes(available)} available"
    )
    capped = plan_source[plan_source.index(",") :] if "," in plan_source else ""
    return f"per rank: {node} / {world.local_world_size} ranks{capped}"


def run_ranks(
    options: EngramOptions, world: World, *, clock: Clock = time.perf_counter, threads_source: str = ""
) -> tuple[Results, Results | None]:
    """This rank's own Results and, on rank 0, the gathered one."""
    available = available_memory_bytes()
    mine = rank_options(options, world, available)
    world.barrier("start")
    results = run(mine, clock=clock, sync=world)
    section = results.engram
    assert section is not None
    section.budget.memory_source = budget_source(section.budget.memory_source, options, world, available)
    measured = [get_method(m.name) for m in section.methods if m.mode == MEASURED]
    rounds = {m.name: len(section.method(m.name).timing.samples_s) for m in measured}
    samples = measure_contention(mine, world, measured, rounds, clock) if measured else {}
    record = rank_record(world, section, samples, available, mine.max_memory or 0)
    record.steps = list(world.steps)
    record.threads, record.cores = torch.get_num_threads(), cpu_count()
    record.threads_source = threads_source or ("OMP_NUM_THREADS" if "OMP_NUM_THREADS" in os.environ else "torch")
    records = world.gather("gather", record)
    if records is None:
        return results, None
    return results, msgspec.structs.replace(results, ranks=records, ranks_aggregate=aggregate(records, world.backend))


def measure_contention(
    options: EngramOptions, world: World, methods: Sequence[FillMethod], rounds: dict[str, int], clock: Clock
) -> Samples:
    """Fill the same shard alone (one rank at a time, the others at a barrier), then every rank at once."""
    device, backing = placement(options)
    spec = options.spec()
    runner = Runner(spec, backing, device, options.chunk_elements, clock)
    world.barrier("contention: allocate")
    tables, _ = runner.allocate(shard(spec).part_rows)
    runner.first_touch(tables)
    samples: Samples = {}
    try:
        for method in methods:
            alone: list[float] = []
            together: list[float] = []
            for _ in range(max(1, rounds[method.name])):
                for r in range(world.world_size):
                    world.barrier(f"contention: {method.name} alone on rank {r}")
                    if r == world.rank:
                        alone.append(runner.fill(method, tables).seconds)
                world.barrier(f"contention: {method.name} together")
                together.append(runner.fill(method, tables).seconds)
            samples[method.name] = (alone, together)
    finally:
        runner.release(tables)
    return samples


def _median(values: list[float], why: str) -> Figure:
    return Figure(statistics.median(values)) if values else Figure.missing(why)


def rank_record(world: World, section: EngramResult, samples: Samples, available: int, budget: int) -> RankRecord:
    lay = section.layout
    phases = {p.name: p.seconds for p in section.phases}
    why = "dry run: nothing allocated" if section.dry_run else "not measured"
    fills = []
    for m in section.methods:
        alone, together = samples.get(m.name, ([], []))
        not_checked = "dry run" if section.dry_run else f"{m.mode}: not filled at full size on every rank"
        fills.append(
            copied(
                RankFill,
                m,
                method=m.name,
                alone_s=_median(alone, not_checked),
                together_s=_median(together, not_checked),
                contention_rounds=len(together),
            )
        )
    return copied(
        RankRecord,
        world.env,  # rank, world_size, local_rank, local_world_size
        host=world.host,
        part_rows=lay.part_rows,
        table_bytes=lay.table_bytes_per_rank,
        reserved_bytes=lay.reserved_bytes_per_rank,
        reserved_measured_bytes=section.backing.reserved_measured_bytes,
        backing=section.backing.used,
        available_bytes=available,
        memory_budget_bytes=budget,
        allocate_s=phases.get(ALLOCATE, Figure.missing(why)),
        first_touch_s=phases.get(FIRST_TOUCH, Figure.missing(why)),
        fills=fills,
        peak_rss_bytes=section.run_peak_rss_bytes,
        engram=section,
    )


def _critical(phase: str, figures: list[tuple[int, Figure]]) -> PhaseCritical:
    known = [(r, f) for r, f in figures if f.value is not None]
    if not known:
        reason = next((f.unavailable for _, f in figures if f.unavailable), None) or "not measured"
        return PhaseCritical(phase, None, Figure.missing(reason), Figure.missing(reason))
    slow_rank, slow = max(known, key=lambda rf: rf[1].value or 0.0)
    _, fast = min(known, key=lambda rf: rf[1].value or 0.0)
    return PhaseCritical(phase, slow_rank, slow, fast)


def _nodes(records: Sequence[RankRecord]) -> list[NodeMemory]:
    nodes: dict[str, NodeMemory] = {}
    for rec in records:
        node = nodes.setdefault(rec.host, NodeMemory(host=rec.host, available_bytes=rec.available_bytes))
        node.ranks.append(rec.rank)
        node.available_bytes = min(node.available_bytes, rec.available_bytes)
        node.table_bytes += rec.table_bytes
        node.reserved_bytes += rec.reserved_bytes
        for f in rec.fills:
            node.needed_bytes[f.method] = node.needed_bytes.get(f.method, 0) + f.needed_bytes
    for node in nodes.values():
        peaks = [r.peak_rss_bytes for r in records if r.host == node.host]
        node.peak_rss_sum_bytes = sum(p for p in peaks if p is not None) if all(p is not None for p in peaks) else None
        node.fits = {name: verdict.fits(need, node.available_bytes) for name, need in node.needed_bytes.items()}
    return list(nodes.values())


def _contention(method: str, records: Sequence[RankRecord]) -> Contention:
    fills = [r.fill(method) for r in records]
    rounds = min(f.contention_rounds for f in fills)
    if any(f.alone_s.value is None or f.together_s.value is None for f in fills):
        why = next((f.alone_s.unavailable for f in fills if f.alone_s.unavailable), None) or "not measured"
        return Contention(method, 0, unavailable=why)
    alone = max(f.alone_s.value or 0.0 for f in fills)
    together = max(f.together_s.value or 0.0 for f in fills)
    ratio = Figure(together / alone) if alone > 0 else Figure.missing("the fill alone took no measurable time")
    return Contention(method, rounds, Figure(alone), Figure(together), ratio)


def aggregate(records: Sequence[RankRecord], backend: str) -> RanksAggregate:
    records = sorted(records, key=lambda r: r.rank)
    agg = RanksAggregate(world_size=len(records), backend=backend, nodes=_nodes(records))
    agg.critical_path = [
        _critical(ALLOCATE, [(r.rank, r.allocate_s) for r in records]),
        _critical(FIRST_TOUCH, [(r.rank, r.first_touch_s) for r in records]),
    ]
    methods = [f.method for f in records[0].fills]
    agg.critical_path += [_critical(name, [(r.rank, r.fill(name).seconds) for r in records]) for name in methods]
    agg.contention = [_contention(name, records) for name in methods]
    first = records[0].steps
    for rec in records[1:]:
        if rec.steps != first:
            agg.steps_aligned = False
            pairs = enumerate(zip_longest(rec.steps, first, fillvalue="none"), start=1)
            at, (theirs, ours) = next((i, pair) for i, pair in pairs if pair[0] != pair[1])
            agg.notes.append(f"rank {rec.rank} took other steps than rank 0 from step {at} ({theirs} vs {ours})")
    return agg
