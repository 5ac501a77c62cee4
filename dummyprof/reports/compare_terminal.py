"""Terminal (Rich) rendering of ``compare`` results."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from dummyprof.reports.compare_sizing import (
    Noted,
    calibration_line,
    calibration_table,
    projected_time_table,
    projected_work_table,
    projection_check_table,
    size_lines,
)
from dummyprof.reports.format import (
    GENERATOR_BOUND_WHY,
    figure_bytes,
    format_bytes,
    format_seconds,
    range_cell,
    rate,
    short_dtype,
)
from dummyprof.reports.narrow import narrow_table, number_columns
from dummyprof.reports.noise_words import interval_cell, noise_lines, speedup_cell, spread_cell
from dummyprof.results.common import Figure
from dummyprof.results.compare import CompareResult, StrategyResult
from dummyprof.results.session import Results

TOP_TENSORS = 10
NAME_WIDTH = 48


def _table(title: str, **kwargs: object) -> Table:
    """Tables sized for 80 columns: no outer edge, short headers; a cell that must wrap folds (never '…')."""
    return narrow_table(title, **kwargs)


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """Fold runs of a repeated path segment (``child0×12``) and keep the end of what is still too long.

    The JSON output keeps full names; this is only for reading a terminal.
    """
    parts: list[str] = []
    run = 0
    segments = name.split(".")
    for i, segment in enumerate(segments):
        run += 1
        if i + 1 < len(segments) and segments[i + 1] == segment:
            continue
        parts.append(f"{segment}×{run}" if run >= 3 else ".".join([segment] * run))
        run = 0
    folded = ".".join(parts)
    return folded if len(folded) <= width else "…" + folded[-(width - 1) :]


def _numbers(table: Table, *headers: str) -> None:
    number_columns(table, *headers)


def scenario_table(result: CompareResult) -> Table:
    model = result.model
    table = _table("Scenario", show_header=False)
    table.add_column("what", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_row("model", model.description or model.source)
    for key in ("depth", "width", "hidden", "dtype"):
        if key in model.options:
            table.add_row(key, str(model.options[key]))
    table.add_row("device", model.device)
    table.add_row("modules", f"{model.modules:,}")
    table.add_row("tensors", f"{model.tensors:,} storages ({model.names:,} registered names)")
    table.add_row("bytes", format_bytes(model.bytes))
    if result.size.mode == "projected":
        table.add_row("rounds", "none at full size (projected)")
    else:
        table.add_row("rounds", f"{result.repeat} measured, interleaved, after {result.warmup} warm-up")
    return table


def strategy_table(result: CompareResult) -> Table:
    """Times: median, spread, range, speedup and its interval (about 75 columns)."""
    table = _table(f"Strategies: time (speedup vs {result.baseline_strategy}, 95% bootstrap interval)")
    table.add_column("strategy", style="bold", overflow="fold")
    _numbers(table, "median", "CV", "min–max", "speedup", "interval")
    for s in result.strategies:
        table.add_row(
            s.name,
            format_seconds(s.timing.median),
            spread_cell(s.timing),
            range_cell(s.timing),
            speedup_cell(result, s.name),
            interval_cell(result, s.name),
        )
    return table


def work_table(result: CompareResult) -> Table:
    """What each strategy did: visits, bytes, rate against this run's memset floor (about 75 columns)."""
    table = _table("Strategies: work")
    table.add_column("strategy", style="bold", overflow="fold")
    table.add_column("init", no_wrap=True)
    _numbers(table, "visits", "redund.", "max/t", "written", "rate", "%memset")
    for s in result.strategies:
        redundant = f"[red]{s.redundant_visits:,}[/]" if s.redundant_visits else "0"
        table.add_row(
            s.name,
            s.initializer,
            f"{s.visits:,}",
            redundant,
            str(s.max_visits),
            format_bytes(s.bytes_written),
            rate(s.bytes_written, s.timing.median),
            floor_share_cell(result, s.name),
        )
    notes = ["redund.: visits beyond the first; max/t: most visits of one tensor"]
    floor = floor_words(result)
    if floor:
        notes.append(f"%memset: {floor}")
    table.caption = "; ".join(notes)
    table.caption_justify = "left"
    return table


def top_tensor_table(result: CompareResult, limit: int = TOP_TENSORS) -> Table | None:
    names = [s.name for s in result.strategies]
    ranked = sorted(
        result.tensors.items(),
        key=lambda item: (-max((item[1].redundant(n) for n in names), default=0), -item[1].depth, item[0]),
    )
    ranked = [(k, t) for k, t in ranked if any(t.redundant(n) for n in names)][:limit]
    if not ranked:
        return None
    table = _table(f"Most revisited tensors (top {len(ranked)}; visits per strategy)")
    table.add_column("tensor", overflow="fold")  # a long name folds onto the next line, never cut
    _numbers(table, "depth")
    table.add_column("dtype", no_wrap=True)
    _numbers(table, "bytes", *names)
    for key, t in ranked:
        label = short_name(key, width=10_000)  # fold repeats; the column folds what is still long
        if len(t.names) > 1:
            label += f" (+{len(t.names) - 1} name{'s' if len(t.names) > 2 else ''})"
        table.add_row(
            label,
            str(t.depth),
            short_dtype(t.dtype),
            format_bytes(t.nbytes),
            *[(f"[red]{t.visits.get(n, 0)}[/]" if t.visits.get(n, 0) > 1 else str(t.visits.get(n, 0))) for n in names],
        )
    return table


def _same_unavailable(figures: list[Figure]) -> str | None:
    """The shared reason when a figure is unavailable for every strategy, else None."""
    reasons = {f.unavailable for f in figures}
    if all(f.value is None for f in figures) and len(reasons) == 1:
        return next(iter(reasons)) or "unavailable"
    return None


def memory_table(result: CompareResult) -> tuple[Table, list[str]]:
    """The memory table, plus one line per column that is unavailable everywhere (instead of the column)."""
    columns: list[tuple[str, Callable[[StrategyResult], Figure]]] = [
        ("pinned host", lambda s: s.memory.pinned_bytes),
        ("GPU used (NVML)", lambda s: s.memory.gpu_used_bytes),
        ("GPU allocator peak", lambda s: s.memory.gpu_allocator_peak_bytes),
    ]
    shown, missing = [], []
    for title, get in columns:
        reason = _same_unavailable([get(s) for s in result.strategies])
        if reason is None:
            shown.append((title, get))
        else:
            missing.append(f"{title}: unavailable: {reason}")
    table = _table("Memory (worst measured round; growth: during the fill; scratch: largest temporary)")
    table.add_column("strategy", style="bold", overflow="fold")
    _numbers(table, "RSS before", "RSS peak", "growth", "scratch")
    for title, _ in shown:
        table.add_column(title, justify="right", overflow="fold")  # at most three; each wraps on its words
    for s in result.strategies:
        m = s.memory
        table.add_row(
            s.name,
            format_bytes(m.rss_before_bytes),
            format_bytes(m.rss_peak_bytes),
            format_bytes(m.rss_growth_bytes),
            format_bytes(s.peak_scratch_bytes),
            *[figure_bytes(get(s)) for _, get in shown],
        )
    return table, missing


def overhead_line(result: CompareResult) -> str | None:
    parts = []
    for s in result.strategies:
        if s.recording_overhead_s is None or not s.timing.median:
            continue
        share = 100 * s.recording_overhead_s / s.timing.median
        parts.append(f"{s.name} {format_seconds(s.recording_overhead_s)} ({share:.2f}% of its fill)")
    return "visit recording cost (no-op fill, measured): " + ", ".join(parts) if parts else None


def floor_share_text(result: CompareResult, name: str) -> str:
    """A strategy's rate as a share of the memset floor, plain text (Markdown uses it as it is)."""
    share = result.share_of_floor(name)
    if share is None:
        return "n/a"
    if share > 1.0:
        return "over!"  # faster than the floor cannot be: flagged (a faster-than-floor warning says why)
    return f"{100 * share:.1f}%" if share < 0.1 else f"{100 * share:.0f}%"


def floor_share_cell(result: CompareResult, name: str) -> str:
    text = floor_share_text(result, name)
    return f"[yellow]{text}[/]" if result.generator_bound(name) else text


def floor_words(result: CompareResult) -> str | None:
    """What the memset floor was in this run, for the line under a table; None when it was not measured."""
    if result.floor is None or not result.floor.bytes_per_s:
        return None
    return (
        f"rate over this run's memset floor ({result.floor.bytes_per_s / 1e9:.2f} GB/s: "
        f"{format_bytes(result.floor.bytes_written)} of fresh storages zeroed once, fastest of "
        f"{len(result.floor.timing.samples_s)} readings interleaved with the fills)"
    )


def roofline_line(result: CompareResult) -> str | None:
    """One line naming the strategies far under the floor, and why (words shared with engram)."""
    flagged = [s.name for s in result.strategies if result.generator_bound(s.name)]
    if not flagged:
        return None
    shares = ", ".join(f"{name} {100 * (result.share_of_floor(name) or 0):.1f}%" for name in flagged)
    return f"roofline: {shares} of memset: {GENERATOR_BOUND_WHY}"


def _print(console: Console, noted: Noted | None) -> None:
    """A table, then its notes on one dim line at the console's full width (a caption wraps at the table's)."""
    if noted is None:
        return
    table, notes = noted
    console.print(table)
    if notes:
        console.print("; ".join(notes), style="dim")


def render_compare(results: Results, console: Console) -> None:
    result = results.compare
    assert result is not None
    console.print(scenario_table(result))
    for line in size_lines(result):
        console.print(line, style="bold yellow" if "PROJECTED" in line else "dim")
    projected = result.size.mode == "projected"
    if projected:
        _print(console, projected_time_table(result))
        _print(console, projected_work_table(result))
    else:
        console.print(strategy_table(result))
        for line in noise_lines(result):
            console.print(line, style="yellow")
        console.print(work_table(result))
    top = top_tensor_table(result)
    if top is not None:
        console.print(top)
    if not projected:
        table, missing = memory_table(result)
        console.print(table)
        for line in missing:
            console.print(line, style="dim")
        roofline = roofline_line(result)
        if roofline:
            console.print(roofline)
        if any(s.projection is not None for s in result.strategies):
            _print(console, projection_check_table(result))
    _print(console, calibration_table(result))
    calibrated = calibration_line(result)
    if calibrated:
        console.print(calibrated, style="dim")
    overhead = overhead_line(result)
    if overhead:
        console.print(overhead, style="dim")
    if result.model.notes:
        for note in result.model.notes:
            console.print(f"note: {note}", style="yellow")
