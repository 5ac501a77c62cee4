"""Terminal rendering of how big the model was for this machine: exact counts, projected fills, calibration."""

from __future__ import annotations

from rich.table import Table

from dummyprof.reports.format import format_bytes, format_seconds, short_dtype
from dummyprof.reports.narrow import PROJECTED_MARK, PROJECTED_NOTE, narrow_table, number_columns, text_column
from dummyprof.results.compare import CompareResult

REASONS = {
    "memory": "one model plus its largest temporary does not fit the memory budget",
    "time": "the measured rounds are predicted to overrun the time budget",
    "fits": "the model fits the memory and time budgets",
    "reduced": "fewer measured rounds than --repeat asked for fit the time budget",
}


AUTO_STOPS = {
    "tight": "stopped once every speedup's 95% interval was within 5% of it",
    "budget": "stopped because one more round would overrun the time budget (intervals may still be wide)",
    "max": "stopped at the most rounds it takes",
}


def size_lines(result: CompareResult) -> list[str]:
    """What was measured and what was projected, and why: one line each."""
    size = result.size
    lines = []
    if result.counts == "exact-meta":
        lines.append(
            "counts: exact for the full model (each strategy's traversal run on the meta device; nothing allocated)"
        )
    elif result.counts == "exact":
        lines.append("counts: exact (recorded in the real fills; equal to the counting pass on the meta device)")
    need = f"needs {format_bytes(size.needed_bytes)} of {format_bytes(size.budget_bytes)} allowed"
    predicted = f", measured rounds predicted at {format_seconds(size.predicted_s)}" if size.predicted_s else ""
    budget = f" (time budget {format_seconds(size.time_budget_s)})"
    if size.mode == "projected":
        lines.append(
            f"fill times and memory: PROJECTED, not measured: {REASONS.get(size.reason, size.reason)} "
            f"({need}{predicted}{budget}); projected from calibration fills made in this run"
        )
    elif size.reason == "reduced":
        lines.append(
            f"repeats REDUCED from {result.repeats_requested} to {result.repeat} to fit the time budget: "
            f"measured rounds predicted at {format_seconds(size.predicted_s)}{budget}; raise --time-budget "
            "for all of them"
        )
    elif size.calibration:
        lines.append(f"fill times and memory: measured ({need}{predicted}{budget})")
    if result.auto_stop:
        asked = f"--repeat {result.repeats_requested}" if result.repeats_requested else "--repeat auto"
        lines.append(f"{asked}: {result.repeat} measured rounds; {AUTO_STOPS.get(result.auto_stop, result.auto_stop)}")
    return lines


# A table and the notes printed under it (one dim line: long words stay out of the cells).
Noted = tuple[Table, list[str]]

RANGE_NOTE = "range: every visit at its fastest–slowest calibration trial"
FLOOR_NOTE = "floor: its bytes at this run's memset rate (no projection is faster)"
WALK_NOTE = "walk: the traversal alone, timed on the meta model"


def _projected_seconds(seconds: float) -> str:
    return f"{PROJECTED_MARK}{format_seconds(seconds)}"


def _time_notes(result: CompareResult) -> list[str]:
    notes = [PROJECTED_NOTE, RANGE_NOTE, FLOOR_NOTE, WALK_NOTE]
    bound = [s.name for s in result.strategies if s.projection is not None and s.projection.floor_bound]
    if bound:
        notes.append(f"at the floor: {', '.join(bound)} (calibrated faster than memset)")
    return notes


def projected_time_table(result: CompareResult) -> Noted:
    """Projected mode: each strategy's time, its interval, speedup, memset floor and walk (about 70 columns)."""
    table = narrow_table(f"Strategies: projected time (speedup vs {result.baseline_strategy})")
    text_column(table, "strategy", style="bold")
    number_columns(table, "time", "range", "speedup", "floor", "walk")
    for s in result.strategies:
        p = s.projection
        if p is None:
            continue
        speedup = result.speedup(s.name)
        table.add_row(
            s.name,
            _projected_seconds(p.seconds),
            f"{format_seconds(p.low_s)}–{format_seconds(p.high_s)}",
            f"{PROJECTED_MARK}{speedup:.2f}x" if speedup is not None else "n/a",
            format_seconds(p.floor_s),
            format_seconds(p.walk_s),
        )
    return table, _time_notes(result)


def projected_work_table(result: CompareResult) -> Noted:
    """Projected mode: exact counts for the full model, and the projected peak RSS (about 70 columns)."""
    table = narrow_table("Strategies: work (exact counts, full model)")
    text_column(table, "strategy", style="bold")
    text_column(table, "init")
    number_columns(table, "visits", "redund.", "max/t", "written", "peak RSS")
    for s in result.strategies:
        p = s.projection
        if p is None:
            continue
        table.add_row(
            s.name,
            s.initializer,
            f"{s.visits:,}",
            f"[red]{s.redundant_visits:,}[/]" if s.redundant_visits else "0",
            str(s.max_visits),
            format_bytes(s.bytes_written),
            f"{PROJECTED_MARK}{format_bytes(p.peak_rss_bytes)}",
        )
    notes = [
        "redund.: visits beyond the first; max/t: most visits of one tensor",
        f"peak RSS ({PROJECTED_MARK}: projected): RSS now + the pages its writes touch + its largest temporary",
    ]
    return table, notes


def projection_check_table(result: CompareResult) -> Noted:
    """Measured mode with a calibration: the projection next to the measured median (about 70 columns)."""
    table = narrow_table("Projected vs measured")
    text_column(table, "strategy", style="bold")
    number_columns(table, "projected", "range", "measured", "floor", "walk")
    rss = []
    for s in result.strategies:
        p = s.projection
        if p is None:
            continue
        table.add_row(
            s.name,
            _projected_seconds(p.seconds),
            f"{format_seconds(p.low_s)}–{format_seconds(p.high_s)}",
            format_seconds(s.timing.median) if s.timing.samples_s else "n/a",
            format_seconds(p.floor_s),
            format_seconds(p.walk_s),
        )
        rss.append((s.name, f"{PROJECTED_MARK}{format_bytes(p.peak_rss_bytes)}"))
    notes = _time_notes(result)
    notes.insert(1, "measured: the median round (its min–max: Strategies: time)")
    if len({text for _, text in rss}) == 1:
        notes.append(f"projected peak RSS: {rss[0][1]}, every strategy (measured: the Memory table's RSS peak)")
    elif rss:
        each = ", ".join(f"{name} {text}" for name, text in rss)
        notes.append(f"projected peak RSS: {each} (measured: the Memory table's RSS peak)")
    return table, notes


def _sizes(sizes: list[int]) -> str:
    """``256.00–768.00 KiB``: the smallest and largest calibration size, the unit once when they share it."""
    if not sizes:
        return "-"
    low, high = format_bytes(sizes[0]), format_bytes(sizes[-1])
    if low == high:
        return low
    low_number, _, low_unit = low.partition(" ")
    high_number, _, high_unit = high.partition(" ")
    return f"{low_number}–{high_number} {high_unit}" if low_unit == high_unit else f"{low}–{high}"


def calibration_table(result: CompareResult) -> Noted | None:
    """One row per (initializer, rule, dtype) the visits use: sizes, trials, fitted rate, R², tiny fill."""
    size = result.size
    if not size.calibration:
        return None
    table = narrow_table("Calibration fills (fresh tensors, real initializer, this run)")
    text_column(table, "init")
    text_column(table, "rule, dtype")
    number_columns(table, "sizes", "trials", "GB/s", "R²", "tiny")
    for c in size.calibration:
        table.add_row(
            c.initializer,
            f"{c.rule} {short_dtype(c.dtype)}",
            _sizes(c.sizes_bytes),
            str(sum(len(s) for s in c.samples_s)),
            f"{1 / c.fit.slope / 1e9:.2f}" if c.fit.slope > 0 else "n/a",
            f"{c.fit.r_squared:.3f}",
            format_seconds(c.small_call_s),
        )
    notes = [
        "GB/s: the rate of a line fitted to the median trial per size (R²: of that fit)",
        "tiny: one fill of a tiny tensor, the cost of a visit before its bytes",
    ]
    return table, notes


def calibration_line(result: CompareResult) -> str | None:
    size = result.size
    if not size.calibration or size.memset_bytes_per_s is None:
        return None
    return (
        f"memset floor {size.memset_bytes_per_s / 1e9:.2f} GB/s (fill_ on touched memory, this run); "
        f"calibration took {format_seconds(size.calibration_s)}, "
        f"meta build and counting {format_seconds(size.counting_s)}"
    )
