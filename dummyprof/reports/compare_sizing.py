"""Terminal rendering of how big the model was for this machine: exact counts, projected fills, calibration."""

from __future__ import annotations

from rich.table import Table

from dummyprof.reports.format import format_bytes, format_seconds, timing_cell
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
        lines.append(
            f"--repeat auto: {result.repeat} measured rounds; {AUTO_STOPS.get(result.auto_stop, result.auto_stop)}"
        )
    return lines


def projection_table(result: CompareResult, *, measured: bool) -> Table:
    title = "Strategies (times and memory projected for the full model)" if not measured else "Projected vs measured"
    table = Table(title=title, title_justify="left")
    table.add_column("strategy", style="bold")
    table.add_column("init")
    table.add_column("projected time [fastest–slowest]", justify="right", no_wrap=True)
    if measured:
        table.add_column("measured median [min–max]", justify="right")
    table.add_column("memset floor", justify="right")
    table.add_column("walk (meta)", justify="right")
    if not measured:
        table.add_column(f"speedup vs {result.baseline_strategy}", justify="right")
        table.add_column("visits", justify="right")
        table.add_column("redundant", justify="right")
        table.add_column("max visits/tensor", justify="right")
        table.add_column("bytes written", justify="right")
    table.add_column("projected peak RSS", justify="right")
    for s in result.strategies:
        p = s.projection
        if p is None:
            continue
        cell = f"{format_seconds(p.seconds)} [{format_seconds(p.low_s)}–{format_seconds(p.high_s)}]"
        if p.floor_bound:
            cell += " (floor)"
        row = [s.name, s.initializer, cell]
        if measured:
            row.append(timing_cell(s.timing))
        row += [format_seconds(p.floor_s), format_seconds(p.walk_s)]
        if not measured:
            speedup = result.speedup(s.name)
            row += [
                f"{speedup:.2f}x" if speedup is not None else "n/a",
                f"{s.visits:,}",
                f"[red]{s.redundant_visits:,}[/]" if s.redundant_visits else "0",
                str(s.max_visits),
                format_bytes(s.bytes_written),
            ]
        row.append(format_bytes(p.peak_rss_bytes))
        table.add_row(*row)
    return table


def calibration_table(result: CompareResult) -> Table | None:
    size = result.size
    if not size.calibration:
        return None
    table = Table(title="Calibration fills (fresh tensors, real initializer, this run)", title_justify="left")
    table.add_column("initializer")
    table.add_column("rule")
    table.add_column("dtype")
    table.add_column("sizes", justify="right")
    table.add_column("trials", justify="right")
    table.add_column("rate (fit, median per size)", justify="right")
    table.add_column("R²", justify="right")
    table.add_column("tiny fill", justify="right")
    for c in size.calibration:

        def rate(slope: float) -> str:
            return f"{1 / slope / 1e9:.2f} GB/s" if slope > 0 else "n/a"

        sizes = f"{format_bytes(c.sizes_bytes[0])}–{format_bytes(c.sizes_bytes[-1])}" if c.sizes_bytes else "-"
        table.add_row(
            c.initializer,
            c.rule,
            c.dtype,
            sizes,
            str(sum(len(s) for s in c.samples_s)),
            rate(c.fit.slope),
            f"{c.fit.r_squared:.3f}",
            format_seconds(c.small_call_s),
        )
    return table


def calibration_line(result: CompareResult) -> str | None:
    size = result.size
    if not size.calibration or size.memset_bytes_per_s is None:
        return None
    return (
        f"memset floor {size.memset_bytes_per_s / 1e9:.2f} GB/s (fill_ on touched memory, this run); "
        f"calibration took {format_seconds(size.calibration_s)}, "
        f"meta build and counting {format_seconds(size.counting_s)}"
    )
