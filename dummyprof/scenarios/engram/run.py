"""The ``engram`` scenario: one rank's Engram tables, each fp8 fill method, measured or projected.

Size every method against the memory budget (nothing allocated yet), calibrate on a small probe, measure in
full what fits both budgets, sample the rest at sizes that fit and project it; never allocate past the budget.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch

from dummyprof.allocation.backings import Backing, resolve_backing
from dummyprof.errors import DoesNotFitError
from dummyprof.loaders import random_fast
from dummyprof.loaders.fp8_methods import RANDOM_FAST, FillMethod
from dummyprof.measure import contention, engine
from dummyprof.measure.device import resolve_device
from dummyprof.measure.environment import collect_environment
from dummyprof.models.engram import EngramSpec
from dummyprof.noise import spread
from dummyprof.results import verdict
from dummyprof.results.common import Estimate, MemoryUse, copied
from dummyprof.results.engram import (
    DRY_RUN,
    FITS,
    FOR_MEMORY,
    NO_HUGE_PAGES_ASKED,
    NO_RESERVED_FIGURE,
    NOT_ALLOCATED,
    NOT_ALLOCATED_COMPUTED,
    PLANNED,
    PROJECTED,
    BackingInfo,
    Budget,
    EngramLayout,
    EngramResult,
    MethodResult,
)
from dummyprof.results.session import Results
from dummyprof.scenarios.engram.options import EngramOptions, validate
from dummyprof.scenarios.engram.plan import (
    PRE_PROBE_SHARE,
    build_layout,
    call_costs,
    least_seconds,
    memory_budget,
    needed_bytes,
    plan_samples,
    probe_rows,
    time_plan,
)
from dummyprof.scenarios.engram.runner import (
    NO_SYNC,
    Clock,
    RankSync,
    Runner,
    calibrate,
    derive,
    fresh_scratch_bytes,
    measure_full,
    measure_samples,
    project_samples,
    unallocated_device_figures,
)
from dummyprof.units import format_seconds

__all__ = ["EngramOptions", "run", "validate"]

Progress = Callable[[int, int, str], None]


def _method_result(
    method: FillMethod, spec: EngramSpec, layout: EngramLayout, need: int, fits: bool, chunk: int
) -> MethodResult:
    return copied(
        MethodResult,
        method,  # name, origin, description
        fits_in_memory=fits,
        needed_bytes=need,
        peak_scratch_bytes=method.scratch_bytes(layout.part_rows * spec.dim, chunk),
        bytes_written=spec.tables * method.bytes_written(layout.weight_bytes_per_table, layout.scale_bytes_per_table),
    )


def run(
    options: EngramOptions,
    *,
    clock: Clock = time.perf_counter,
    progress: Progress | None = None,
    sync: RankSync = NO_SYNC,
) -> Results:
    """Validate, plan, measure (or project); ``sync`` keeps a multi-rank run's ranks in step on rank 0's plan."""
    started = clock()
    methods = validate(options)
    spec = options.spec()
    device, backing = placement(options)
    memory = memory_budget(options, backing, device)
    budget = memory.memory_bytes
    results, fits = _sized(options, methods, device, backing, memory)
    result = results.engram
    assert result is not None
    layout = result.layout
    if options.dry_run:
        _dry_run(result)
        return results

    runner = Runner(spec, backing, device, options.chunk_elements, clock, sync)
    busy = contention.read()  # how busy the machine is while this run calibrates, fills and samples
    probe = probe_rows(spec, methods, budget, backing, options.chunk_elements, memory.limit)
    _refuse_a_budget_too_short(runner, methods, fits, probe, options, lambda: clock() - started, sync)
    rate = calibrate(runner, methods, probe)
    plan = time_plan(spec, methods, fits, rate, options, options.time_budget_s - (clock() - started))
    plan = sync.broadcast("plan", plan)
    for projected in plan.projected:
        entry = result.method(projected.name)
        entry.mode, entry.reason = PROJECTED, plan.reasons[projected.name]
        entry.one_fill_s = plan.one_fill_s.get(projected.name)
    total = 1 + sum(plan.full_rounds.values())  # grows once the samples are planned
    done = 0

    def step(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, label)

    step(f"calibrated on {probe:,} rows")
    if plan.full:
        measure_full(runner, plan, result, step)
        # First touch of many GiB can be far slower than on the probe (page reclaim); trust the full figure.
        for phase in result.phases:
            if phase.time.value is not None:
                rate[phase.name] = max(rate[phase.name], phase.time.value / max(1, result.layout.part_rows))
    if plan.projected:
        time_left = options.time_budget_s - (clock() - started)
        # The full size maps its larger temporaries afresh, which the samples do not: a probe prices the pages.
        weights = layout.part_rows * spec.dim
        fresh = max(fresh_scratch_bytes(m, weights, options.chunk_elements, spec.tables) for m in plan.projected)
        probe_s = engine.probe_seconds(fresh, device, time_left)
        sampled = plan_samples(spec, plan, methods, rate, options, time_left - probe_s, budget, backing, memory.limit)
        plan.sample_groups = sync.broadcast("plan", plan.sample_groups)  # rank 0's sizes: the same steps on all
        total += sum(group.steps for group in plan.sample_groups)
        deadline = started + options.time_budget_s - probe_s
        floors = engine.Floors()
        spent = options.time_budget_s - time_left  # the probe's share is of the time left; its advice, of the budget
        with engine.measuring(
            floors, device, fresh_bytes=fresh, memory_bytes=budget, time_budget_s=time_left, spent_s=spent, clock=clock
        ):
            phases = measure_samples(runner, plan, result, sampled, step, deadline=deadline)
        result.first_touch = floors.pages
        project_samples(result, sampled, phases, floors.pages)
    if not plan.full:
        result.gpu = unallocated_device_figures(device)
    machine = contention.between(busy, contention.read())
    for timed in [*(p.time for p in result.phases), *(m.time for m in result.methods)]:
        timed.contention = machine
    derive(result)
    result.rounds_measured = plan.rounds
    result.rounds_cut = plan.rounds_cut
    result.run_peak_rss_bytes = runner.run_peak or None
    return results


def _sized(
    options: EngramOptions, methods: list[FillMethod], device: torch.device, backing: Backing, memory: Budget
) -> tuple[Results, dict[str, bool]]:
    """The results before anything is allocated: the layout, each method's need against the memory budget (and
    whether it fits), the environment and the backing's notice."""
    spec = options.spec()
    layout = build_layout(spec, backing)
    needs = {m.name: needed_bytes(spec, layout.part_rows, m, backing, options.chunk_elements) for m in methods}
    fits = {name: verdict.fits(need, memory.memory_bytes) for name, need in needs.items()}
    result = EngramResult(
        layout=layout,
        backing=_backing_info(backing),
        budget=memory,
        repeat=options.repeat,
        chunk_elements=options.chunk_elements,
        dry_run=options.dry_run,
        methods=[_method_result(m, spec, layout, needs[m.name], fits[m.name], options.chunk_elements) for m in methods],
    )
    fast_engine = random_fast.default_engine() if any(m.name == RANDOM_FAST for m in methods) else ""
    results = Results(
        command="engram", environment=collect_environment(device, random_fast_engine=fast_engine), engram=result
    )
    if backing.used != backing.requested and backing.requested != "device":
        results.notices.append(backing.note)
    return results, fits


def _refuse_a_budget_too_short(
    runner: Runner,
    methods: list[FillMethod],
    fits: dict[str, bool],
    probe: int,
    options: EngramOptions,
    elapsed: Callable[[], float],
    sync: RankSync,
) -> None:
    """Refuse, before the calibration probe, a --time-budget that cannot hold the least this run measures.

    Two pre-probes (1/64 of the probe's rows, then twice that) give each call a fixed cost and a cost per row;
    the probe and the first three sample sizes of each group to project (at one row: their fixed costs), on top
    of what has run, must fit the budget. The pre-probes fit small tables in the cache, so they predict low, if
    anything: a budget is refused only where even that prediction overruns it.
    """
    small = max(1, probe // PRE_PROBE_SHARE)
    once, twice = calibrate(runner, methods, small), calibrate(runner, methods, 2 * small)
    low, high = call_costs(once, twice, small), call_costs(once, twice, small, dearer=True)
    probe_s, sampling_s = least_seconds(low, methods, fits, probe, options.repeat)
    spent = elapsed()
    least = sync.broadcast("least", spent + probe_s + sampling_s)  # rank 0's verdict, the same on every rank
    # The offer carries the noise these pre-probes measured (the lower figure above is for refusing only): each call
    # from its dearer reading, and all of it times the spread of the two figures of the whole least run, as far as a
    # run meeting the noise at another moment may read above this one. Not the widest spread of one call's: a call
    # of a millisecond read 35x apart on a busy machine would multiply the whole run by 35.
    dearer = sum(least_seconds(high, methods, fits, probe, options.repeat))
    margin = spread((probe_s + sampling_s, dearer))
    offer = sync.broadcast("offer", math.ceil(max(least, (spent + dearer) * margin)))
    if least > options.time_budget_s:
        projects = (
            f" and three sample sizes per group it projects (~{format_seconds(sampling_s)})" if sampling_s else ""
        )
        raise DoesNotFitError.for_field(
            "time_budget_s",
            f"{format_seconds(options.time_budget_s)} cannot hold the least this run measures: the calibration "
            f"probe on {probe:,} rows (~{format_seconds(probe_s)} predicted from smaller probes on this machine "
            f"now){projects}, after "
            f"{format_seconds(least - probe_s - sampling_s)} spent on set-up and those probes; raise --time-budget to "
            f"{offer} s or more",
        )


def placement(options: EngramOptions) -> tuple[torch.device, Backing]:
    """Where the tables live: the device (the CPU with offload) and the backing memory."""
    device = resolve_device(options.device) if not options.offload else torch.device("cpu")
    return device, resolve_backing(options.backing or "pinned", offload=options.offload, device=device)


def _backing_info(backing: Backing) -> BackingInfo:
    """Measured figures unavailable, with the reason, until a full-size allocation fills them in."""
    if backing.caching_host_allocator:
        reserved = Estimate.missing(NOT_ALLOCATED_COMPUTED)
    else:
        reserved = Estimate.missing(f"{NO_RESERVED_FIGURE}:{backing.used}")
    huge = Estimate.missing(NOT_ALLOCATED if backing.used == "hugepages" else f"{NO_HUGE_PAGES_ASKED}:{backing.used}")
    return copied(
        BackingInfo, backing, rounding=backing.rounding, reserved_measured_bytes=reserved, huge_page_bytes=huge
    )


def _dry_run(result: EngramResult) -> None:
    nothing = Estimate.missing(DRY_RUN)
    result.gpu = MemoryUse(pinned_bytes=nothing, gpu_used_bytes=nothing, gpu_allocator_peak_bytes=nothing)
    for m in result.methods:
        m.mode = PLANNED
        m.peak_rss_bytes, m.time = Estimate.missing(DRY_RUN), Estimate.missing(DRY_RUN)
        m.reason = FITS if m.fits_in_memory else FOR_MEMORY
