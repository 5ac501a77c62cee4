"""A multi-rank run as blocks: a row per rank, the times per rank (a column per phase), critical path, nodes; its -q."""

from __future__ import annotations

from dummyprof.reports.format import PROJECTED_MARK, estimate_cell, rank_ranges
from dummyprof.reports.messages import say
from dummyprof.reports.summary import Clause, fit
from dummyprof.reports.tables.model import BAD, DIM, NUMBER, TEXT, WARN, WORD, Block, Cell, Column, Field, Line, Table
from dummyprof.results.ranks import NodeMemory, RankRecord, RanksAggregate
from dummyprof.results.session import Results
from dummyprof.units import format_bytes

CONTENTION_CAPTION = (
    "the same shards filled one rank at a time (the others waiting at a barrier), then by every rank at once"
)


def _short_method(name: str) -> str:
    """A fill method's name as a column header: ``random-convert`` -> ``convert`` (the note says so)."""
    return name.removeprefix("random-")


def _reserved_cells(records: list[RankRecord]) -> tuple[list[str], str]:
    """Reserved bytes per rank, measured where the allocator said, and the note that says which."""
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
    """Who each rank is and what it holds (its times are in the next table)."""
    reserved, note = _reserved_cells(records)
    fields: list[Field] = [
        (("rank", NUMBER), lambda rr: f"{rr[0].rank}/{rr[0].world_size}"),
        (("host", TEXT), lambda rr: rr[0].host),
        (("local", NUMBER), lambda rr: f"{rr[0].local_rank}/{rr[0].local_world_size}"),
        (("rows", NUMBER), lambda rr: f"{rr[0].part_rows:,}"),
        (("bytes", NUMBER), lambda rr: format_bytes(rr[0].table_bytes)),
        (("reserved", NUMBER), lambda rr: rr[1]),
        (("peak RSS", NUMBER), lambda rr: format_bytes(rr[0].peak_rss_bytes)),
    ]
    return Table.over(f"Ranks ({len(records)})", fields, zip(records, reserved, strict=True), notes=[note])


def threads_note(records: list[RankRecord]) -> str | None:
    """How many torch threads each rank ran with, and who chose that: said once (None when not recorded)."""
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


def time_table(records: list[RankRecord]) -> Table:
    """Each phase's time on each rank: a column per phase (a narrow terminal splits the table)."""
    methods = [f.method for f in records[0].fills] if records else []
    columns = [("rank", NUMBER), ("allocate", NUMBER), ("first touch", NUMBER)]
    columns += [(_short_method(m), NUMBER) for m in methods]
    rows = []
    for r in records:
        filled = {f.method for f in r.fills}
        fills = [estimate_cell(r.fill(m).time) if m in filled else "n/a" for m in methods]
        rows.append([f"{r.rank}/{r.world_size}", estimate_cell(r.allocate_s), estimate_cell(r.first_touch_s), *fills])
    note = "times per rank: every rank in step (a barrier per phase); the other columns are fill methods"
    shortened = [_short_method(m) for m in methods if _short_method(m) != m]
    if shortened:
        note += f" ({', '.join(shortened)}: random-*)"
    if any(cell.startswith(PROJECTED_MARK) for row in rows for cell in row):
        note += f"; {say('fill.projected-mark')}"
    return Table.of("Times per rank", columns, rows, notes=[note])


def critical_table(agg: RanksAggregate) -> Table:
    fields: list[Field] = [
        (("phase", WORD), lambda p: p.phase),
        (("slowest rank", NUMBER), lambda p: str(p.slowest_rank) if p.slowest_rank is not None else "n/a"),
        (("its time", NUMBER), lambda p: estimate_cell(p.seconds)),
        (("fastest rank's time", NUMBER), lambda p: estimate_cell(p.fastest_seconds)),
    ]
    return Table.over("Critical path (slowest rank per phase)", fields, agg.critical_path)


def contention_table(agg: RanksAggregate, records: list[RankRecord]) -> Table:
    """Alone against together, for the slowest rank; every rank's own ratio folds onto as many lines as it needs."""
    ratio = Column("ratio", NUMBER, legend="together / alone")
    columns: list[tuple[str, str] | Column] = [("method", WORD), ("alone", NUMBER), ("together", NUMBER), ratio]
    columns.append(("per rank", TEXT))
    table = Table.of("Contention (fill time of the slowest rank)", columns, [])
    table.notes.append(f"contention: {CONTENTION_CAPTION}")
    for c in agg.contention:
        if c.ratio.value is None:
            table.add(c.method, "", "", "", f"not checked: {c.unavailable}" if c.unavailable else "n/a")
            continue
        per_rank = " ".join(
            f"r{r.rank}:x{(r.fill(c.method).together_s.value or 0) / (r.fill(c.method).alone_s.value or 1):.2f}"
            for r in records
        )
        table.add(c.method, estimate_cell(c.alone_s), estimate_cell(c.together_s), f"x{c.ratio.value:.2f}", per_rank)
    return table


def node_table(agg: RanksAggregate) -> Table:
    """Memory per host; which method needs most goes in the note when it is the same on every host."""
    worst = {n.host: max(n.needed_bytes, key=lambda k: n.needed_bytes[k]) if n.needed_bytes else "" for n in agg.nodes}
    shared = len(set(worst.values())) == 1 and "" not in worst.values()
    short = {n.host: [k for k, ok in n.fits.items() if not ok] for n in agg.nodes}

    def need(n: NodeMemory) -> str:
        method = worst[n.host]
        need = format_bytes(n.needed_bytes.get(method, 0)) if method else "n/a"
        return need if shared or not method else f"{need} ({method})"

    fields: list[Field] = [
        (("host", TEXT), lambda n: n.host),
        (("ranks", NUMBER), lambda n: rank_ranges(n.ranks)),
        (("tables", NUMBER), lambda n: format_bytes(n.table_bytes)),
        (("largest need", NUMBER), need),
        (("available", NUMBER), lambda n: format_bytes(n.available_bytes)),
        (("peak RSS", NUMBER), lambda n: format_bytes(n.peak_rss_sum_bytes)),
        (("all fit", TEXT), lambda n: Cell("no", BAD) if short[n.host] else "yes"),
    ]
    whose = f"{next(iter(worst.values()))}'s, " if shared else ""
    note = (
        f"largest need: {whose}all the host's ranks together (tables + scratch); peak RSS: the sum of the "
        "ranks' peaks (an upper bound); all fit: every method fits at once"
    )
    # the methods a host cannot hold: words, so under the table, not in a cell
    cannot = "".join(f"; {host} cannot hold {', '.join(methods)}" for host, methods in short.items() if methods)
    return Table.over("Host memory per node", fields, agg.nodes, notes=[note + cannot])


def ranks_blocks(results: Results) -> list[Block]:
    agg = results.ranks_aggregate
    records = sorted(results.ranks, key=lambda r: r.rank)
    threads = threads_note(records)
    blocks: list[Block] = [rank_table(records), *([Line(threads, DIM)] if threads else []), time_table(records)]
    if agg is None:
        return blocks
    blocks += [critical_table(agg), contention_table(agg, records), node_table(agg)]
    return blocks + [Line(f"note: {note}", WARN) for note in agg.notes]


def ranks_summary(agg: RanksAggregate) -> str:
    """A multi-rank run: ranks and hosts, the range of contention ratios, the hosts that cannot hold their ranks.
    Where that is too long the byte counts give way first, then the hosts short of memory (how many stays), then
    the contention's methods, then the backend."""
    hosts = len(agg.nodes)
    clauses: list[Clause | str] = [f"{agg.world_size} ranks on {hosts} host{'s' if hosts != 1 else ''}"]
    clauses.append(Clause(f" ({agg.backend})", 3))
    checked = [c for c in agg.contention if c.ratio.value is not None]
    if checked:
        low = min(checked, key=lambda c: c.ratio.value or 0.0)
        high = max(checked, key=lambda c: c.ratio.value or 0.0)
        clauses += [f"; contention x{low.ratio.value:.2f}", Clause(f" ({low.method})", 2)]
        if f"{high.ratio.value:.2f}" != f"{low.ratio.value:.2f}":
            clauses += [f" to x{high.ratio.value:.2f}", Clause(f" ({high.method})", 2)]
    short = [(node, [name for name, ok in node.fits.items() if not ok]) for node in agg.nodes]
    short = [(node, missing) for node, missing in short if missing]
    for node, missing in short:
        need = f"{format_bytes(max(node.needed_bytes[n] for n in missing))} > {format_bytes(node.available_bytes)}"
        clauses.append(Clause(f"; {node.host} cannot hold {', '.join(missing)}", 1, group="hosts"))
        clauses.append(Clause(f" on all {len(node.ranks)} ranks ({need})", 0))
    clauses.append(Clause(f"; {len(short)} host{'s' if len(short) != 1 else ''} short of memory", stands_for="hosts"))
    return fit(clauses)
