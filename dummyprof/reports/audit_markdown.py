"""Markdown rendering of ``audit`` results (e.g. a CI step summary)."""

from __future__ import annotations

from dummyprof.reports.audit_text import finding_text
from dummyprof.reports.format import format_bytes
from dummyprof.reports.tables.escape import markdown_text
from dummyprof.reports.tables.to_markdown import md_table
from dummyprof.results.session import Results


def audit_markdown(results: Results) -> list[str]:
    result = results.audit
    assert result is not None
    lines = [
        "**Model:** "
        + markdown_text(
            f"{result.model.description or result.model.source}: {result.model.tensors:,} tensors, "
            f"{format_bytes(result.model.bytes)}"
        ),
        "",
    ]
    lines += md_table(
        ["filler", "kind", "initializer", "writes", "tensors written", "written more than once", "bytes written"],
        [
            [
                f.name,
                f.kind,
                f.initializer or "own",
                f"{f.writes:,}",
                f"{f.tensors_written:,}",
                f"{f.repeated_tensors:,}",
                format_bytes(f.bytes_written),
            ]
            for f in result.fillers
        ],
        align_right=range(3, 7),
    )
    if result.findings:
        lines += ["", f"**Findings:** {len(result.failing)} failing", ""]
        lines += md_table(
            ["kind", "detail"],
            [
                [f.kind + (" (ignored)" if f.ignored else "") + (" (note)" if f.informational else ""), finding_text(f)]
                for f in result.findings
            ],
        )
    return lines
