"""The ``engram`` scenario: one rank's Engram tables, each fp8 fill method, measured or projected.

Order of work: validate, size every method per rank, compare with the memory
budget (nothing allocated yet), calibrate on a small probe to estimate time,
measure in full what fits both budgets, sample the rest at sizes that fit and
project it to full size. Nothing larger than the budget is ever allocated.

Planning lives in ``plan``, measurement in ``runner``; this module holds the options,
their validation, the run that ties the steps together, and the summary line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from dummyprof.errors import UsageError
from dummyprof.loaders.fp8_methods import DEFAULT_CHUNK_ELEMENTS, DEFAULT_METHODS, FLOOR, FillMethod, get_method
from dummyprof.measure.device import resolve_device
from dummyprof.measure.environment import collect_environment
from dummyprof.models.backings import BACKINGS, Backing, resolve_backing
from dummyprof.models.engram import EngramSpec, validate_engram_spec
from dummyprof.results.common import Figure, MemoryUse
from dummyprof.results.engram import PLANNED, PROJECTED, BackingInfo, Budget, EngramLayout, EngramResult, MethodResult
from dummyprof.results.session import Results
from dummyprof.scenarios.engram.plan import (
    ALLOCATE,
    FIRST_TOUCH,
    build_layout,
    memory_budget,
    memory_plan,
    needed_bytes,
    plan_samples,
    probe_rows,
    reserved_tables,
    time_plan,
)
from dummyprof.scenarios.engram.runner import (
    Clock,
    Runner,
    calibrate,
    derive,
    measure_full,
    measure_samples,
    unallocated_device_figures,
)
from dummyprof.units import format_bytes, format_seconds

__all__ = [
    "ALLOCATE",
    "DEFAULT_REPEAT",
    "DEFAULT_TIME_BUDGET_S",
    "FIRST_TOUCH",
    "EngramOptions",
    "build_layout",
    "memory_budget",
    "needed_bytes",
    "reserved_tables",
    "run",
    "summary_line",
    "validate_options",
]

Progress = Callable[[int, int, str], None]

DEFAULT_TIME_BUDGET_S = 40.0
DEFAULT_REPEAT = 3


@dataclass
class EngramOptions:
    """Plain data (the CI gate builds it from TOML); sizes are per deployment, the run builds one rank."""

    rows: int = 384_000_000
    dim: int = 256
    block_size: int = 32
    tables: int = 1
    tp_size: int = 1
    dp_size: int = 1
    rank: int = 0
    heads: int | None = None
    offload: bool = False
    backing: str | None = None  # pinned (default with --offload), pageable, hugepages or shm
    device: str = "auto"
    methods: list[str] = field(default_factory=lambda: list(DEFAULT_METHODS))
    repeat: int = DEFAULT_REPEAT
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS
    max_memory: int | None = None
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    deadline_s: float | None = None
    dry_run: bool = False

    def spec(self) -> EngramSpec:
        return EngramSpec(
            rows=self.rows,
            dim=self.dim,
            block_size=self.block_size,
            tables=self.tables,
            tp_size=self.tp_size,
            dp_size=self.dp_size,
            rank=self.rank,
            heads=self.heads,
        )


# --- validation -------------------------------------------------------------------------------------


def validate_options(options: EngramOptions) -> list[FillMethod]:
    validate_engram_spec(options.spec())
    if options.backing is not None:
        if options.backing not in BACKINGS:
            raise UsageError("--backing", f"unknown backing {options.backing!r}; choose from: {', '.join(BACKINGS)}")
        if not options.offload:
            raise UsageError(
                "--backing", "host memory kinds only apply with --offload; add --offload or drop --backing"
            )
    if options.repeat < 1:
        raise UsageError("--repeat", f"must be at least 1, got {options.repeat}; try --repeat 3")
    if options.chunk_elements < 1:
        raise UsageError("--chunk-elements", f"must be at least 1, got {options.chunk_elements}; try 64Mi")
    if not options.time_budget_s > 0 or not math.isfinite(options.time_budget_s):
        raise UsageError("--time-budget", f"must be a positive number of seconds, got {options.time_budget_s}")
    if options.deadline_s is not None and not options.deadline_s > 0:
        raise UsageError("--deadline", f"must be a positive number of seconds, got {options.deadline_s}")
    if options.max_memory is not None and options.max_memory < 1:
        raise UsageError("--max-memory", f"must be positive, got {options.max_memory}")
    if not options.methods:
        raise UsageError("--method", f"give at least one method; choose from: {', '.join(DEFAULT_METHODS)}")
    methods: list[FillMethod] = []
    for name in options.methods:
        method = get_method(name)
        if method in methods:
            raise UsageError("--method", f"{name!r} is listed twice")
        methods.append(method)
    if all(m.name != FLOOR for m in methods):
        methods.append(get_method(FLOOR))  # every run measures its own floor
    return methods


# --- the run ---------------------------------------------------------------------------------------


def _method_result(
    method: FillMethod, spec: EngramSpec, layout: EngramLayout, need: int, fits: bool, chunk: int
) -> MethodResult:
    return MethodResult(
        name=method.name,
        origin=method.origin,
        description=method.description,
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
) -> Results:
    """Validate, plan, measure (or project) and return the engram Results."""
    started = clock()
    methods = validate_options(options)
    spec = options.spec()
    device = resolve_device(options.device) if not options.offload else torch.device("cpu")
    backing = resolve_backing(options.backing or "pinned", offload=options.offload, device=device)
    layout = build_layout(spec, backing)
    budget, source = memory_budget(options, backing, device)
    needs, fits = memory_plan(spec, methods, backing, budget, options.chunk_elements)
    result = EngramResult(
        layout=layout,
        backing=_backing_info(backing),
        budget=Budget(budget, source, options.time_budget_s, options.deadline_s),
        repeat=options.repeat,
        chunk_elements=options.chunk_elements,
        dry_run=options.dry_run,
        methods=[_method_result(m, spec, layout, needs[m.name], fits[m.name], options.chunk_elements) for m in methods],
    )
    results = Results(command="engram", environment=collect_environment(device), engram=result)
    if backing.used != backing.requested and backing.requested != "device":
        results.notices.append(backing.note)
    if options.dry_run:
        _dry_run(result)
        results.summary = summary_line(result)
        return results

    runner = Runner(spec, backing, device, options.chunk_elements, clock)
    probe = probe_rows(spec, methods, budget, backing, options.chunk_elements)
    calibration = calibrate(runner, methods, probe)
    plan = time_plan(
        spec, methods, fits, calibration, options, options.time_budget_s - (clock() - started), budget, backing
    )
    for projected in plan.projected:
        entry = result.method(projected.name)
        entry.mode, entry.reason = PROJECTED, plan.reasons[projected.name]
    total_steps = [1 + sum(plan.full_rounds.values())]
    done = [1]

    def step(label: str) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total_steps[0], label)

    if progress is not None:
        progress(1, total_steps[0], f"calibrated on {probe:,} rows")
    rate = dict(calibration.seconds_per_row)
    if plan.full:
        measure_full(runner, plan, result, step)
        # First touch of many GiB can be far slower than on the probe (page reclaim); trust the full figure.
        for phase in result.phases:
            if phase.seconds.value is not None:
                rate[phase.name] = max(rate[phase.name], phase.seconds.value / max(1, result.layout.part_rows))
    if plan.projected:
        time_left = options.time_budget_s - (clock() - started)
        sampled = plan_samples(spec, plan, methods, rate, options, time_left, budget, backing)
        total_steps[0] += sum(group.steps for group in plan.sample_groups)
        measure_samples(runner, plan, result, sampled, step)
    if not plan.full:
        result.gpu = unallocated_device_figures(device)
    derive(result)
    result.rounds_measured = plan.rounds
    result.plan_notes.extend(plan.notes)
    result.run_peak_rss_bytes = runner.run_peak or None
    if backing.note and backing.used == backing.requested:
        result.plan_notes.append(backing.note)
    results.summary = summary_line(result)
    return results


def _backing_info(backing: Backing) -> BackingInfo:
    """Measured figures start as unavailable, with the reason, until a full-size allocation fills them in."""
    if backing.used == "pinned":
        reserved = Figure.missing("full tables not allocated here (see the computed figure)")
    else:
        reserved = Figure.missing(f"{backing.used} memory: only torch's CUDA pinned allocator reports reserved bytes")
    huge = Figure.missing(
        "full tables not allocated here"
        if backing.used == "hugepages"
        else f"{backing.used} memory: no huge pages asked"
    )
    return BackingInfo(
        backing.requested,
        backing.used,
        backing.device,
        backing.note,
        backing.rounding,
        reserved_measured_bytes=reserved,
        huge_page_bytes=huge,
    )


def _dry_run(result: EngramResult) -> None:
    nothing = Figure.missing("dry run: nothing allocated")
    result.gpu = MemoryUse(pinned_bytes=nothing, gpu_used_bytes=nothing, gpu_allocator_peak_bytes=nothing)
    for m in result.methods:
        m.mode = PLANNED
        m.peak_rss_bytes = m.seconds = Figure.missing("dry run: nothing allocated")
        m.reason = (
            "fits: measured in full unless the calibration at start-up says one round exceeds the time budget"
            if m.fits_in_memory
            else "does not fit in memory: will be projected from samples"
        )


def summary_line(result: EngramResult) -> str:
    parts = []
    for m in result.methods:
        if m.name == result.floor_method:
            continue
        if m.fits_in_memory:
            text = f"{m.name}: {format_bytes(m.needed_bytes)} per rank"
        else:
            text = f"{m.name}: needs {format_bytes(m.needed_bytes)} per rank, does not fit here"
        if m.startup_seconds.value is not None:
            kind = "projected" if m.startup_seconds.projected else "measured"
            text += f", {kind} start-up {format_seconds(m.startup_seconds.value)}"
            if m.over_deadline:
                text += f" (over the {format_seconds(result.budget.deadline_s)} deadline)"
        elif m.mode == PLANNED:
            text += ", measured in full" if m.fits_in_memory else ", to be projected"
        parts.append(text)
    head = "plan (dry run): " if result.dry_run else ""
    return head + "; ".join(parts)
