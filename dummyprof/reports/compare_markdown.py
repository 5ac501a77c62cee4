"""Markdown rendering of ``compare`` results (e.g. a CI step summary)."""

from __future__ import annotations

from dummyprof.reports.compare_sizing import size_lines
from dummyprof.reports.compare_terminal import floor_share_text, floor_words, roofline_line
from dummyprof.reports.format import figure_bytes, format_bytes, format_seconds, rate, timing_cell
from dummyprof.reports.markdown_table import md_table
from dummyprof.reports.noise_words import interval_cell, noise_lines, speedup_cell, spread_cell
from dummyprof.results.session import Results


def compare_markdown(results: Results) -> list[str]:
    result = results.compare
    assert result is not None
    lines = [
        f"**Model:** {result.model.description} on `{result.model.device}`: "
        f"{result.model.tensors:,} tensors, {format_bytes(result.model.bytes)}",
        "",
    ]
    lines += [f"- {line}" for line in size_lines(result)]
    if lines[-1] != "":
        lines.append("")
    projected = result.size.mode == "projected"
    rows = []
    for s in result.strategies:
        p = s.projection
        if projected and p is not None:
            time = f"projected {format_seconds(p.seconds)} [{format_seconds(p.low_s)}–{format_seconds(p.high_s)}]"
            peak = f"projected {format_bytes(p.peak_rss_bytes)}"
        else:
            time, peak = timing_cell(s.timing), format_bytes(s.memory.rss_peak_bytes)
        rows.append(
            [
                s.name,
                time,
                spread_cell(s.timing),
                speedup_cell(result, s.name),
                interval_cell(result, s.name),
                f"{s.visits:,}",
                f"{s.redundant_visits:,}",
                str(s.max_visits),
                format_bytes(s.bytes_written),
                rate(s.bytes_written, s.seconds),
                floor_share_text(result, s.name),
                peak,
                figure_bytes(s.memory.gpu_used_bytes),
            ]
        )
    lines += md_table(
        [
            "strategy",
            "time median [min–max]",
            "CV",
            f"speedup vs {result.baseline_strategy}",
            "95% interval",
            "visits",
            "redundant",
            "max visits/tensor",
            "bytes written",
            "rate",
            "% of memset",
            "peak RSS",
            "GPU used",
        ],
        rows,
        align_right=range(1, 13),
    )
    floor = floor_words(result)
    if floor:
        lines += ["", f"% of memset: {floor}."]
    roofline = roofline_line(result)
    if roofline:
        lines += ["", f"> {roofline}"]
    warnings = noise_lines(result)
    if warnings:
        lines += ["", *[f"> {line}" for line in warnings]]
    return lines
