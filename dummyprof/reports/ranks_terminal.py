"""Terminal (Rich) rendering of a multi-rank run: a row per rank, the critical path, contention, nodes.

Sized for 80 columns (issue #13): the per-rank times get a column per phase, split into as many tables
as the width needs. The ``*_rows`` helpers and headers are the Markdown reporter's (one wide table each).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dummyprof.reports.format import figure_bytes, format_bytes, format_seconds
from dummyprof.reports.narrow import (
    PROJECTED_MARK,
    PROJECTED_NOTE,
    column_groups,
    narrow_table,
    number_columns,
    projected,
    rank_ranges,
    text_column,
)
from dummyprof.reports.tables.to_terminal import styled
from dummyprof.results.common import Figure
from dummyprof.results.ranks import Contention, NodeMemory, PhaseCritical, RankRecord, RanksAggregate
from dummyprof.results.session import Results


def seconds(figure: Figure) -> str:
    if figure.value is None:
        return "n/a"
    text = format_seconds(figure.value)
    return f"{text} (projected)" if figure.projected else text


def reserved(rec: RankRecord) -> str:
    if rec.reserved_measured_bytes.value is not None:
        return f"{figure_bytes(rec.reserved_measured_bytes)} (measured)"
    return f"{format_bytes(rec.reserved_bytes)} (computed)"


def rank_rows(records: list[RankRecord]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the per-rank table (shared with the Markdown reporter)."""
    methods = [f.method for f in records[0].fills] if records else []
    header = ["rank", "host", "local", "rows", "bytes", "reserved", "allocate", "first touch"]
    header += [f"fill {m}" for m in methods] + ["peak RSS"]
    rows = []
    for rec in records:
        row = [
            f"{rec.rank}/{rec.world_size}",
            rec.host,
            f"{rec.local_rank}/{rec.local_world_size}",
            f"{rec.part_rows:,}",
            format_bytes(rec.table_bytes),
            reserved(rec),
            seconds(rec.allocate_s),
            seconds(rec.first_touch_s),
        ]
        row += [seconds(f.seconds) for f in rec.fills]
        row.append(format_bytes(rec.peak_rss_bytes) if rec.peak_rss_bytes is not None else "n/a")
        rows.append(row)
    return header, rows


def critical_rows(agg: RanksAggregate) -> list[list[str]]:
    def row(p: PhaseCritical) -> list[str]:
        rank = str(p.slowest_rank) if p.slowest_rank is not None else "n/a"
        return [p.phase, rank, seconds(p.seconds), seconds(p.fastest_seconds)]

    return [row(p) for p in agg.critical_path]


def contention_rows(agg: RanksAggregate, records: list[RankRecord]) -> list[list[str]]:
    def row(c: Contention) -> list[str]:
        if c.ratio.value is None:
            return [c.method, "", "", "", f"not checked: {c.unavailable}" if c.unavailable else "n/a"]
        per_rank = ", ".join(
            f"r{r.rank} x{(r.fill(c.method).together_s.value or 0) / (r.fill(c.method).alone_s.value or 1):.2f}"
            for r in records
        )
        return [c.method, seconds(c.alone_s), seconds(c.together_s), f"x{c.ratio.value:.2f}", per_rank]

    return [row(c) for c in agg.contention]


def node_rows(agg: RanksAggregate) -> list[list[str]]:
    def row(n: NodeMemory) -> list[str]:
        worst = max(n.needed_bytes, key=lambda k: n.needed_bytes[k]) if n.needed_bytes else ""
        holds = (
            "yes, every method" if all(n.fits.values()) else "no: " + ", ".join(k for k, ok in n.fits.items() if not ok)
        )
        peak = format_bytes(n.peak_rss_sum_bytes) if n.peak_rss_sum_bytes is not None else "n/a"
        return [
            n.host,
            ",".join(str(r) for r in n.ranks),
            format_bytes(n.table_bytes),
            f"{format_bytes(n.needed_bytes.get(worst, 0))} ({worst})" if worst else "n/a",
            format_bytes(n.available_bytes),
            holds,
            peak,
        ]

    return [row(n) for n in agg.nodes]


CRITICAL_HEADER = ["phase", "slowest rank", "its time", "fastest rank's time"]
CONTENTION_HEADER = ["method", "alone (slowest rank)", "together (slowest rank)", "together / alone", "per rank"]
NODE_HEADER = ["host", "ranks", "tables", "largest need (all ranks)", "available", "holds all at once", "sum of peaks"]
CONTENTION_CAPTION = (
    "the same shards filled one rank at a time (the others waiting at a barrier), then by every rank at once"
)


def _time(figure: Figure) -> str:
    """A time for the terminal: ``~1.23 s`` when projected (the Markdown tables write '(projected)')."""
    return projected(format_seconds(figure.value), figure) if figure.value is not None else "n/a"


def _short_method(name: str) -> str:
    """A fill method's name as a column header: ``random-convert`` -> ``convert`` (the caption says so)."""
    return name.removeprefix("random-")


def _reserved_cells(records: list[RankRecord]) -> tuple[list[str], str]:
    """Reserved bytes per rank, measured where the allocator said, and the caption that says which."""
    measured = [r.reserved_measured_bytes.value is not None for r in records]
    cells = [
        format_bytes(r.reserved_measured_bytes.value) if m else format_bytes(r.reserved_bytes)
        for r, m in zip(records, measured, strict=True)
    ]
    if all(measured):
        return cells, "reserved: measured (read back from the allocator)"
    if not any(measured):
        return cells, "reserved: computed (the backing's rounding)"
    cells = [c + "*" if m else c for c, m in zip(cells, measured, strict=True)]
    return cells, "reserved: computed; *: measured (read back from the allocator)"


def rank_table(records: list[RankRecord]) -> Table:
    """Who each rank is and what it holds (its times are in the next tables)."""
    table = narrow_table(f"Ranks ({len(records)})")
    number_columns(table, "rank")
    text_column(table, "host")
    number_columns(table, "local", "rows", "bytes", "reserved", "peak RSS")
    reserved, caption = _reserved_cells(records)
    for rec, res in zip(records, reserved, strict=True):
        table.add_row(
            f"{rec.rank}/{rec.world_size}",
            rec.host,
            f"{rec.local_rank}/{rec.local_world_size}",
            f"{rec.part_rows:,}",
            format_bytes(rec.table_bytes),
            res,
            format_bytes(rec.peak_rss_bytes) if rec.peak_rss_bytes is not None else "n/a",
        )
    table.caption = caption  # one short line
    return table


def threads_note(records: list[RankRecord]) -> str | None:
    """How many torch threads each rank ran with, and who chose that: said once (None in older files)."""
    if not records or not records[0].threads:
        return None
    first = records[0]
    if any(
        (r.threads, r.threads_source, r.cores) != (first.threads, first.threads_source, first.cores) for r in records
    ):
        return "threads: " + " ".join(f"r{r.rank}:{r.threads}" for r in records)
    why = {
        "cores": f"{first.cores} cores / {first.local_world_size} ranks",
        "OMP_NUM_THREADS": "OMP_NUM_THREADS",
    }.get(first.threads_source, "torch's default")
    return f"threads: {first.threads} per rank ({why})"


def time_tables(records: list[RankRecord], width: int) -> tuple[list[Table], str]:
    """Each phase's time on each rank: a column per phase, split into as many tables as the width needs."""
    methods = [f.method for f in records[0].fills] if records else []
    headers = ["allocate", "first touch"] + [_short_method(m) for m in methods]
    columns = [[_time(r.allocate_s) for r in records], [_time(r.first_touch_s) for r in records]]
    for m in methods:
        columns.append([_time(r.fill(m).seconds) if m in {f.method for f in r.fills} else "n/a" for r in records])
    keys = [f"{r.rank}/{r.world_size}" for r in records]
    widths = [max(len(h), *(len(c) for c in col)) for h, col in zip(headers, columns, strict=True)]
    groups = column_groups(width, max(len("rank"), *(len(k) for k in keys)), widths)
    tables = []
    for n, group in enumerate(groups):
        part = f" ({n + 1}/{len(groups)})" if len(groups) > 1 else ""
        table = narrow_table(f"Times per rank{part}")
        number_columns(table, "rank", *(headers[i] for i in group))
        for row, key in enumerate(keys):
            table.add_row(key, *(columns[i][row] for i in group))
        tables.append(table)
    note = "times per rank: every rank in step (a barrier per phase); the other columns are fill methods"
    shortened = [_short_method(m) for m in methods if _short_method(m) != m]
    if shortened:
        note += f" ({', '.join(shortened)}: random-*)"
    if any(cell.startswith(PROJECTED_MARK) for column in columns for cell in column):
        note += f"; {PROJECTED_NOTE}"
    return tables, note


def critical_table(agg: RanksAggregate) -> Table:
    table = narrow_table("Critical path (slowest rank per phase)")
    table.add_column(CRITICAL_HEADER[0], no_wrap=True)
    number_columns(table, *CRITICAL_HEADER[1:])
    for p in agg.critical_path:
        rank = str(p.slowest_rank) if p.slowest_rank is not None else "n/a"
        table.add_row(p.phase, rank, _time(p.seconds), _time(p.fastest_seconds))
    return table


def contention_table(agg: RanksAggregate, records: list[RankRecord]) -> Table:
    """Alone against together, for the slowest rank; every rank's own ratio folds onto as many lines as it needs."""
    table = narrow_table("Contention (fill time of the slowest rank)")
    table.add_column("method", no_wrap=True)
    number_columns(table, "alone", "together", "ratio")
    text_column(table, "per rank")
    for c in agg.contention:
        if c.ratio.value is None:
            table.add_row(c.method, "", "", "", f"not checked: {c.unavailable}" if c.unavailable else "n/a")
            continue
        per_rank = " ".join(
            f"r{r.rank}:x{(r.fill(c.method).together_s.value or 0) / (r.fill(c.method).alone_s.value or 1):.2f}"
            for r in records
        )
        table.add_row(c.method, _time(c.alone_s), _time(c.together_s), f"x{c.ratio.value:.2f}", per_rank)
    return table


def node_table(agg: RanksAggregate) -> tuple[Table, str]:
    """Memory per host; which method needs most goes in the note when it is the same on every host."""
    worst = {n.host: max(n.needed_bytes, key=lambda k: n.needed_bytes[k]) if n.needed_bytes else "" for n in agg.nodes}
    shared = len(set(worst.values())) == 1 and "" not in worst.values()
    table = narrow_table("Host memory per node")
    text_column(table, "host")
    number_columns(table, "ranks", "tables")
    text_column(table, "largest need", justify="right")
    number_columns(table, "available", "peak RSS")
    text_column(table, "all fit")
    for n in agg.nodes:
        method = worst[n.host]
        need = format_bytes(n.needed_bytes.get(method, 0)) if method else "n/a"
        short = [k for k, ok in n.fits.items() if not ok]
        table.add_row(
            n.host,
            rank_ranges(n.ranks),
            format_bytes(n.table_bytes),
            need if shared or not method else f"{need} ({method})",
            format_bytes(n.available_bytes),
            format_bytes(n.peak_rss_sum_bytes) if n.peak_rss_sum_bytes is not None else "n/a",
            styled("no", "bad") if short else "yes",
        )
    whose = f"{next(iter(worst.values()))}'s, " if shared else ""
    note = (
        f"largest need: {whose}all the host's ranks together (tables + scratch); peak RSS: the sum of the "
        "ranks' peaks (an upper bound); all fit: every method fits at once"
    )
    for n in agg.nodes:  # the methods a host cannot hold: words, so under the table, not in a cell
        short = [k for k, ok in n.fits.items() if not ok]
        if short:
            note += f"; {n.host} cannot hold {', '.join(short)}"
    return table, note


def render_ranks(results: Results, console: Console) -> None:
    agg = results.ranks_aggregate
    records = sorted(results.ranks, key=lambda r: r.rank)
    console.print(rank_table(records))
    threads = threads_note(records)
    if threads is not None:
        console.print(threads, style="dim")
    tables, note = time_tables(records, console.width)
    for table in tables:
        console.print(table)
    console.print(note, style="dim")
    if agg is None:
        return
    console.print(critical_table(agg))
    console.print(contention_table(agg, records))
    console.print(f"contention: {CONTENTION_CAPTION}; ratio: together / alone", style="dim")
    table, note = node_table(agg)
    console.print(table)
    console.print(note, style="dim")
    for note in agg.notes:
        console.print(f"note: {note}", style="yellow")
