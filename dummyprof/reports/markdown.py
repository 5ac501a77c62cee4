"""The Markdown reporter (e.g. for a CI step summary): a heading, the command's section, summary and footer."""

from __future__ import annotations

from collections.abc import Callable

from dummyprof.reports.audit_markdown import audit_markdown
from dummyprof.reports.compare_markdown import compare_markdown
from dummyprof.reports.engram_markdown import engram_markdown
from dummyprof.reports.gate_markdown import baseline_markdown, gate_markdown
from dummyprof.reports.inspect_markdown import inspect_markdown
from dummyprof.reports.markdown_table import md_table
from dummyprof.reports.notices import notices
from dummyprof.reports.reporter import RenderOptions, Reporter, never
from dummyprof.reports.summary import summary_line
from dummyprof.reports.sweep_markdown import sweep_markdown
from dummyprof.results.session import Results

__all__ = ["REPORTER", "SECTIONS", "md_table", "render_markdown"]

MarkdownSection = Callable[[Results], list[str]]

# One section per Results kind; a kind listed here is a kind the Markdown reporter renders.
SECTIONS: dict[str, MarkdownSection] = {
    "compare": compare_markdown,
    "gate": gate_markdown,
    "baseline": baseline_markdown,
    "audit": audit_markdown,
    "inspect": inspect_markdown,
    "sweep": sweep_markdown,
    "engram": engram_markdown,
}


def render_markdown(results: Results) -> str:
    env = results.environment
    lines = [f"## dummyprof {results.command}", ""]
    section = SECTIONS.get(results.command)
    lines += section(results) if section else [f"_no Markdown renderer for {results.command!r}_"]
    lines += ["", summary_line(results)]
    lines += [
        "",
        f"<sub>dummyprof {results.dummyprof_version}, torch {env.torch_version}, {env.device} ({env.device_name}), "
        f"{env.cpu_count} CPUs, {results.created_at}"
        + (f", random-fast engine: {env.random_fast_engine}" if env.random_fast_engine else "")
        + "</sub>",
    ]
    for notice in notices(results):
        lines.append(f"> notice: {notice}")
    return "\n".join(lines).rstrip() + "\n"


def render(results: Results, options: RenderOptions) -> str:
    return render_markdown(results)


REPORTER = Reporter(
    "markdown", ".md", frozenset(SECTIONS), render, "tables for a CI step summary or a pull request", never
)  # no per-tensor rows: the compare section is the strategies' tables
