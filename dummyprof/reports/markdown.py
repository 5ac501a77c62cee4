"""Markdown rendering (e.g. for a CI step summary)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dummyprof.reports.audit_markdown import audit_markdown
from dummyprof.reports.engram_markdown import engram_markdown
from dummyprof.reports.format import figure_bytes, format_bytes, rate, timing_cell
from dummyprof.reports.gate_markdown import baseline_markdown, gate_markdown
from dummyprof.reports.inspect_markdown import inspect_markdown
from dummyprof.results.session import Results

MarkdownRenderer = Callable[[Results], list[str]]


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_right: Sequence[int] = ()) -> list[str]:
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |"]
    lines.append("| " + " | ".join("---:" if i in align_right else "---" for i in range(len(header))) + " |")
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def _compare(results: Results) -> list[str]:
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


RENDERERS: dict[str, MarkdownRenderer] = {"compare": _compare, "gate": gate_markdown, "baseline": baseline_markdown}
RENDERERS.update(audit=audit_markdown, inspect=inspect_markdown)
RENDERERS["engram"] = engram_markdown


def render_markdown(results: Results) -> str:
    env = results.environment
    lines = [f"## dummyprof {results.command}", ""]
    renderer = RENDERERS.get(results.command)
    lines += renderer(results) if renderer else [f"_no Markdown renderer for {results.command!r}_"]
    lines += ["", f"{results.summary}" if results.summary else ""]
    lines += [
        "",
        f"<sub>dummyprof {results.dummyprof_version}, torch {env.torch_version}, {env.device} ({env.device_name}), "
        f"{env.cpu_count} CPUs, {results.created_at}</sub>",
    ]
    for notice in results.notices:
        lines.append(f"> notice: {notice}")
    return "\n".join(lines).rstrip() + "\n"
