"""Terminal (Rich) rendering of ``engram`` results: sizes per rank, phases, methods, memory."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dummyprof.reports.engram_words import (
    dominant_text,
    generator_bound_line,
    interval_text,
    projection_how,
    sample_group_note,
    startup_interval_text,
)
from dummyprof.reports.format import figure_bytes, format_bytes, format_seconds, timing_cell
from dummyprof.results.common import Figure
from dummyprof.results.engram import PLANNED, PROJECTED, EngramResult, LinearFit, MethodResult, TimeProjection
from dummyprof.results.session import Results

MAX_RANK_ROWS = 16


def _seconds(figure: Figure) -> str:
    if figure.value is None:
        return f"unavailable: {figure.unavailable}" if figure.unavailable else "n/a"
    text = format_seconds(figure.value)
    return f"{text} (projected)" if figure.projected else text


def _number(figure: Figure, fmt: str, unit: str = "") -> str:
    if figure.value is None:
        return "n/a"
    text = f"{figure.value:{fmt}}{unit}"
    return f"{text} (projected)" if figure.projected else text


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _percent(figure: Figure) -> str:
    if figure.value is None:
        return "n/a"
    return _number(figure, ".1f" if figure.value < 10 else ".0f", "%")


def _with_interval(figure: Figure, projection: TimeProjection | None) -> str:
    text = _seconds(figure)
    if projection is not None and figure.value is not None:
        text += f"\n{interval_text(projection.low_s, projection.high_s)}"
    return text


def _fit(fit: LinearFit | None) -> str:
    if fit is None:
        return ""
    through = ", through 0" if fit.model == "b x" else ""
    return f"R² {fit.r_squared:.3f}, {fit.points} sizes{through}"


def layout_table(result: EngramResult) -> Table:
    lay = result.layout
    table = Table(title="Engram tables", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    table.add_row(
        "tables", f"{lay.tables} x {lay.rows:,} rows x dim {lay.dim} (fp8 e4m3 + uint8 scale per {lay.block_size})"
    )
    table.add_row("all ranks", format_bytes(lay.total_bytes))
    table.add_row(
        "sharding",
        f"{_plural(lay.heads, 'hash head')} over {_plural(lay.tp_size * lay.dp_size, 'rank')} "
        f"(tp {lay.tp_size} x dp {lay.dp_size}), whole heads per rank",
    )
    table.add_row("this rank", f"rank {lay.rank}: {lay.part_rows:,} rows per table")
    table.add_row("requested per rank", format_bytes(lay.table_bytes_per_rank))
    b = result.backing
    reserved = format_bytes(lay.reserved_bytes_per_rank) + f" (computed: {b.rounding})"
    table.add_row("reserved per rank", reserved)
    if b.reserved_measured_bytes.available or b.used in ("pinned", "pinned-copy"):
        table.add_row("reserved, measured", figure_bytes(b.reserved_measured_bytes))
    where = f"{b.used} host memory" if b.device == "cpu" else f"device memory on {b.device}"
    if b.requested not in (b.used, "device"):
        where += f" (asked for {b.requested})"
    table.add_row("memory", where)
    if b.used == "hugepages" or b.huge_page_bytes.available:
        table.add_row("huge-page backed", figure_bytes(b.huge_page_bytes))
    table.add_row("pinned allocator", figure_bytes(result.gpu.pinned_bytes))
    table.add_row("GPU used (NVML)", figure_bytes(result.gpu.gpu_used_bytes))
    table.add_row("GPU allocator peak", figure_bytes(result.gpu.gpu_allocator_peak_bytes))
    budget = result.budget
    table.add_row("memory budget", f"{format_bytes(budget.memory_bytes)} ({budget.memory_source})")
    time_text = f"{format_seconds(budget.time_s)}"
    if budget.deadline_s is not None:
        time_text += f"; deadline {format_seconds(budget.deadline_s)}"
    table.add_row("time budget", time_text)
    return table


def ranks_table(result: EngramResult) -> Table | None:
    parts = result.layout.ranks
    if len(parts) <= 1:
        return None
    distinct = sorted({(p.heads, p.part_rows) for p in parts})
    table = Table(title="Per rank", title_justify="left")
    for name in ("rank", "heads", "rows per table", "bytes (all tables)"):
        table.add_column(name, justify="right")
    shown = parts if len(parts) <= MAX_RANK_ROWS else parts[: MAX_RANK_ROWS // 2] + parts[-MAX_RANK_ROWS // 2 :]
    for p in shown:
        table.add_row(
            str(p.rank),
            f"{p.first_head}..{p.first_head + p.heads - 1}",
            f"{p.part_rows:,}",
            format_bytes(p.table_bytes),
        )
    if len(distinct) > 1:
        table.caption = "uneven: the first ranks take one more head, and the first heads one more row"
    return table


def phase_table(result: EngramResult) -> Table | None:
    if not result.phases:
        return None
    table = Table(title="Phases (full tables)", title_justify="left")
    table.add_column("phase", style="bold")
    table.add_column("bytes", justify="right")
    table.add_column("time", justify="right")
    table.add_column("rate", justify="right")
    table.add_column("fit")
    for p in result.phases:
        rate = (
            _number(Figure(p.bytes / p.seconds.value / 1e9, projected=p.seconds.projected), ".2f", " GB/s")
            if p.seconds.value and p.name != "allocate"  # allocation maps address space; a rate means nothing
            else ""
        )
        how = projection_how(p.projection, p.name) if p.projection is not None else _fit(p.time_fit)
        table.add_row(p.name, format_bytes(p.bytes), _with_interval(p.seconds, p.projection), rate, how)
    if any(p.projection is not None for p in result.phases):
        table.caption = "projected time: point, then its interval (see the note on intervals)"
    return table


def _values(m: MethodResult) -> str:
    v = m.values
    if v is None:
        return "n/a"
    scale = "untouched" if m.name == "random-convert" else ",".join(str(x) for x in v.scale_values)
    spread = "" if v.weight_min is None or v.weight_max is None else f", {v.weight_min:g}..{v.weight_max:g}"
    return f"{v.weight_zero_share:.1%} zeros, {v.weight_distinct} distinct{spread}; scale {scale}"


def method_table(result: EngramResult) -> Table:
    table = Table(title="Fill methods (per rank)", title_justify="left")
    table.add_column("method", style="bold")
    table.add_column("as in")
    table.add_column("how")
    table.add_column("fill time", justify="right")
    table.add_column("rate", justify="right")
    table.add_column("% of memset", justify="right")
    table.add_column("start-up", justify="right")
    table.add_column("values (sample)")
    for m in result.methods:
        if m.mode == PLANNED:
            how = "measure" if m.fits_in_memory else "project"
        elif m.mode == PROJECTED:
            fitted = f"projected ({_fit(m.time_fit)})"
            how = projection_how(m.projection, m.name) if m.projection is not None else fitted
        else:
            how = f"measured, {timing_cell(m.timing)}" if len(m.timing.samples_s) > 1 else "measured"
        start = _seconds(m.startup_seconds)
        if m.over_deadline:
            start = f"[red]{start} > deadline[/]"
        extra = [t for t in (startup_interval_text(m.startup_interval), dominant_text(m)) if t]
        if extra:
            start += "\n" + "\n".join(extra)
        table.add_row(
            m.name,
            m.origin,
            how,
            _with_interval(m.seconds, m.projection),
            _number(m.gb_per_s, ".2f", " GB/s"),
            _percent(m.percent_of_floor),
            start,
            _values(m),
        )
    table.caption = (
        "start-up = allocation + first touch + fill (its interval, then its largest term); "
        "rate counts the bytes each method writes; % of memset: of the floor measured in this run"
    )
    return table


def memory_table(result: EngramResult) -> Table:
    table = Table(title="Memory per rank", title_justify="left")
    table.add_column("method", style="bold")
    table.add_column("needs (tables + scratch)", justify="right")
    table.add_column("peak scratch", justify="right")
    table.add_column("fits here")
    table.add_column("peak RSS", justify="right")
    table.add_column("RSS vs need")
    for m in result.methods:
        fits = "yes" if m.fits_in_memory else f"[red]no[/] (budget {format_bytes(result.budget.memory_bytes)})"
        fit = m.memory_fit
        ratio = f"x{fit.slope:.3f} over {fit.points} samples (R² {fit.r_squared:.3f})" if fit else ""
        table.add_row(
            m.name,
            format_bytes(m.needed_bytes),
            format_bytes(m.peak_scratch_bytes),
            fits,
            figure_bytes(m.peak_rss_bytes),
            ratio,
        )
    return table


def samples_table(result: EngramResult) -> Table | None:
    projected = [m for m in result.methods if m.samples]
    phases = [p for p in result.phases if p.samples]
    if not projected:
        return None
    table = Table(title="Samples behind the projections (measured)", title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("rows per table")
    table.add_column("median time (rounds)")
    for name, points in [(m.name, m.samples) for m in projected] + [(p.name, p.samples) for p in phases]:
        table.add_row(
            name,
            ", ".join(f"{p.part_rows:,}" for p in points),
            ", ".join(
                format_seconds(p.seconds) + (f" ({len(p.readings_s)})" if len(p.readings_s) > 1 else "") for p in points
            ),
        )
    return table


def render_engram(results: Results, console: Console) -> None:
    result = results.engram
    assert result is not None
    console.print(layout_table(result))
    if results.ranks:  # a multi-rank run: every rank's figures side by side instead of rank 0's alone
        from dummyprof.reports.ranks_terminal import render_ranks

        render_ranks(results, console)
        for note in result.plan_notes:
            console.print(f"note (rank 0): {note}", style="dim")
        return
    ranks = ranks_table(result)
    if ranks is not None:
        console.print(ranks)
    phases = phase_table(result)
    if phases is not None:
        console.print(phases)
    console.print(method_table(result))
    console.print(memory_table(result))
    samples = samples_table(result)
    if samples is not None:
        console.print(samples)
    for m in result.methods:
        if m.reason and m.mode != PLANNED:
            console.print(
                f"{m.name}: {m.mode} because it {m.reason}"
                if m.reason.startswith("does")
                else f"{m.name}: {m.mode}: {m.reason}",
                style="dim",
            )
        elif m.mode == PLANNED:
            console.print(f"{m.name}: {m.reason}", style="dim")
    bound = generator_bound_line(result.methods, result.floor_method)
    if bound is not None:
        console.print(f"roofline: {bound}")
    if any(m.projection is not None for m in result.methods):
        console.print(
            "note: intervals are 95% prediction intervals from the line's residuals, or, where the line was "
            "too poor to use, the fastest to slowest per-byte reading of any sample; no projection is faster "
            "than this run's memset floor (first touch: nor than its own fastest sample)",
            style="dim",
        )
    for group in result.sample_groups:
        if group.rows:
            console.print(f"note: {sample_group_note(group, result.layout.part_rows)}", style="dim")
    for note in result.plan_notes:
        console.print(f"note: {note}", style="dim")
    if result.run_peak_rss_bytes is not None:
        console.print(
            f"peak RSS of this run: {format_bytes(result.run_peak_rss_bytes)} "
            f"(memory budget {format_bytes(result.budget.memory_bytes)})",
            style="dim",
        )
