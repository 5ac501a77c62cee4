"""Markdown rendering of ``engram`` results (e.g. for a CI step summary)."""

from __future__ import annotations

from dummyprof.reports.engram_words import dominant_text, generator_bound_line, interval_text, startup_interval_text
from dummyprof.reports.figure_words import unavailable_text
from dummyprof.reports.format import figure_bytes, format_bytes, format_seconds
from dummyprof.reports.tables.escape import markdown_text
from dummyprof.reports.tables.model import BAD, Cell
from dummyprof.reports.tables.to_markdown import md_table
from dummyprof.results.common import Figure
from dummyprof.results.engram import FASTER_THAN_FLOOR
from dummyprof.results.session import Results


def _cell(figure: Figure, text: str) -> str:
    if figure.unavailable == FASTER_THAN_FLOOR:
        return "over!"
    if figure.value is None:
        return "n/a"
    return f"{text} (projected)" if figure.projected else text


def engram_markdown(results: Results) -> list[str]:
    result = results.engram
    assert result is not None
    lay = result.layout
    lines = [
        "**Engram:** "
        + markdown_text(
            f"{lay.tables} x {lay.rows:,} rows x dim {lay.dim}, {lay.heads} heads over "
            f"tp {lay.tp_size} x dp {lay.dp_size}; rank {lay.rank}: {lay.part_rows:,} rows, "
            f"{format_bytes(lay.table_bytes_per_rank)} requested, {format_bytes(lay.reserved_bytes_per_rank)} reserved "
            f"({result.backing.used}); budget {format_bytes(result.budget.memory_bytes)}"
        ),
        "",
    ]
    if results.ranks:  # a multi-rank run: every rank's figures side by side
        from dummyprof.reports.ranks_markdown import ranks_markdown

        return lines + ranks_markdown(results)
    rows = []
    for m in result.methods:
        fill = _cell(m.seconds, format_seconds(m.seconds.value))
        if m.projection is not None:
            fill += f" [{interval_text(m.projection.low_s, m.projection.high_s)}]"
        start = _cell(m.startup_seconds, format_seconds(m.startup_seconds.value))
        extra = ", ".join(t for t in (startup_interval_text(m.startup_interval), dominant_text(m)) if t)
        if extra:
            start += f" [{extra}]"
        rows.append(
            [
                m.name,
                m.mode,
                fill,
                _cell(m.gb_per_s, f"{m.gb_per_s.value or 0:.2f} GB/s"),
                _cell(m.percent_of_floor, f"{m.percent_of_floor.value or 0:.0f}%"),
                Cell(start + " over deadline", BAD) if m.over_deadline else start,
                format_bytes(m.needed_bytes),
                "yes" if m.fits_in_memory else "no",
                figure_bytes(m.peak_rss_bytes),
            ]
        )
    lines += md_table(
        ["method", "mode", "fill time", "rate", "% of memset", "start-up", "needs", "fits", "peak RSS"],
        rows,
        align_right=(2, 3, 4, 5, 6, 8),
    )
    if any(m.percent_of_floor.unavailable == FASTER_THAN_FLOOR for m in result.methods):
        lines += ["", markdown_text(unavailable_text(FASTER_THAN_FLOOR))]
    bound = generator_bound_line(result.methods, result.floor_method)
    if bound is not None:
        lines += ["", markdown_text(f"Roofline: {bound}.")]
    return lines
