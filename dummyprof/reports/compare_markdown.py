"""Markdown rendering of ``compare`` results (e.g. a CI step summary)."""

from __future__ import annotations

from dummyprof.reports.format import figure_bytes, format_bytes, rate, timing_cell
from dummyprof.reports.markdown_table import md_table
from dummyprof.results.session import Results


def compare_markdown(results: Results) -> list[str]:
    result = results.compare
    assert result is not None
    lines = [
        f"**Model:** {result.model.description} on `{result.model.device}`: "
        f"{result.model.tensors:,} tensors, {format_bytes(result.model.bytes)}",
        "",
    ]
    rows = []
    for s in result.strategies:
        speedup = result.speedup(s.name)
        rows.append(
            [
                s.name,
                timing_cell(s.timing),
                f"{speedup:.2f}x" if speedup is not None else "n/a",
                f"{s.visits:,}",
                f"{s.redundant_visits:,}",
                str(s.max_visits),
                format_bytes(s.bytes_written),
                rate(s.bytes_written, s.timing.median),
                format_bytes(s.memory.rss_peak_bytes),
                figure_bytes(s.memory.gpu_used_bytes),
            ]
        )
    lines += md_table(
        [
            "strategy",
            "time median [min–max]",
            f"speedup vs {result.baseline_strategy}",
            "visits",
            "redundant",
            "max visits/tensor",
            "bytes written",
            "rate",
            "peak RSS",
            "GPU used",
        ],
        rows,
        align_right=range(1, 10),
    )
    return lines
