"""Terminal (Rich) rendering of a multi-rank run: a row per rank, the critical path, contention, nodes."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dummyprof.reports.format import figure_bytes, format_bytes, format_seconds
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


def _table(title: str, header: list[str], rows: list[list[str]], caption: str = "") -> Table:
    table = Table(title=title, title_justify="left", caption=caption or None)
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def render_ranks(results: Results, console: Console) -> None:
    agg = results.ranks_aggregate
    records = sorted(results.ranks, key=lambda r: r.rank)
    header, rows = rank_rows(records)
    console.print(_table(f"Ranks ({len(records)})", header, rows, "times: every rank in step (barrier per phase)"))
    if agg is None:
        return
    console.print(_table("Critical path (slowest rank per phase)", CRITICAL_HEADER, critical_rows(agg)))
    console.print(_table("Contention", CONTENTION_HEADER, contention_rows(agg, records), CONTENTION_CAPTION))
    console.print(_table("Host memory per node", NODE_HEADER, node_rows(agg), "sum of peaks: an upper bound"))
    for note in agg.notes:
        console.print(f"note: {note}", style="yellow")
