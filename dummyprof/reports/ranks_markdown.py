"""Markdown rendering of a multi-rank run (the same tables as the terminal)."""

from __future__ import annotations

from dummyprof.reports.ranks_terminal import (
    CONTENTION_CAPTION,
    CONTENTION_HEADER,
    CRITICAL_HEADER,
    NODE_HEADER,
    contention_rows,
    critical_rows,
    node_rows,
    rank_rows,
    threads_note,
)
from dummyprof.reports.tables.to_markdown import md_table
from dummyprof.results.session import Results


def ranks_markdown(results: Results) -> list[str]:
    records = sorted(results.ranks, key=lambda r: r.rank)
    header, rows = rank_rows(records)
    lines = [f"**Ranks ({len(records)}):** every rank in step (barrier per phase)", ""]
    lines += md_table(header, rows, align_right=range(3, len(header)))
    threads = threads_note(records)
    if threads is not None:
        lines += ["", threads]
    agg = results.ranks_aggregate
    if agg is None:
        return lines
    lines += ["", "**Critical path** (slowest rank per phase)", ""]
    lines += md_table(CRITICAL_HEADER, critical_rows(agg), align_right=(1, 2, 3))
    lines += ["", f"**Contention:** {CONTENTION_CAPTION}", ""]
    lines += md_table(CONTENTION_HEADER, contention_rows(agg, records), align_right=(1, 2, 3))
    lines += ["", "**Host memory per node** (sum of peaks: an upper bound)", ""]
    lines += md_table(NODE_HEADER, node_rows(agg), align_right=(2, 3, 4, 6))
    lines += [f"> note: {note}" for note in agg.notes]
    return lines
